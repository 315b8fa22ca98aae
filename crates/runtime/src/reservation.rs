//! Reservations: large `PROT_NONE` anonymous mappings the program commits
//! part by part, as the JVM's heap (`mmap(MAP_FIXED, RW)` over the
//! reservation) and V8's (`mprotect(RW)`) are.
//!
//! The reservation's address room comes from the region arena
//! ([`crate::arena::Arena::reserve_room`]: the syscall guard covers it),
//! and each committed part becomes a region made by
//! [`crate::Runtime::commit`]. The LD_PRELOAD library decides what each
//! call does; this file keeps the bookkeeping, as page ranges:
//!
//! * `live`: the reserved ranges the program holds (a partial `munmap`
//!   trims or splits one);
//! * `tainted`: parts that were plain writable memory at some time (a
//!   commit the runtime refused, a region handed back as plain memory by
//!   `mprotect`, `madvise` or `mremap`), whose bytes may not be zeros: an
//!   `mprotect(RW)` there is passed on, never turned into a fresh (zeroed)
//!   region. A `MAP_FIXED` mapping over a range replaces its bytes and
//!   clears the taint.
//!
//! The program's own view is the kernel's: a part not committed is
//! `PROT_NONE` (an access is `SIGSEGV`), a commit reads zeros, a decommit
//! drops the bytes, `munmap` makes the range inaccessible.

use std::collections::BTreeMap;
use std::ops::Range;

/// A set of disjoint address ranges: merged when they touch
/// ([`RangeSet::insert`]), or kept apart ([`RangeSet::insert_apart`], one
/// piece per reservation).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RangeSet {
    /// start → end.
    map: BTreeMap<usize, usize>,
}

impl RangeSet {
    /// Adds `r`, merging with the ranges it touches.
    pub fn insert(&mut self, r: Range<usize>) {
        if r.is_empty() {
            return;
        }
        let (mut lo, mut hi) = (r.start, r.end);
        let touching: Vec<(usize, usize)> = self
            .map
            .range(..=hi)
            .rev()
            .take_while(|(_, &e)| e >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.map.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.map.insert(lo, hi);
    }

    /// Adds `r` (overlapping nothing) as a piece of its own, even where it
    /// touches another.
    pub fn insert_apart(&mut self, r: Range<usize>) {
        if !r.is_empty() {
            self.map.insert(r.start, r.end);
        }
    }

    /// The piece holding `addr`.
    pub fn piece_at(&self, addr: usize) -> Option<Range<usize>> {
        self.map
            .range(..=addr)
            .next_back()
            .filter(|(_, &e)| e > addr)
            .map(|(&s, &e)| s..e)
    }

    /// Removes `r`, trimming or splitting the ranges it covers.
    pub fn remove(&mut self, r: Range<usize>) {
        if r.is_empty() {
            return;
        }
        let hit: Vec<(usize, usize)> = self.overlapping(r.clone()).collect();
        for (s, e) in hit {
            self.map.remove(&s);
            if s < r.start {
                self.map.insert(s, r.start);
            }
            if e > r.end {
                self.map.insert(r.end, e);
            }
        }
    }

    /// The ranges overlapping `r`, as `(start, end)`.
    pub fn overlapping(&self, r: Range<usize>) -> impl Iterator<Item = (usize, usize)> + '_ {
        let first = self
            .map
            .range(..=r.start)
            .next_back()
            .filter(|(_, &e)| e > r.start)
            .map(|(&s, _)| s)
            .unwrap_or(r.start);
        self.map
            .range(first..r.end)
            .filter(move |(_, &e)| e > r.start && !r.is_empty())
            .map(|(&s, &e)| (s, e))
    }

    pub fn overlaps(&self, r: Range<usize>) -> bool {
        self.overlapping(r).next().is_some()
    }

