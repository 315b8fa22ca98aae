//! Where eviction runs: in the faulting thread (direct reclaim) or in the
//! reclaim thread (kswapd's role), decided from what eviction sees.
//!
//! Each write-protect and unmap that eviction makes flushes the TLB of
//! every CPU running the program, by inter-processor interrupt. From the
//! reclaim thread that is an interrupt of the program's CPU per call; from
//! the faulting thread of a program that runs one thread, a flush of its
//! own CPU. The calls are one per run of neighbouring victims (unmaps:
//! one per group of runs), so it is scattered victims, one page a run
//! (random access), that pay: randpage 512 MiB under 256M took half the
//! CPU in the faulting thread, for the same elapsed time. A stream's
//! victims are whole folios, 16 pages a call, and there the reclaim
//! thread's overlap with the program wins (a single stream takes 1.5x the
//! time evicting in the faulting thread). A program whose faults come
//! from several threads gets interrupts either way: the reclaim thread
//! keeps it.
//!
//! The choice is where faults over the limit evict. The reclaim thread
//! still evicts when its tick finds the charge over the limit, down to
//! the low watermark, and under steady pressure that loop goes on beside
//! the program for as long as the program refills what it frees: the
//! two share the work. Handing eviction back to the faulting thread
//! there instead was measured slower for single-threaded programs at
//! small limits, 3 interleaved runs each: sqlite 1.19x, sort 1.14x, xz
//! 1.08x, python-list 1.03x, randpage 0.98x (sqlite's CPU 0.88x): the
//! reclaim thread's overlap with the program on another CPU is worth
//! more than the interrupts it costs.
//!
//! Which of the two is faster where victims are scattered depends on what
//! an interrupt costs, and that moves with the machine and the hour: on
//! this 2-vCPU VM randpage 512 MiB under 256M took 0.89-1.03x the time
//! evicting in the faulting thread on one day, and on the next 1.15-1.40x
//! with the pool counted (13.4-17.9 s against 10.8-13.3 s in 4
//! interleaved rounds) and 0.96-1.32x with it uncounted. So
//! where the victims and threads allow it, the choice is measured, as the
//! aging and clean governors measure theirs: windows alternate between the
//! two (faulting thread, reclaim thread, reclaim thread, faulting thread:
//! a drift in the program's pace weighs on both alike), each timed by the
//! wall time per swap-in fault it served, which counts everything the
//! choice moves (the eviction in the fault, the interrupts, the waits on
//! a reclaim thread that falls behind). The reclaim thread is kept only
//! where it is faster by [`MARGIN`] or more, since it takes more CPU (a
//! second CPU's, and the interrupts): the faulting thread is the default.
//! The choice holds for [`MIN_HOLD_NS`] (4 s), then is measured again,
//! and holds twice as long after each trial that confirms it, up to
//! [`MAX_HOLD_NS`]: a trial spends half its time on the slower side.
//!
//! [`DirectReclaim`] takes counter readings each reclaim tick and says
//! whether faults over the limit evict in their own thread. Policy only,
//! and pure. Not at each batch the reclaim thread evicts: windows of a
//! batch or two judge the victims' scatter by a few runs, and a program
//! whose victims are scattered only part of the time (sort under 10M)
//! then went in and out of trials, each starting on the faulting thread:
//! 0.81x the time of the tick's windows (4 interleaved rounds).

/// Counter readings ([`crate::RuntimeStats`]' totals) and the time they
/// were read at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    pub evicted_pages: u64,
    /// Runs those pages were evicted in (one write-protect call or check
    /// each).
    pub evict_runs: u64,
    /// Faults served in-thread by a thread other than the one before.
    pub fault_thread_switches: u64,
    /// Swap-in faults served.
    pub swapin_faults: u64,
    /// Monotonic time of the reading, ns.
    pub at_ns: u64,
}

/// Fewest evictions a window needs to judge by.
pub(crate) const MIN_EVICTIONS: u64 = 256;
/// Victims per run below which they count as scattered.
pub(crate) const SCATTERED_PAGES_PER_RUN: u64 = 4;
/// Thread switches between faults in a window above which the program
/// counts as running several threads at once (a few come from a thread
/// that starts or ends).
pub(crate) const MAX_THREAD_SWITCHES: u64 = 8;
/// Fewest swap-in faults, and least time, a window of a trial needs to be
/// timed: thousands of faults, so that a hiccup of the machine weighs
/// little, and long beside the eviction a window can leave to the next
/// (the reclaim thread evicts once the charge passes the limit, down to
/// 1/32 of the limit under it: 2k pages of a 256M limit, about 10 ms).
pub(crate) const MIN_TRIAL_SWAPINS: u64 = 8192;
pub(crate) const MIN_TRIAL_NS: u64 = 250_000_000;
/// A trial's window longer than this is not timed but started again: the
/// program faulted too slowly for the choice to matter, or stopped (an
/// idle spell would weigh on one side only).
pub(crate) const MAX_TRIAL_NS: u64 = 2_000_000_000;
/// The trial's windows, in order: `true` evicts in the faulting thread.
pub(crate) const TRIAL: [bool; 4] = [true, false, false, true];
/// The reclaim thread is chosen where its windows' time per swap-in is
/// under the faulting thread's by this share or more.
pub(crate) const MARGIN: f64 = 0.05;
/// How long a choice holds before the next trial, ns: at first, and after
/// a trial that changed it; twice as long after each that confirmed it,
/// up to the most.
pub(crate) const MIN_HOLD_NS: u64 = 4_000_000_000;
pub(crate) const MAX_HOLD_NS: u64 = 32_000_000_000;

