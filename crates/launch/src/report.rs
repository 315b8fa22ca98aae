//! The text form of a running program's counters: one `name value` line
//! each, like `/proc/vmstat`. The LD_PRELOAD library serves it on a Unix
//! socket (`RUN_DIR/PID.sock`) and writes it at exit (`STATS_DIR/PID.stats`);
//! `uzswap stats PID` and `uzswap run` read it back.

use crate::settings::env;
use std::path::PathBuf;

/// Renders `(name, value)` pairs, one per line.
pub fn render(fields: &[(String, u64)]) -> String {
    let mut s = String::new();
    for (name, value) in fields {
        s.push_str(name);
        s.push(' ');
        s.push_str(&value.to_string());
        s.push('\n');
    }
    s
}

/// Reads [`render`]'s form back; lines that are not `name number` are
/// skipped.
pub fn parse(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(' ')?;
            Some((name.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

/// The value of `name` in parsed fields, 0 when absent.
pub fn get(fields: &[(String, u64)], name: &str) -> u64 {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map_or(0, |(_, v)| *v)
}

/// Folder of the live-stats sockets: `$UZSWAP_RUN_DIR`, else
/// `/tmp/uzswap-UID`.
pub fn run_dir() -> PathBuf {
    match std::env::var_os(env::RUN_DIR) {
        Some(d) => PathBuf::from(d),
        None => {
            // SAFETY: getuid cannot fail and has no preconditions.
            let uid = unsafe { libc::getuid() };
            std::env::temp_dir().join(format!("uzswap-{uid}"))
        }
    }
}

/// The live-stats socket of process `pid`.
pub fn socket_path(pid: u32) -> PathBuf {
    run_dir().join(format!("{pid}.sock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let f = vec![("zswpout".to_string(), 12), ("pid".to_string(), 4242)];
        let text = render(&f);
        assert_eq!(text, "zswpout 12\npid 4242\n");
        assert_eq!(parse(&text), f);
        assert_eq!(get(&f, "pid"), 4242);
        assert_eq!(get(&f, "absent"), 0);
        assert_eq!(parse("garbage\nx y\nok 1\n"), vec![("ok".to_string(), 1)]);
    }
}