    /// Whether the set holds all of `r` (non-empty), in one range or in
    /// pieces that touch.
    pub fn covers(&self, r: Range<usize>) -> bool {
        let Some(first) = self.piece_at(r.start) else {
            return false;
        };
        let mut at = first.end;
        while at < r.end {
            match self.map.get(&at) {
                Some(&e) => at = e,
                None => return false,
            }
        }
        !r.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// The program's reservations.
#[derive(Debug, Default)]
pub struct Reservations {
    pub live: RangeSet,
    pub tainted: RangeSet,
}

impl Reservations {
    /// The parts of `[lo, hi)` (`grain`-aligned outward) that no live
    /// reservation touches any more: address room to give back to the
    /// arena, in whole grains.
    pub fn freed_grains(&self, r: Range<usize>, grain: usize) -> Vec<Range<usize>> {
        let lo = r.start / grain * grain;
        let hi = r.end.div_ceil(grain) * grain;
        let mut out: Vec<Range<usize>> = Vec::new();
        for g in (lo..hi).step_by(grain) {
            if self.live.overlaps(g..g + grain) {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.end == g => last.end = g + grain,
                _ => out.push(g..g + grain),
            }
        }
        out
    }

    /// The parts of `r` that `regions` (sorted `(start, end)` ranges) leave
    /// uncovered.
    pub fn gaps(r: Range<usize>, regions: &[(usize, usize)]) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut at = r.start;
        for &(s, e) in regions {
            if e <= at || s >= r.end {
                continue;
            }
            if s > at {
                out.push(at..s);
            }
            at = at.max(e);
        }
        if at < r.end {
            out.push(at..r.end);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_partial_unmap_frees_the_grains_no_reservation_touches() {
        let g = 0x10000;
        let mut r = Reservations::default();
        r.live.insert(0x100000..0x100000 + 8 * g);
        // The program trims the head (not grain aligned) and the tail.
        let head = 0x100000..0x100000 + 2 * g + 0x3000;
        r.live.remove(head.clone());
        assert_eq!(r.freed_grains(head, g), vec![0x100000..0x100000 + 2 * g]);
        let tail = 0x100000 + 6 * g..0x100000 + 8 * g;
        r.live.remove(tail.clone());
        assert_eq!(r.freed_grains(tail.clone(), g), vec![tail]);
        // The rest: its partial first grain is free now too.
        let rest = 0x100000 + 2 * g + 0x3000..0x100000 + 6 * g;
        r.live.remove(rest.clone());
        assert!(r.live.is_empty());
        assert_eq!(
            r.freed_grains(rest, g),
            vec![0x100000 + 2 * g..0x100000 + 6 * g]
        );
    }

    #[test]
    fn gaps_between_regions() {
        let regions = [(10, 20), (25, 30), (40, 50)];
        assert_eq!(
            Reservations::gaps(0..45, &regions),
            vec![0..10, 20..25, 30..40]
        );
        assert_eq!(
            Reservations::gaps(12..18, &regions),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(Reservations::gaps(50..60, &regions), vec![50..60]);
    }

    proptest! {
        /// The set against a bitmap: after any inserts and removes it
        /// holds exactly the addresses the bitmap does, and `covers`,
        /// `overlaps` agree with it.
        #[test]
        fn range_set_matches_a_bitmap(
            ops in proptest::collection::vec((any::<bool>(), 0usize..64, 0usize..16), 1..40),
            apart in any::<bool>(),
            probe in (0usize..64, 1usize..16),
        ) {
            let mut set = RangeSet::default();
            let mut bits = [false; 96];
            for (add, s, l) in ops {
                if add && apart {
                    // Apart: only into room the set leaves free.
                    if set.overlaps(s..s + l) {
                        continue;
                    }
                    set.insert_apart(s..s + l);
                } else if add {
                    set.insert(s..s + l);
                } else {
                    set.remove(s..s + l);
                }
                for b in &mut bits[s..s + l] {
                    *b = add;
                }
            }
            for (i, &b) in bits.iter().enumerate() {
                prop_assert_eq!(set.covers(i..i + 1), b, "address {}", i);
            }
            // Ranges are disjoint, and merged ones never adjacent.
            let v: Vec<(usize, usize)> = set.map.iter().map(|(&s, &e)| (s, e)).collect();
            for w in v.windows(2) {
                prop_assert!(w[0].1 <= w[1].0, "{:?}", v);
                prop_assert!(apart || w[0].1 < w[1].0, "{:?}", v);
            }
            for (i, &b) in bits.iter().enumerate() {
                prop_assert_eq!(set.piece_at(i).is_some(), b, "address {}", i);
            }
            let (s, l) = probe;
            let r = s..s + l;
            prop_assert_eq!(set.overlaps(r.clone()), bits[r.clone()].iter().any(|&b| b));
            prop_assert_eq!(set.covers(r.clone()), bits[r.clone()].iter().all(|&b| b));
        }
    }
}
