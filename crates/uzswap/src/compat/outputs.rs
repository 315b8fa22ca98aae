//! Comparing two runs of a case (stdout, then each output file by
//! sha256), and finding the line of a program's stderr that says what
//! went wrong.

use super::proc;
use std::path::Path;

/// sha256 of a file, through coreutils' `sha256sum`.
pub(super) fn sha256(path: &Path) -> Result<String, String> {
    if !path.is_file() {
        return Err(format!(
            "{} missing",
            path.file_name().map_or(path, Path::new).display()
        ));
    }
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .map_err(|e| format!("cannot run sha256sum: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "sha256sum {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

pub(super) fn first_different_line(a: &[u8], b: &[u8]) -> usize {
    let mut la = a.split(|&c| c == b'\n');
    let mut lb = b.split(|&c| c == b'\n');
    let mut n = 1;
    while la.next() == lb.next() {
        n += 1;
    }
    n
}

/// Words that mark the line of a program's stderr that says what went
/// wrong (matched case-insensitively).
const ERROR_MARKS: [&str; 8] = [
    "error",
    "exception",
    "bad address",
    "efault",
    "killed",
    "signal",
    "failed",
    "segmentation",
];

/// The line of `lines` that says what went wrong: the first with an error
/// word (later ones tend to be consequences: "confused by earlier
/// errors"), else the last non-empty one.
fn error_line<'a>(lines: impl Iterator<Item = &'a str>) -> String {
    let lines: Vec<&str> = lines.map(str::trim).filter(|l| !l.is_empty()).collect();
    let marked = lines.iter().find(|l| {
        let lower = l.to_lowercase();
        ERROR_MARKS.iter().any(|m| lower.contains(m))
    });
    marked.or(lines.last()).unwrap_or(&"").to_string()
}

/// What went wrong, from a plain run's stderr.
pub(super) fn plain_error(stderr: &str) -> String {
    error_line(stderr.lines())
}

/// What went wrong, from `uzswap run`'s stderr: the program's own lines
/// (before uzswap's closing "exited with" report, without uzswap's opening
/// lines), or uzswap's error when it failed itself.
pub(super) fn program_error(stderr: &str) -> String {
    let end = stderr
        .lines()
        .position(|l| l.starts_with("uzswap: \"") && l.contains("\" exited with "))
        .unwrap_or(usize::MAX);
    error_line(
        stderr
            .lines()
            .take(end)
            .filter(|l| !l.starts_with("uzswap: running ") && !l.starts_with("uzswap: pid ")),
    )
}

/// "exit 1: OSError: [Errno 14] Bad address", shortened to fit a cell.
pub(super) fn failure(code: i32, message: &str) -> String {
    let what = proc::describe_code(code);
    if message.is_empty() {
        return what;
    }
    const MAX: usize = 90;
    let message = match message.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &message[..i]),
        None => message.to_string(),
    };
    format!("{what}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_error_is_found_in_uzswap_run_output() {
        let stderr = "uzswap: running \"python3 x.py\" with a 32M limit\nuzswap: pid 12\n\
                      Traceback (most recent call last):\nOSError: [Errno 14] Bad address\n\n\
                      uzswap: \"python3 x.py\" exited with 1 after 0.04s\n┌──┐\n";
        assert_eq!(program_error(stderr), "OSError: [Errno 14] Bad address");
        let gcc =
            "cc1: error: gen.c: Bad address\n(null):0: confused by earlier errors, bailing out\n";
        assert_eq!(plain_error(gcc), "cc1: error: gen.c: Bad address");
        assert_eq!(plain_error("first\nlast\n\n"), "last");
        assert_eq!(
            program_error("uzswap: cannot run x: No such file\n"),
            "uzswap: cannot run x: No such file"
        );
        assert_eq!(failure(139, ""), "killed by SIGSEGV");
        assert_eq!(failure(1, "boom"), "exit 1: boom");
    }

    #[test]
    fn the_first_different_line_is_counted_from_one() {
        assert_eq!(first_different_line(b"a\nb\nc", b"a\nb\nd"), 3);
    }
}
