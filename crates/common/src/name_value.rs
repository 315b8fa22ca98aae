//! The `name value` text form of counters, one pair per line, as in
//! `/proc/vmstat`, `memory.stat` and uzswap's per-process reports.

/// A line that is not `name number`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// 1-based line number.
    pub line: usize,
    pub text: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {:?} is not `name number`",
            self.line, self.text
        )
    }
}

impl std::error::Error for Malformed {}

/// Reads every `name number` line (name and number separated by blanks);
/// empty lines are skipped, anything else is an error.
pub fn parse(text: &str) -> Result<Vec<(String, u64)>, Malformed> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut words = l.split_whitespace();
            match (words.next(), words.next().map(str::parse), words.next()) {
                (Some(name), Some(Ok(value)), None) => Ok((name.to_string(), value)),
                _ => Err(Malformed {
                    line: i + 1,
                    text: l.to_string(),
                }),
            }
        })
        .collect()
}

/// The value of `name`, if there is one.
pub fn get(fields: &[(String, u64)], name: &str) -> Option<u64> {
    fields.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_bad_ones_are_named() {
        let f = parse("zswpout 12\n\npswpin\t3\n").unwrap();
        assert_eq!(f, vec![("zswpout".into(), 12), ("pswpin".into(), 3)]);
        assert_eq!(get(&f, "pswpin"), Some(3));
        assert_eq!(get(&f, "absent"), None);
        let e = parse("ok 1\nx y\n").unwrap_err();
        assert_eq!((e.line, e.text.as_str()), (2, "x y"));
        assert!(parse("a 1 2\n").is_err());
        assert!(parse("a -1\n").is_err());
    }
}
