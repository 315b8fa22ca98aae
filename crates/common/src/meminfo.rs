//! Fields of `/proc/meminfo`.

/// Field `name` of `/proc/meminfo` (`MemAvailable`, `Zswap`, …) in bytes;
/// `None` where the file or the field cannot be read.
pub fn bytes(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    field_bytes(&text, name)
}

/// Field `name` of a `/proc/meminfo` text, in bytes.
fn field_bytes(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib << 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_bytes_by_their_whole_name() {
        let text = "MemTotal:       24000000 kB\nMemAvailable:    1000 kB\nZswap:              0 kB\nZswapped:        8 kB\n";
        assert_eq!(field_bytes(text, "MemAvailable"), Some(1000 << 10));
        assert_eq!(field_bytes(text, "Zswap"), Some(0));
        assert_eq!(field_bytes(text, "Zswapped"), Some(8 << 10));
        assert_eq!(field_bytes(text, "Mem"), None);
        assert!(bytes("MemTotal").is_some_and(|b| b > 0));
    }
}