/// Where the measured choice stands.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Victims not scattered, or several threads faulting: the reclaim
    /// thread evicts, nothing is measured.
    Background,
    /// Window `at` of [`TRIAL`] under way since `from`; time and swap-in
    /// faults of the windows done, summed per side (0: faulting thread,
    /// 1: reclaim thread).
    Trial {
        at: usize,
        from: Reading,
        ns: [u64; 2],
        swapins: [u64; 2],
    },
    /// Chosen until the monotonic time `until_ns`.
    Chosen { direct: bool, until_ns: u64 },
}

/// Decides, window by window, whether eviction runs in the faulting
/// thread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct DirectReclaim {
    /// Start of the window of evictions under way (victims and threads).
    start: Reading,
    phase: Phase,
    /// The last trial's choice, and how long it holds.
    last: Option<bool>,
    hold_ns: u64,
}

impl DirectReclaim {
    /// Eviction in the reclaim thread until a window says otherwise.
    pub fn new(now: Reading) -> Self {
        Self {
            start: now,
            phase: Phase::Background,
            last: None,
            hold_ns: MIN_HOLD_NS,
        }
    }

    /// Whether faults over the limit evict in their own thread now.
    pub fn direct(&self) -> bool {
        match self.phase {
            Phase::Background => false,
            Phase::Trial { at, .. } => TRIAL[at],
            Phase::Chosen { direct, .. } => direct,
        }
    }

    /// Ends the window of evictions under way if it has seen enough of
    /// them: victims not scattered, or several faulting threads, send
    /// eviction to the reclaim thread; otherwise the trial goes on, or
    /// starts where none is under way and no choice holds. Returns whether
    /// faults over the limit evict in their own thread now.
    pub fn update(&mut self, now: Reading) -> bool {
        let since = |f: fn(&Reading) -> u64| f(&now).saturating_sub(f(&self.start));
        let pages = since(|r| r.evicted_pages);
        if pages < MIN_EVICTIONS {
            return self.direct();
        }
        let runs = since(|r| r.evict_runs).max(1);
        let switches = since(|r| r.fault_thread_switches);
        let eligible = pages < SCATTERED_PAGES_PER_RUN * runs && switches <= MAX_THREAD_SWITCHES;
        self.start = now;
        self.phase = match (eligible, self.phase) {
            (false, _) => {
                (self.last, self.hold_ns) = (None, MIN_HOLD_NS);
                Phase::Background
            }
            (true, Phase::Background) => trial(now),
            (true, Phase::Chosen { until_ns, .. }) if now.at_ns >= until_ns => trial(now),
            (true, chosen @ Phase::Chosen { .. }) => chosen,
            (
                true,
                Phase::Trial {
                    at,
                    from,
                    ns,
                    swapins,
                },
            ) => match trial_step(at, from, ns, swapins, now) {
                Ok(next) => next,
                Err(direct) => self.choose(direct, now),
            },
        };
        self.direct()
    }

    /// A trial's end at `now` chose `direct`: it holds twice as long as the
    /// last choice where it is the same, [`MIN_HOLD_NS`] where it changed.
    fn choose(&mut self, direct: bool, now: Reading) -> Phase {
        self.hold_ns = match self.last == Some(direct) {
            true => (self.hold_ns * 2).min(MAX_HOLD_NS),
            false => MIN_HOLD_NS,
        };
        self.last = Some(direct);
        Phase::Chosen {
            direct,
            until_ns: now.at_ns.saturating_add(self.hold_ns),
        }
    }
}

/// A trial starting at `now`.
fn trial(now: Reading) -> Phase {
    Phase::Trial {
        at: 0,
        from: now,
        ns: [0; 2],
        swapins: [0; 2],
    }
}

