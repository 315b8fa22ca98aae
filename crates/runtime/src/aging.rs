//! Whether write tracking pays for itself. An aging pass write-protects the
//! resident pages so that reclaim can spare the ones written since; every
//! first write after a pass then costs a write-protect fault. Tracking is
//! worth it only while it saves more swap-ins (of written pages reclaim
//! would otherwise have evicted) than the faults it raises. Under random
//! access over a working set far above the limit it saves nothing: any
//! eviction order misses as often, and the write-protect faults come on
//! top (sort, xz: 588k of them for 1.47M swap-ins).
//!
//! The governor measures instead of guessing. Time is cut into epochs of
//! at least one aging interval and [`MIN_EVICTIONS`] evictions; each epoch
//! runs with aging on or off. For each mode it keeps a moving average of
//! what it costs per page evicted: swap-ins plus write-protect faults
//! (all of them aging's: those that come in an epoch without passes, from
//! pages armed before it, go to the last epoch with passes), plus the
//! passes' own work, each page they write-protect counted as
//! [`1 / PROTECTS_PER_FAULT`](PROTECTS_PER_FAULT) of a fault and each
//! write-protect call (a TLB flush) as [`FAULTS_PER_PROTECT_CALL`]. It runs the
//! cheaper mode, and tries the other one epoch in [`EXPLORE_EVERY`], so
//! that it notices when the program changes; while those tries confirm
//! the choice they come half as often, down to one in
//! [`MAX_EXPLORE_EVERY`] (a try costs what the worse mode costs: numpy's
//! passes, a quarter of its epochs, were 5% of its CPU). Where aging saves nothing
//! (a stream written once and read back: no write-protect faults, as many
//! swap-ins either way) the passes' work decides, and aging goes off. Only
//! the frequency of aging passes changes: what a pass does, and the
//! protocol that the model checks, stay as they are. Policy only, and
//! pure: [`AgingGovernor`] takes counter readings and returns a decision.

/// Counter readings ([`crate::RuntimeStats`]' totals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub swapin_faults: u64,
    pub wp_faults: u64,
    pub evicted_pages: u64,
    /// Pages the aging passes write-protected.
    pub pages_protected: u64,
    /// The write-protect calls they took.
    pub protect_calls: u64,
    /// Eviction's own write-protect calls made by the reclaim thread, for
    /// victims aging left unprotected: what aging saves besides swap-ins.
    /// Each interrupts the program's CPU; a faulting thread's own
    /// (direct reclaim) flushes that CPU alone, cheaper than the fault it
    /// would be weighed as, and is left out.
    pub reclaimer_protect_calls: u64,
}

/// Fewest evictions an epoch needs to say anything.
pub(crate) const MIN_EVICTIONS: u64 = 256;
/// Every this many epochs, the mode that looks worse runs once; each such
/// epoch that confirms the choice doubles the gap to the next, up to
/// [`MAX_EXPLORE_EVERY`], and one that reverses it brings the gap back.
pub(crate) const EXPLORE_EVERY: u64 = 4;
/// The longest gap between two exploring epochs (1.6 s of epochs of the
/// default 100 ms aging interval): how long a program whose phase changed
/// may run in the mode that became the worse one.
pub(crate) const MAX_EXPLORE_EVERY: u64 = 16;
/// Pages an aging pass write-protects for the cost of one fault. A fault is
/// a userfaultfd round trip and a swap-in, 5–10 µs on the test machine; a
/// page write-protected by `UFFDIO_WRITEPROTECT` of a range is about
/// 0.15 µs (perf of `uzswap-usemem -n 2 --read-back 512M` under 512M:
/// 0.25 s of `change_pte_range` for 1.75M pages protected).
pub(crate) const PROTECTS_PER_FAULT: f64 = 64.0;
/// What one write-protect call costs beyond its pages, in faults: it
/// flushes the TLB of every CPU running the program, by inter-processor
/// interrupt, about 20 µs on a 2-vCPU VM (perf of randpage), more than a
/// fault. Counted as one. A pass makes one call per region (or per
/// stretch between pinned pages), so this weighs little.
pub(crate) const FAULTS_PER_PROTECT_CALL: f64 = 1.0;
/// Weight of an epoch's cost in its mode's moving average.
const WEIGHT: f64 = 0.25;

