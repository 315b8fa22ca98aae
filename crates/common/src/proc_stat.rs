//! Fields of `/proc/PID/stat` (proc(5)).

/// What uzswap reads of a process's `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Its state (field 3): `R`, `S`, `D`, `T`, `t`, `Z` (a zombie), `X`
    /// (dead)…
    pub state: char,
    /// Its process group (field 5).
    pub pgrp: i32,
    /// When it started, in clock ticks since boot (field 22).
    pub start_ticks: u64,
    /// Threads of its process (field 20).
    pub threads: usize,
    /// Its resident set, in pages (field 24).
    pub rss_pages: u64,
    /// The CPU it last ran on (field 39).
    pub processor: usize,
}

/// Process (or thread) `pid`'s stat; `None` where it cannot be read (it is
/// gone) or parsed.
pub fn read(pid: u32) -> Option<ProcStat> {
    parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A `/proc/PID/stat` text. The command (field 2) is in parentheses and
/// may hold spaces and parentheses itself: the fields are counted from
/// the last `)`, where field 3 begins.
pub fn parse(text: &str) -> Option<ProcStat> {
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3).copied();
    Some(ProcStat {
        state: field(3)?.chars().next()?,
        pgrp: field(5)?.parse().ok()?,
        threads: field(20)?.parse().ok()?,
        start_ticks: field(22)?.parse().ok()?,
        rss_pages: field(24)?.parse().ok()?,
        processor: field(39)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_after_the_command() {
        // A command with a space and a parenthesis of its own.
        let line = "4242 (a b) c)) S 1 4000 4000 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 4 0 \
                    123456 10000000 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0";
        assert_eq!(
            parse(line),
            Some(ProcStat {
                state: 'S',
                pgrp: 4000,
                start_ticks: 123456,
                threads: 4,
                rss_pages: 2560,
                processor: 3,
            })
        );
        assert_eq!(parse("4242 (cut short) S 1"), None);
        assert_eq!(parse("no parenthesis"), None);
        let me = read(std::process::id()).expect("this process's stat");
        assert!(me.rss_pages > 0 && me.pgrp > 0 && me.threads >= 1, "{me:?}");
    }
}