/// The trial's window `at`, under way since `from`, at `now`: unchanged
/// until it has served [`MIN_TRIAL_SWAPINS`] faults over
/// [`MIN_TRIAL_NS`]; then its time is added to its side's and the next
/// window starts, or, after the last, `Err` says whether the faulting
/// thread is chosen (the reclaim thread is not faster).
fn trial_step(
    at: usize,
    from: Reading,
    mut ns: [u64; 2],
    mut swapins: [u64; 2],
    now: Reading,
) -> Result<Phase, bool> {
    let faults = now.swapin_faults.saturating_sub(from.swapin_faults);
    let took = now.at_ns.saturating_sub(from.at_ns);
    if faults < MIN_TRIAL_SWAPINS || took < MIN_TRIAL_NS {
        return Ok(Phase::Trial {
            at,
            from,
            ns,
            swapins,
        });
    }
    // A window too long is started again, untimed.
    let mut next = at;
    if took <= MAX_TRIAL_NS {
        let side = usize::from(!TRIAL[at]);
        ns[side] += took;
        swapins[side] += faults;
        next = at + 1;
    }
    if next == TRIAL.len() {
        return Err(!reclaim_thread_faster(ns, swapins));
    }
    Ok(Phase::Trial {
        at: next,
        from: now,
        ns,
        swapins,
    })
}

