//! Whether pages swapped in from the swap file keep their slots (`Clean`
//! pages, [`crate::protocol`]). A kept slot saves the page's next eviction
//! its compression, store and write, if the program does not write the
//! page first; if it does, the write costs a write-protect fault of its
//! own (a userfaultfd round trip and a TLB flush) that the page would not
//! have raised otherwise. A program that reads what it swapped in (a scan,
//! a hash, a read-back) gains; one that reads and then writes most of it
//! (a sort, a garbage collector compacting) loses: `java-heap` took 14 s
//! with every such slot kept against 8 s without, writing 215k of the 321k
//! pages it kept to save 99k evictions. And a kept page evicted clean is
//! read from the file again at its next refault: under the budget split
//! a page that refaults within the largest pool's reach keeps no slot
//! whatever the governor says (`StoreSide::near_refault`).
//!
//! The governor measures instead of guessing, like aging's
//! ([`crate::aging`]). While on, each epoch of [`EPOCH_PAGES`] pages kept
//! is judged by the share of kept pages written: more than one in
//! [`WRITTEN_SHARE`] turns keeping off. While off, it tries again after
//! [`OFF_LOADS`] swap-ins, so that it notices a change of phase, and
//! twice as long after each try that fails, up to [`MAX_BACKOFF`] times:
//! a try keeps a whole epoch, and tries at a fixed pace kept a quarter of
//! the pages `sort` swapped in (192k of 607k, 27% of them written, each
//! write a write-protect fault whose TLB flush interrupts the program's
//! other CPU). Policy only, and pure: [`KeepCleanGovernor`] takes counter
//! readings and returns a decision; the protocol that the model checks is
//! the same either way.

/// Counter readings ([`crate::RuntimeStats`]' totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub kept_clean: u64,
    pub clean_written: u64,
}

/// Pages kept in an epoch that is judged.
pub(crate) const EPOCH_PAGES: u64 = 2048;
/// Keeping stays on while at most one kept page in this many is written.
/// Break-even, measured: a kept page's write costs a write-protect fault
/// (about 25 µs with its TLB flush), a clean eviction saves about 6 µs of
/// compression, store and writeback, so keeping pays below about one page
/// in five written; `java-heap`, 16% written, was 5% slower with it on.
pub(crate) const WRITTEN_SHARE: u64 = 8;
/// Swap-ins (loads that could have kept their pages) before keeping is
/// tried again, the first time.
pub(crate) const OFF_LOADS: u64 = 8192;
/// Each try that fails doubles the wait before the next, up to this many
/// times [`OFF_LOADS`] (262k swap-ins: a few seconds of a program that
/// pages hard).
pub(crate) const MAX_BACKOFF: u64 = 32;

/// Decides, epoch by epoch, whether swap-ins keep clean pages' slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeepCleanGovernor {
    keeping: bool,
    /// Readings at the start of the epoch under way.
    start: Reading,
    /// Loads since keeping went off.
    loads_off: u64,
    /// Loads to wait, while off, before the next try: [`OFF_LOADS`]
    /// after the first epoch that turns keeping off, twice as many after
    /// each try that fails.
    wait: u64,
}

impl KeepCleanGovernor {
    /// Keeping on, the first epoch starting at `now`.
    pub fn new(now: Reading) -> Self {
        Self {
            keeping: true,
            start: now,
            loads_off: 0,
            wait: OFF_LOADS / 2,
        }
    }

