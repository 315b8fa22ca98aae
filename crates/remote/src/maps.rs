//! The mappings of another process that uzswap pages: private, anonymous,
//! readable and writable (the heap, `mmap(MAP_ANONYMOUS)` memory such as
//! Go's arenas, thread stacks), from `/proc/PID/maps`. The main stack,
//! the vDSO and file mappings are left alone.

/// `start-end` of a `/proc/PID/maps` line.
pub fn parse_range(line: &str) -> Option<(usize, usize)> {
    let range = line.split_whitespace().next()?;
    let (a, b) = range.split_once('-')?;
    Some((
        usize::from_str_radix(a, 16).ok()?,
        usize::from_str_radix(b, 16).ok()?,
    ))
}

/// Whether a maps line is memory uzswap pages.
pub fn is_pageable(line: &str) -> bool {
    let mut fields = line.split_whitespace();
    let (_range, perms, _off, _dev, inode) = (
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
        fields.next(),
    );
    let name = fields.next().unwrap_or("");
    perms == Some("rw-p") && inode == Some("0") && (name.is_empty() || name == "[heap]")
}

/// The pageable ranges of a maps text, neighbours merged, in address
/// order.
pub fn pageable(maps: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in maps
        .lines()
        .filter(|l| is_pageable(l))
        .filter_map(parse_range)
    {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

/// The pageable ranges of process `pid` now.
pub fn read(pid: i32) -> std::io::Result<Vec<(usize, usize)>> {
    Ok(pageable(&std::fs::read_to_string(format!(
        "/proc/{pid}/maps"
    ))?))
}

/// The parts of `want` that `have` (both sorted, disjoint) does not cover.
pub fn uncovered(want: &[(usize, usize)], have: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for &(mut s, e) in want {
        for &(hs, he) in have {
            if he <= s || hs >= e {
                continue;
            }
            if hs > s {
                out.push((s, hs));
            }
            s = s.max(he);
            if s >= e {
                break;
            }
        }
        if s < e {
            out.push((s, e));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
00400000-00500000 r-xp 00000000 08:01 123 /usr/bin/prog
00600000-00700000 rw-p 00000000 00:00 0 [heap]
00700000-00800000 rw-p 00000000 00:00 0
7f0000000000-7f0000100000 rw-p 00000000 00:00 0
7f0000100000-7f0000200000 rw-p 00001000 08:01 124 /usr/lib/libc.so
7f0000200000-7f0000300000 ---p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0 [stack]
7ffc00100000-7ffc00102000 r-xp 00000000 00:00 0 [vdso]";

    #[test]
    fn only_private_anonymous_writable_memory_is_pageable() {
        assert_eq!(
            pageable(MAPS),
            vec![(0x600000, 0x800000), (0x7f0000000000, 0x7f0000100000)]
        );
    }

    #[test]
    fn uncovered_parts_are_the_gaps() {
        let want = [(0, 100), (200, 300)];
        assert_eq!(uncovered(&want, &[]), want.to_vec());
        assert_eq!(
            uncovered(&want, &[(10, 20), (50, 250)]),
            vec![(0, 10), (20, 50), (250, 300)]
        );
        assert_eq!(uncovered(&want, &[(0, 300)]), vec![]);
    }
}
