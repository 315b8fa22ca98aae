//! Decimal numbers in ASCII without allocation: for code that may not
//! allocate (signal handlers, a child between `fork` and `exec`) and
//! writes or reads pids and thread ids in `/proc` paths and cgroup files.

/// `n` in decimal, in the tail of `buf`.
pub fn format(n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// A number of ASCII decimal digits only (at most 19, so it fits).
pub fn parse(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_back() {
        let mut buf = [0u8; 20];
        for n in [0, 7, 10, 907, 4_194_304, u64::MAX] {
            let s = format(n, &mut buf);
            assert_eq!(s, n.to_string().as_bytes());
            if s.len() <= 19 {
                assert_eq!(parse(s), Some(n));
            }
        }
        assert_eq!(parse(b"."), None);
        assert_eq!(parse(b""), None);
        assert_eq!(parse(b"12a"), None);
        assert_eq!(parse(b"-1"), None);
    }
}