/// Decides, epoch by epoch, whether aging passes run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AgingGovernor {
    /// Faults per eviction, moving average, with aging on.
    on_cost: Option<f64>,
    /// The same with aging off.
    off_cost: Option<f64>,
    /// The last epoch with aging on: its evictions, and the weight its cost
    /// carries in `on_cost` (1 for the first, [`WEIGHT`] after), so that
    /// the write-protect faults its pass raises later are added to it.
    last_on: Option<(u64, f64)>,
    /// Epochs judged so far.
    epochs: u64,
    /// The mode of the epoch under way.
    aging: bool,
    /// The epoch under way runs the mode that looked worse; the mode that
    /// looked better when it began.
    exploring: Option<bool>,
    /// Epochs between two exploring epochs, now.
    explore_every: u64,
    /// The epoch count at which the next exploring epoch runs.
    next_explore: u64,
    /// Readings at the start of the epoch under way.
    start: Reading,
    /// A pass ran in the epoch under way.
    passed: bool,
}

impl AgingGovernor {
    /// Aging off, the first epoch starting at `now`: a pass write-protects
    /// every resident page, and a program that writes what it reads (a
    /// Python heap: reference counts) takes a fault for each page it then
    /// touches (176k write-protect faults in the first two passes of a
    /// Python service holding 500 MB, most of its wait on uzswap), so
    /// tracking must show what it saves before it runs. The second epoch
    /// tries it.
    pub fn new(now: Reading) -> Self {
        Self {
            on_cost: None,
            off_cost: None,
            last_on: None,
            epochs: 0,
            aging: false,
            exploring: None,
            explore_every: EXPLORE_EVERY,
            next_explore: EXPLORE_EVERY,
            start: now,
            passed: false,
        }
    }

    /// Called when an aging pass is due: ends the epoch under way if it
    /// has seen enough evictions, and returns whether this pass runs.
    pub fn due(&mut self, now: Reading) -> bool {
        let evicted = now.evicted_pages.saturating_sub(self.start.evicted_pages);
        if evicted < MIN_EVICTIONS {
            // One pass an epoch: a pass taken before reclaim evicted
            // anything again informs no eviction, and a long pass stalls
            // the reclaim thread, so few evictions follow (randpage's
            // epochs of aging ran two passes of 35k calls each).
            let run = self.aging && !self.passed;
            self.passed |= run;
            return run;
        }
        let swapins = now.swapin_faults.saturating_sub(self.start.swapin_faults);
        let wp_faults = now.wp_faults.saturating_sub(self.start.wp_faults);
        // Only pages a pass armed take write-protect faults, and they stay
        // armed until written or evicted, epochs later (randpage: most of
        // a pass's faults come after its epoch). An epoch without passes
        // owes its write-protect faults to the last one with them.
        let faults = if self.aging {
            swapins + wp_faults
        } else {
            self.charge_last_pass(wp_faults);
            swapins
        };
        let protected = now
            .pages_protected
            .saturating_sub(self.start.pages_protected);
        // Every write-protect call that interrupts the program's CPU
        // counts: the passes', and the eviction's own for the victims they
        // left unarmed where the reclaim thread makes them.
        let evict_calls = now
            .reclaimer_protect_calls
            .saturating_sub(self.start.reclaimer_protect_calls);
        let calls = now.protect_calls.saturating_sub(self.start.protect_calls) + evict_calls;
        let cost = (faults as f64
            + protected as f64 / PROTECTS_PER_FAULT
            + calls as f64 * FAULTS_PER_PROTECT_CALL)
            / evicted as f64;
        let average = if self.aging {
            &mut self.on_cost
        } else {
            &mut self.off_cost
        };
        let weight = if average.is_some() { WEIGHT } else { 1.0 };
        *average = Some(average.map_or(cost, |a| a + WEIGHT * (cost - a)));
        if self.aging {
            self.last_on = Some((evicted, weight));
        }
        self.epochs += 1;
        self.start = now;
        let on_is_cheaper = match (self.on_cost, self.off_cost) {
            (Some(on), Some(off)) => on <= off,
            // Each mode once before any choice.
            (Some(_), None) => false,
            (None, _) => true,
        };
        if let Some(chosen) = self.exploring.take() {
            // The try confirms the choice if it cost at least what the
            // chosen mode costs on average, and the choice stands.
            let chosen_cost = if chosen { self.on_cost } else { self.off_cost };
            let confirmed = chosen == on_is_cheaper && chosen_cost.is_some_and(|c| cost >= c);
            self.explore_every = if confirmed {
                (2 * self.explore_every).min(MAX_EXPLORE_EVERY)
            } else {
                EXPLORE_EVERY
            };
        }
        let explore = self.epochs >= self.next_explore;
        if explore {
            self.next_explore = self.epochs + self.explore_every;
            self.exploring = Some(on_is_cheaper);
        }
        self.aging = on_is_cheaper != explore;
        self.passed = self.aging;
        self.aging
    }