/// Whether the reclaim thread's windows served a swap-in fault in
/// [`MARGIN`] less wall time, or less, than the faulting thread's: `ns`
/// and `swapins` per side (0: faulting thread, 1: reclaim thread).
fn reclaim_thread_faster(ns: [u64; 2], swapins: [u64; 2]) -> bool {
    let per = |i: usize| ns[i] as f64 / swapins[i].max(1) as f64;
    per(1) <= per(0) * (1.0 - MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pages: u64, runs: u64, switches: u64) -> Reading {
        Reading {
            evicted_pages: pages,
            evict_runs: runs,
            fault_thread_switches: switches,
            ..Reading::default()
        }
    }

    /// Swap-in faults served per tick by [`run`].
    const TICK_SWAPINS: u64 = 2048;

    /// A program under steady pressure: each tick evicts 512 scattered
    /// pages and serves [`TICK_SWAPINS`] swap-in faults, which take
    /// `direct_ns` or `reclaim_ns` each in wall time as eviction runs in the
    /// faulting thread or not. Returns the decision of each of `ticks`
    /// ticks.
    fn run(
        d: &mut DirectReclaim,
        now: &mut Reading,
        direct_ns: u64,
        reclaim_ns: u64,
        ticks: usize,
    ) -> Vec<bool> {
        (0..ticks)
            .map(|_| {
                let per = if d.direct() { direct_ns } else { reclaim_ns };
                now.evicted_pages += 512;
                now.evict_runs += 512;
                now.swapin_faults += TICK_SWAPINS;
                now.at_ns += TICK_SWAPINS * per;
                d.update(*now)
            })
            .collect()
    }

    /// Ticks of [`run`] a trial's window lasts at `per` ns a fault.
    fn window_ticks(per: u64) -> usize {
        let by_faults = MIN_TRIAL_SWAPINS.div_ceil(TICK_SWAPINS);
        let by_time = MIN_TRIAL_NS.div_ceil(TICK_SWAPINS * per);
        by_faults.max(by_time) as usize
    }

    #[test]
    fn scattered_victims_of_one_thread_evict_in_the_faulting_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(d.update(reading(1000, 900, 0)));
    }

    #[test]
    fn a_streams_folios_stay_with_the_reclaim_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(!d.update(reading(1024, 64, 0)));
    }

    #[test]
    fn faults_from_several_threads_stay_with_the_reclaim_thread() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(!d.update(reading(1000, 1000, 500)));
    }

    #[test]
    fn a_window_too_short_keeps_the_last_decision() {
        let mut d = DirectReclaim::new(Reading::default());
        assert!(d.update(reading(1000, 1000, 0)));
        // 100 pages more, all in one run: not enough to judge.
        assert!(d.update(reading(1100, 1001, 0)));
        // Then a window of long runs turns it back.
        assert!(!d.update(reading(2100, 1065, 0)));
    }

    #[test]
    fn counters_that_go_back_are_taken_as_no_change() {
        let mut d = DirectReclaim::new(reading(5000, 5000, 10));
        assert!(!d.update(reading(10, 10, 0)));
    }

    /// The sides each tick took during the trial, and the choice after it.
    fn trial_of(direct_ns: u64, reclaim_ns: u64) -> (Vec<bool>, bool) {
        let mut now = Reading::default();
        let mut d = DirectReclaim::new(now);
        let mut sides = run(&mut d, &mut now, direct_ns, reclaim_ns, 1);
        while matches!(d.phase, Phase::Trial { .. }) {
            sides.extend(run(&mut d, &mut now, direct_ns, reclaim_ns, 1));
        }
        (sides, d.direct())
    }

    #[test]
    fn a_trial_alternates_faulting_reclaim_reclaim_faulting_windows() {
        let (sides, _) = trial_of(20_000, 20_000);
        let mut windows = sides.clone();
        windows.dedup();
        assert_eq!(windows, vec![true, false, true], "{sides:?}");
        // Each window lasts until both its faults and its time suffice.
        let reclaim_ticks = sides.iter().filter(|&&s| !s).count();
        assert_eq!(reclaim_ticks, 2 * window_ticks(20_000), "{sides:?}");
    }

    #[test]
    fn the_reclaim_thread_is_chosen_only_where_it_is_faster_by_the_margin() {
        assert!(
            !trial_of(20_000, 17_000).1,
            "15% faster: the reclaim thread"
        );
        assert!(trial_of(20_000, 19_400).1, "3% faster: within the margin");
        assert!(trial_of(17_000, 20_000).1, "slower: the faulting thread");
    }

    /// Runs `d` until its trial ends; returns the choice and how long it
    /// holds, ns.
    fn until_chosen(
        d: &mut DirectReclaim,
        now: &mut Reading,
        direct_ns: u64,
        reclaim_ns: u64,
    ) -> (bool, u64) {
        for _ in 0..10_000 {
            run(d, now, direct_ns, reclaim_ns, 1);
            if let Phase::Chosen { direct, until_ns } = d.phase {
                return (direct, until_ns - now.at_ns);
            }
        }
        panic!("no choice: {:?}", d.phase)
    }

    #[test]
    fn a_choice_holds_for_its_time_then_is_measured_again() {
        let mut now = Reading::default();
        let mut d = DirectReclaim::new(now);
        // The reclaim thread faster: chosen after the trial, for 4 s.
        assert_eq!(
            until_chosen(&mut d, &mut now, 20_000, 15_000),
            (false, MIN_HOLD_NS)
        );
        let tick = TICK_SWAPINS * 15_000;
        let held = run(
            &mut d,
            &mut now,
            20_000,
            15_000,
            (MIN_HOLD_NS / tick) as usize,
        );
        assert!(held.iter().all(|&s| !s), "{held:?}");
        // Then the machine changes: the faulting thread is faster now,
        // and the next trial finds it; a changed choice holds 4 s again.
        assert_eq!(
            until_chosen(&mut d, &mut now, 10_000, 20_000),
            (true, MIN_HOLD_NS)
        );
    }

    #[test]
    fn a_confirmed_choice_holds_twice_as_long_up_to_the_most() {
        let mut now = Reading::default();
        let mut d = DirectReclaim::new(now);
        let mut holds = Vec::new();
        for _ in 0..6 {
            let (direct, hold) = until_chosen(&mut d, &mut now, 20_000, 15_000);
            assert!(!direct);
            holds.push(hold / 1_000_000_000);
            // Past the hold: the next tick starts a trial.
            now.at_ns += hold;
        }
        assert_eq!(holds, vec![4, 8, 16, 32, 32, 32]);
        // A window of a stream in between forgets it.
        now.evicted_pages += 1024;
        now.evict_runs += 64;
        d.update(now);
        assert_eq!(
            until_chosen(&mut d, &mut now, 20_000, 15_000),
            (false, MIN_HOLD_NS)
        );
    }

    #[test]
    fn a_stream_ends_the_trial_and_scattered_victims_start_it_again() {
        let mut now = Reading::default();
        let mut d = DirectReclaim::new(now);
        // The tick that starts the trial, then its first window.
        run(&mut d, &mut now, 20_000, 20_000, 1 + window_ticks(20_000));
        assert!(
            matches!(d.phase, Phase::Trial { at: 1, .. }),
            "{:?}",
            d.phase
        );
        // A window of whole folios.
        now.evicted_pages += 1024;
        now.evict_runs += 64;
        assert!(!d.update(now));
        assert_eq!(d.phase, Phase::Background);
        assert!(run(&mut d, &mut now, 20_000, 20_000, 1)[0]);
        assert!(
            matches!(d.phase, Phase::Trial { at: 0, .. }),
            "{:?}",
            d.phase
        );
    }

    #[test]
    fn a_trial_window_of_an_idle_spell_is_not_timed() {
        let mut now = Reading::default();
        let mut d = DirectReclaim::new(now);
        run(&mut d, &mut now, 20_000, 20_000, 1);
        // The program stops for 5 s in the first window, then goes on:
        // the window starts again instead of weighing on its side.
        now.at_ns += 5_000_000_000;
        let sides = run(&mut d, &mut now, 20_000, 20_000, 1);
        assert_eq!(sides, vec![true]);
        let Phase::Trial { at, ns, .. } = d.phase else {
            panic!("{:?}", d.phase)
        };
        assert_eq!((at, ns), (0, [0, 0]));
    }
}