    /// Called by each swap-in that could keep its pages' slots: ends the
    /// epoch under way if it is over, and returns whether this one keeps.
    pub fn on_load(&mut self, now: Reading) -> bool {
        if self.keeping {
            let kept = now.kept_clean.saturating_sub(self.start.kept_clean);
            if kept >= EPOCH_PAGES {
                let written = now.clean_written.saturating_sub(self.start.clean_written);
                self.keeping = written * WRITTEN_SHARE <= kept;
                self.wait = if self.keeping {
                    OFF_LOADS / 2
                } else {
                    (self.wait * 2).min(OFF_LOADS * MAX_BACKOFF)
                };
                self.start = now;
                self.loads_off = 0;
            }
        } else {
            self.loads_off += 1;
            if self.loads_off >= self.wait {
                self.keeping = true;
                self.start = now;
            }
        }
        self.keeping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A governor at its start, and the counters at zero.
    fn fresh() -> (KeepCleanGovernor, Reading) {
        (
            KeepCleanGovernor::new(Reading::default()),
            Reading::default(),
        )
    }

    /// Drives `g` through `loads` swap-ins of `pages` pages each, of which
    /// `written_share` (per mille) are written soon after when kept;
    /// returns the pages kept.
    fn drive(
        g: &mut KeepCleanGovernor,
        now: &mut Reading,
        loads: u64,
        written_per_mille: u64,
    ) -> u64 {
        let mut kept = 0;
        let mut carry = 0;
        for _ in 0..loads {
            if g.on_load(*now) {
                now.kept_clean += 4;
                kept += 4;
                carry += 4 * written_per_mille;
                now.clean_written += carry / 1000;
                carry %= 1000;
            }
        }
        kept
    }

    #[test]
    fn keeping_stays_on_for_pages_read_and_not_written() {
        let (mut g, mut now) = fresh();
        let kept = drive(&mut g, &mut now, 100_000, 0);
        assert_eq!(kept, 400_000);
        assert!(g.keeping);
    }

    #[test]
    fn keeping_goes_off_where_most_kept_pages_are_written() {
        let (mut g, mut now) = fresh();
        let loads = 100_000;
        let kept = drive(&mut g, &mut now, loads, 670);
        // One epoch at the start, and one per OFF_LOADS after it.
        let epochs = 1 + loads / OFF_LOADS;
        assert!(kept <= epochs * (EPOCH_PAGES + 4), "{kept} pages kept");
        assert!(kept >= EPOCH_PAGES, "it tried: {kept}");
    }

    #[test]
    fn keeping_comes_back_after_a_change_of_phase() {
        let (mut g, mut now) = fresh();
        drive(&mut g, &mut now, 20_000, 900);
        assert!(!g.keeping || g.loads_off == 0);
        drive(&mut g, &mut now, 2 * OFF_LOADS, 0);
        assert!(g.keeping);
    }

    #[test]
    fn tries_that_fail_come_ever_less_often() {
        let (mut g, mut now) = fresh();
        let loads = 1_000_000;
        let kept = drive(&mut g, &mut now, loads, 300);
        // Waits of 8k, 16k, … 262k loads, then 262k: 7 tries in 1M loads
        // (122 at a fixed 8k), each keeping one epoch, besides the first.
        let epochs = 10;
        assert!(kept <= epochs * (EPOCH_PAGES + 4), "{kept} pages kept");
        assert!(kept >= epochs / 2 * EPOCH_PAGES, "it kept trying: {kept}");
    }

    #[test]
    fn after_a_long_written_phase_keeping_comes_back_within_the_longest_wait() {
        let (mut g, mut now) = fresh();
        drive(&mut g, &mut now, 2_000_000, 900);
        assert_eq!(g.wait, OFF_LOADS * MAX_BACKOFF, "backed off to the most");
        drive(&mut g, &mut now, OFF_LOADS * MAX_BACKOFF + EPOCH_PAGES, 0);
        assert!(g.keeping, "a read-only phase turns keeping back on");
        // A try that succeeds resets the wait.
        assert_eq!(g.wait, OFF_LOADS / 2);
        drive(&mut g, &mut now, 2 * EPOCH_PAGES, 900);
        assert!(!g.keeping);
        drive(&mut g, &mut now, OFF_LOADS + 1, 0);
        assert!(g.keeping, "back on after the first wait, not the longest");
    }

    #[test]
    fn an_eighth_written_is_the_edge() {
        let (mut g, mut now) = fresh();
        let loads = EPOCH_PAGES / 4;
        drive(&mut g, &mut now, loads, 125);
        assert!(g.on_load(now), "an eighth written keeps it on");
        let (mut g, mut now) = fresh();
        drive(&mut g, &mut now, loads, 160);
        assert!(!g.on_load(now), "more than an eighth turns it off");
    }
}