    /// Adds `wp_faults`, raised after the last epoch with aging on by the
    /// pages its passes armed, to that epoch's cost in the average.
    fn charge_last_pass(&mut self, wp_faults: u64) {
        if let (Some(on), Some((evicted, weight))) = (self.on_cost.as_mut(), self.last_on) {
            *on += weight * wp_faults as f64 / evicted as f64;
        }
    }

    /// Whether the epoch under way runs aging passes.
    pub fn aging(&self) -> bool {
        self.aging
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives `g` for `epochs` epochs of 1000 evictions whose faults per
    /// eviction are `cost(aging)`; returns how many epochs ran aging.
    fn drive(g: &mut AgingGovernor, epochs: usize, cost: impl Fn(bool) -> (u64, u64)) -> usize {
        drive_with_passes(g, epochs, 0, cost)
    }

    /// [`drive`], with `protected` pages write-protected by the passes of
    /// each epoch that ran aging, in runs of 64 pages.
    fn drive_with_passes(
        g: &mut AgingGovernor,
        epochs: usize,
        protected: u64,
        cost: impl Fn(bool) -> (u64, u64),
    ) -> usize {
        drive_with_calls(g, epochs, protected, protected.div_ceil(64), cost)
    }

    /// [`drive_with_passes`], the passes of an epoch taking `calls`
    /// write-protect calls.
    fn drive_with_calls(
        g: &mut AgingGovernor,
        epochs: usize,
        protected: u64,
        calls: u64,
        cost: impl Fn(bool) -> (u64, u64),
    ) -> usize {
        let mut now = g.start;
        let mut on = 0;
        for _ in 0..epochs {
            let (swapins, wp) = cost(g.aging());
            on += usize::from(g.aging());
            if g.aging() {
                now.pages_protected += protected;
                now.protect_calls += calls;
            }
            now.evicted_pages += 1000;
            now.swapin_faults += swapins;
            now.wp_faults += wp;
            g.due(now);
        }
        on
    }

    #[test]
    fn aging_turns_off_where_its_passes_are_its_only_cost() {
        // A stream written once and read back: as many swap-ins either
        // way, no write-protect fault; the passes protect what was mapped.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive_with_passes(&mut g, 40, 1300, |_| (44, 0));
        assert!(on <= 40 / EXPLORE_EVERY as usize + 2, "{on} of 40 on");
        assert!(g.on_cost > g.off_cost, "{g:?}");
    }

    #[test]
    fn aging_turns_off_where_its_calls_cost_more_than_it_saves() {
        // Random access: aging spares a few written pages (10% fewer
        // swap-ins), but the resident pages lie scattered, and its passes
        // take one write-protect call (a TLB flush) per page or two.
        // Counted by pages alone the passes look cheap and aging would
        // stay on.
        let saves = |aging: bool| if aging { (900, 10) } else { (1000, 0) };
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive_with_calls(&mut g, 40, 1000, 600, saves);
        assert!(on <= 40 / EXPLORE_EVERY as usize + 2, "{on} of 40 on");
        assert!(g.on_cost > g.off_cost, "{g:?}");
        // The same passes in long runs: aging pays.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive_with_calls(&mut g, 40, 1000, 16, saves);
        assert!(on >= 40 - 40 / EXPLORE_EVERY as usize - 2, "{on} of 40 on");
    }

    /// Drives `g` for 40 epochs of 1000 evictions of scattered victims
    /// (sqlite's page cache): as many swap-ins either way; with aging the
    /// victims are armed and the program takes a write-protect fault for
    /// some of its writes; without it eviction write-protects each victim
    /// run itself, calls the reading holds where the reclaim thread makes
    /// them (`by_reclaim_thread`). Returns how many epochs ran aging.
    fn drive_scattered_victims(g: &mut AgingGovernor, by_reclaim_thread: bool) -> usize {
        let mut now = g.start;
        let mut on = 0;
        for _ in 0..40 {
            on += usize::from(g.aging());
            if g.aging() {
                now.wp_faults += 200;
                now.pages_protected += 2000;
                now.protect_calls += 1;
            } else if by_reclaim_thread {
                now.reclaimer_protect_calls += 500;
            }
            now.evicted_pages += 1000;
            now.swapin_faults += 700;
            g.due(now);
        }
        on
    }

    #[test]
    fn aging_stays_on_where_it_spares_eviction_its_own_protect_calls() {
        // The reclaim thread's calls each flush the program's CPU by
        // interrupt: aging, which saves them, pays.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive_scattered_victims(&mut g, true);
        assert!(on >= 40 - 40 / EXPLORE_EVERY as usize - 2, "{on} of 40 on");
        assert!(g.on_cost < g.off_cost, "{g:?}");
        // In the faulting thread (direct reclaim) those calls flush its own
        // CPU, and aging's faults decide.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive_scattered_victims(&mut g, false);
        assert!(on <= 40 / EXPLORE_EVERY as usize + 2, "{on} of 40 on");
    }

    #[test]
    fn aging_turns_off_where_it_only_adds_faults() {
        // Thrashing: as many swap-ins either way, write-protect faults on
        // top with aging.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive(&mut g, 40, |aging| (1000, if aging { 400 } else { 0 }));
        // Off but for the exploring epochs (and the first).
        assert!(on <= 40 / EXPLORE_EVERY as usize + 2, "{on} of 40 on");
        assert!(!g.aging() || g.exploring.is_some(), "{g:?}");
    }

    #[test]
    fn write_protect_faults_after_a_pass_count_against_aging() {
        // Random access (randpage): a pass arms the resident pages, and the
        // program writes them over the next epochs, whatever those epochs'
        // mode; as many swap-ins either way. Counted in the epoch they
        // come in, those faults make the epochs after a pass look dear, and
        // aging look cheap.
        let mut g = AgingGovernor::new(Reading::default());
        let mut now = g.start;
        let mut later = [0u64; 3];
        let mut on = 0;
        for _ in 0..40 {
            on += usize::from(g.aging());
            now.wp_faults += later[0];
            later = [later[1], later[2], 0];
            if g.aging() {
                now.wp_faults += 100;
                now.pages_protected += 1000;
                now.protect_calls += 1;
                later = later.map(|n| n + 200);
            }
            now.evicted_pages += 1000;
            now.swapin_faults += 1000;
            g.due(now);
        }
        assert!(on <= 40 / EXPLORE_EVERY as usize + 2, "{on} of 40 on");
        assert!(g.on_cost > g.off_cost, "{g:?}");
    }

    #[test]
    fn tries_that_confirm_the_choice_come_ever_more_rarely() {
        // Aging only adds faults: each try confirms that off is cheaper.
        let mut g = AgingGovernor::new(Reading::default());
        let on = drive(&mut g, 100, |aging| (1000, if aging { 400 } else { 0 }));
        // The first epoch, then tries at 4, 12, 28, 44, 60, 76 and 92:
        // every 16 epochs at most once the gap has grown.
        assert!(
            on <= 1 + 100 / MAX_EXPLORE_EVERY as usize + 3,
            "{on} of 100 on"
        );
        assert_eq!(g.explore_every, MAX_EXPLORE_EVERY);
    }

    #[test]
    fn a_try_that_beats_the_choice_brings_the_tries_back() {
        // Aging costs dearly for 60 epochs (tries grow rare, and its
        // average climbs far above off's), then it saves swap-ins. Each try
        // moves the average a quarter of the way: it takes six. A try that
        // beats off's average brings the tries back to every 4 epochs, so
        // the six come within about 16 + 5 * 4 epochs, not 6 * 16.
        let mut g = AgingGovernor::new(Reading::default());
        drive(&mut g, 60, |aging| (1000, if aging { 2000 } else { 0 }));
        assert_eq!(g.explore_every, MAX_EXPLORE_EVERY);
        let on = drive(
            &mut g,
            60,
            |aging| if aging { (100, 150) } else { (900, 0) },
        );
        assert!(on >= 15, "{on} of 60 on after the change");
        assert!(g.on_cost < g.off_cost, "{g:?}");
    }

    #[test]
    fn aging_stays_on_where_it_saves_swap_ins() {
        // A hot written set: without aging reclaim evicts it and it comes
        // back; with aging it is spared, for some write-protect faults,
        // and for passes that protect a few pages or many.
        for protected in [0, 5000] {
            let mut g = AgingGovernor::new(Reading::default());
            let on = drive_with_passes(&mut g, 40, protected, |aging| {
                if aging {
                    (100, 150)
                } else {
                    (900, 0)
                }
            });
            assert!(
                on >= 40 - 40 / EXPLORE_EVERY as usize - 2,
                "{on} of 40 on, {protected} protected a pass"
            );
        }
    }

    #[test]
    fn the_governor_follows_a_change_of_phase() {
        let mut g = AgingGovernor::new(Reading::default());
        drive(
            &mut g,
            40,
            |aging| if aging { (100, 150) } else { (900, 0) },
        );
        assert!(g.on_cost < g.off_cost);
        let on = drive(&mut g, 60, |aging| (1000, if aging { 400 } else { 0 }));
        assert!(on < 40, "{on} of 60 on after the phase change");
        assert!(g.on_cost > g.off_cost);
    }

    #[test]
    fn an_epoch_without_enough_evictions_decides_nothing() {
        let mut g = AgingGovernor::new(Reading::default());
        let few = Reading {
            evicted_pages: MIN_EVICTIONS - 1,
            swapin_faults: 10_000,
            wp_faults: 10_000,
            pages_protected: 10_000,
            protect_calls: 10_000,
            reclaimer_protect_calls: 10_000,
        };
        // The first epoch runs without aging, and goes on.
        assert!(!g.due(few));
        assert_eq!(g.epochs, 0);
        assert_eq!(g.off_cost, None);
        // Enough evictions: off is measured, and aging is tried.
        let enough = Reading {
            evicted_pages: MIN_EVICTIONS,
            ..few
        };
        assert!(g.due(enough));
        assert_eq!(g.epochs, 1);
        assert!(g.off_cost.is_some());
        // One pass an epoch, however often it is due.
        assert!(!g.due(enough));
        assert!(g.aging() && g.passed);
    }
}
