//! `uzswap run --max-slowdown PCT`: the limit found from pressure, as
//! Senpai finds `memory.high` from PSI.
//!
//! Every [`TICK`] the controller reads, from the run's shared-limit file,
//! how long the threads of the run's processes waited on uzswap since the
//! last tick (fault service, throttling, pinned system-call buffers: the
//! runtimes' `stall_ns`) and what the processes are charged. The stall
//! share is that wait over the wall time of the tick. A slowdown of PCT
//! over a plain run is a share of PCT / (1 + PCT): waiting `s` of every
//! second leaves `1 - s` of work, which took `1 - s` seconds plain.
//!
//! * Under the target, the limit probes down, from the charge (a limit
//!   above what the run uses saves nothing) by up to [`MAX_PROBE`] a tick,
//!   less the closer the share is to the target.
//! * The whole run's wait is held to the target too, as a budget: the
//!   target share of the wall time so far. While the run has spent more
//!   than [`PROBE_BUDGET`] of it, the limit holds (it neither comes down
//!   to the charge nor probes under it), so that one
//!   probe too far, paid for in the ticks after it, is not repeated at
//!   once: a short run that stalls early is not pushed again.
//! * Over it, the limit backs off up, by [`BACKOFF`] times the share over
//!   the target, at most [`MAX_BACKOFF`] a tick: fast up, slow down.
//!
//! The limit stays between [`FLOOR_BYTES`] and the ceiling (`--limit`, or
//! this machine's memory). The share counts every thread's wait: a program
//! whose threads wait at once counts each, so a threaded program is held
//! to a stricter target, never a looser one.
//!
//! Policy ([`Controller`], pure: readings in, limit out) apart from
//! plumbing ([`run_controller`], a thread that ticks until the run ends).

use runtime::LimitControl;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time between two decisions.
pub const TICK: Duration = Duration::from_millis(250);
/// Most the limit probes down in one tick under the charge: 2% a tick
/// halves an idle run's limit in about 9 s.
pub const MAX_PROBE: f64 = 0.02;
/// How fast a limit above the charge comes down to it, a share a tick.
pub const APPROACH: f64 = 0.10;
/// A charge that grew by more than this share in a tick is growing.
pub const GROWTH: f64 = 0.02;
/// How far ahead of a growing charge the limit stays.
pub const AHEAD: f64 = 0.25;
/// How fast the limit backs off: a share twice the target raises it by
/// this much a tick.
pub const BACKOFF: f64 = 0.10;
/// Most the limit backs off up in one tick.
pub const MAX_BACKOFF: f64 = 0.25;
/// The lowest limit the controller sets.
pub const FLOOR_BYTES: usize = 16 << 20;
/// Share of the run's stall budget (target share × wall time so far)
/// past which the limit stops probing down.
pub const PROBE_BUDGET: f64 = 0.75;

const PAGE: usize = 4096;

/// What one tick saw and decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Since the run started.
    pub at: Duration,
    /// The limit set, pages.
    pub limit_pages: usize,
    /// The run's charge, pages.
    pub charge_pages: usize,
    /// Stall over wall time in the tick.
    pub stall_share: f64,
}

/// The limit policy: readings in, limit out.
#[derive(Clone, Debug)]
pub struct Controller {
    /// Stall share aimed at.
    target: f64,
    ceiling_pages: usize,
    floor_pages: usize,
    limit_pages: usize,
    last_stall_ns: u64,
    last_charge_pages: usize,
    /// Wall time of every tick so far, ns.
    wall_ns: u64,
}

impl Controller {
    /// A controller for a slowdown of `max_slowdown` (0.05: 5%) under a
    /// ceiling of `ceiling_bytes`.
    pub fn new(max_slowdown: f64, ceiling_bytes: usize) -> Self {
        let ceiling_pages = (ceiling_bytes / PAGE).max(1);
        Self {
            target: max_slowdown / (1.0 + max_slowdown),
            ceiling_pages,
            floor_pages: (FLOOR_BYTES / PAGE).min(ceiling_pages),
            limit_pages: ceiling_pages,
            last_stall_ns: 0,
            last_charge_pages: 0,
            wall_ns: 0,
        }
    }

    /// The stall share aimed at.
    pub fn target_share(&self) -> f64 {
        self.target
    }

    /// One tick of `wall` in which the run's total stall reached
    /// `stall_ns` and its charge is `charge_pages`: the new limit, pages,
    /// and the share seen.
    pub fn tick(&mut self, wall: Duration, stall_ns: u64, charge_pages: usize) -> (usize, f64) {
        let waited = stall_ns.saturating_sub(self.last_stall_ns);
        self.last_stall_ns = self.last_stall_ns.max(stall_ns);
        let share = crate::report::stall_share(waited, wall);
        self.wall_ns += wall.as_nanos() as u64;
        let budget = self.target * self.wall_ns as f64;
        let in_budget = (self.last_stall_ns as f64) <= PROBE_BUDGET * budget;
        let limit = self.limit_pages as f64;
        let charge = charge_pages as f64;
        let growth = charge / (self.last_charge_pages.max(1) as f64);
        let growing = growth > 1.0 + GROWTH;
        self.last_charge_pages = charge_pages;
        if charge_pages < self.floor_pages && share <= self.target {
            // Too little to save anything yet (a program starting).
            return (self.limit_pages, share);
        }
        let next = if share > self.target {
            let over = (share / self.target - 1.0).max(0.0);
            limit * (1.0 + (BACKOFF * over).min(MAX_BACKOFF))
        } else if growing {
            // The run is taking memory: a limit just over it would throttle
            // its growth and evict what it has only just made (a young
            // generation its garbage collector is about to walk). Stay
            // ahead by a quarter, or by two more ticks of this growth if
            // that is more: it must not reach the limit before the next
            // tick.
            let ahead = (1.0 + AHEAD).max(growth * growth).min(4.0);
            (charge * ahead).max(limit.min(charge * 4.0))
        } else if !in_budget {
            // The run has waited its share already: hold, neither coming
            // down to the charge nor probing under it.
            limit
        } else if limit > charge {
            // Above what the run uses: come down to it (from far above,
            // at once to a quarter over it), never under it in one step (a
            // limit just raised by a stall would otherwise fall straight
            // back into it).
            charge.max((limit * (1.0 - APPROACH)).min(charge * (1.0 + AHEAD)))
        } else {
            let room = 1.0 - share / self.target;
            limit * (1.0 - MAX_PROBE * room)
        };
        self.limit_pages = (next as usize).clamp(self.floor_pages, self.ceiling_pages);
        (self.limit_pages, share)
    }
}

/// Ticks `controller` against the run's shared limit until `stop` says
/// so (or its sender goes); returns every tick's sample. The limit is
/// left to the ceiling at the end.
pub fn run_controller(
    mut controller: Controller,
    control: LimitControl,
    stop: Receiver<()>,
) -> Vec<Sample> {
    let start = Instant::now();
    let mut samples = Vec::new();
    let mut last = start;
    // Until told to stop, or the sender goes.
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
        let now = Instant::now();
        let charge = control.charge();
        let (limit, share) = controller.tick(now - last, control.stall_ns(), charge);
        control.set_limit(limit);
        last = now;
        samples.push(Sample {
            at: now - start,
            limit_pages: limit,
            charge_pages: charge,
            stall_share: share,
        });
    }
    control.set_limit(0);
    samples
}

/// A controller ticking on its thread.
#[derive(Debug)]
pub struct Running {
    stop: Sender<()>,
    thread: JoinHandle<Vec<Sample>>,
}

impl Running {
    /// Starts `controller` on the shared-limit file at `path` (created if
    /// the run's first runtime has not yet).
    pub fn start(controller: Controller, path: &Path) -> std::io::Result<Self> {
        let control = LimitControl::open(path)?;
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("uzswap-control".into())
            .spawn(move || run_controller(controller, control, stopped))?;
        Ok(Self { stop, thread })
    }

    /// Stops the controller (the limit goes back to the ceiling) and
    /// returns its ticks.
    pub fn finish(self) -> Vec<Sample> {
        drop(self.stop);
        self.thread.join().unwrap_or_default()
    }
}

/// A summary of a controlled run's samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Lowest limit set, bytes.
    pub min_limit_bytes: usize,
    /// Limit at the end, bytes.
    pub end_limit_bytes: usize,
    /// Charge averaged over time, bytes.
    pub mean_charge_bytes: usize,
    /// Stall over wall time, all ticks together.
    pub stall_share: f64,
}

/// Sums up `samples` (ticks of equal length).
pub fn summarize(samples: &[Sample]) -> Summary {
    let Some(last) = samples.last() else {
        return Summary::default();
    };
    let n = samples.len() as f64;
    Summary {
        min_limit_bytes: samples.iter().map(|s| s.limit_pages).min().unwrap_or(0) * PAGE,
        end_limit_bytes: last.limit_pages * PAGE,
        mean_charge_bytes: (samples.iter().map(|s| s.charge_pages as f64).sum::<f64>() / n)
            as usize
            * PAGE,
        stall_share: samples.iter().map(|s| s.stall_share).sum::<f64>() / n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: usize = 1 << 30;

    #[test]
    fn a_run_that_never_waits_is_probed_down_to_the_floor() {
        let mut c = Controller::new(0.05, GB);
        let mut limit = 0;
        for _ in 0..1000 {
            (limit, _) = c.tick(TICK, 0, GB / PAGE);
        }
        assert_eq!(limit, FLOOR_BYTES / PAGE);
    }

    /// Ticks of `c` with no wait and a steady charge of `charge` pages
    /// until the limit is down to the charge; returns how many.
    fn settle(c: &mut Controller, charge: usize) -> usize {
        for n in 1..100 {
            if c.tick(TICK, c.last_stall_ns, charge).0 == charge {
                return n;
            }
        }
        panic!("never came down to the charge: {c:?}");
    }

    #[test]
    fn a_limit_far_above_the_run_comes_down_to_it_then_probes_under_it() {
        let mut c = Controller::new(0.05, 64 * GB);
        let charge = 1000 * 256; // 1000 MiB
                                 // The first tick sees the charge grow (from nothing): the limit
                                 // stays well ahead of it, far under the 64 GiB ceiling.
        let (limit, share) = c.tick(TICK, 0, charge);
        assert_eq!(share, 0.0);
        assert_eq!(limit, 4 * charge);
        // Steady: a quarter over it at once, then down to it, never under
        // it in one step.
        assert_eq!(c.tick(TICK, 0, charge).0, charge + charge / 4);
        assert!(settle(&mut c, charge) < 5);
        // Under the charge: 2% a tick.
        let (limit, _) = c.tick(TICK, 0, charge);
        assert_eq!(limit, (charge as f64 * (1.0 - MAX_PROBE)) as usize);
    }

    #[test]
    fn a_growing_run_keeps_its_limit_ahead() {
        let mut c = Controller::new(0.05, 64 * GB);
        let mut charge = 100 * 256;
        for _ in 0..20 {
            charge += charge / 10;
            let (limit, _) = c.tick(TICK, 0, charge);
            assert!(limit >= charge + charge / 4, "{limit} for {charge}");
        }
        // Growing fast (a quarter and more a tick after a pause): the
        // limit stays two ticks of that growth ahead, so that the next
        // tick's charge is still under it.
        for _ in 0..3 {
            c.tick(TICK, 0, charge);
        }
        // (The first tick of growth after a pause is seen a tick late.)
        charge += charge * 3 / 10;
        c.tick(TICK, 0, charge);
        for _ in 0..10 {
            charge += charge * 3 / 10;
            let (limit, _) = c.tick(TICK, 0, charge);
            let next = charge + charge * 3 / 10;
            assert!(limit > next, "{limit} for a charge about to be {next}");
        }
    }

    #[test]
    fn waiting_over_the_target_backs_off_fast_and_under_it_probes_slowly() {
        let mut c = Controller::new(0.05, GB);
        let charge = GB / PAGE / 2;
        settle(&mut c, charge);
        // Half the tick spent waiting: far over a 4.8% share.
        let tick_ns = TICK.as_nanos() as u64;
        let (up, share) = c.tick(TICK, tick_ns / 2, charge);
        assert!((share - 0.5).abs() < 1e-9);
        assert_eq!(up, ((charge as f64) * (1.0 + MAX_BACKOFF)) as usize);
        // Just under the target, but the run's wait over its budget: held
        // above the charge.
        let waited = tick_ns / 2 + (c.target_share() * 0.9 * tick_ns as f64) as u64;
        let (held, _) = c.tick(TICK, waited, charge);
        assert_eq!(held, up);
        // Once quiet ticks have paid the wait back: down to the charge,
        // not under it in one step, then probing.
        let mut ticks = 0;
        let mut limit = up;
        while limit == up && ticks < 100 {
            (limit, _) = c.tick(TICK, c.last_stall_ns, charge);
            ticks += 1;
        }
        assert!(
            ticks > 5 && limit < up && limit >= charge,
            "{ticks} {limit}"
        );
        settle(&mut c, charge);
        for _ in 0..5 {
            c.tick(TICK, c.last_stall_ns, charge);
        }
        // Just under the target: a small probe.
        let before = c.limit_pages;
        assert!(before < charge);
        let waited = c.last_stall_ns + (c.target_share() * 0.9 * tick_ns as f64) as u64;
        let (probe, _) = c.tick(TICK, waited, charge);
        assert!(probe < before && probe as f64 > before as f64 * (1.0 - MAX_PROBE * 0.2));
    }

    /// A program with 400 MiB that touches 10 MiB at random between
    /// collections, and all of it in a collection every 20 ticks (a
    /// garbage collector's full pass): each page found out costs a
    /// swap-in of 10 µs. The cheap ticks invite the limit down; each
    /// collection then pays for every page it pushed out. The run's total
    /// wait stays within its target.
    #[test]
    fn the_whole_runs_wait_stays_within_its_budget() {
        let all: usize = 400 * 256;
        let hot: usize = 10 * 256;
        let tick_ns = TICK.as_nanos() as u64;
        for target in [0.05, 0.10] {
            let mut c = Controller::new(target, GB);
            let (mut stall, mut limit, mut resident) = (0u64, GB / PAGE, all);
            let ticks = 400;
            for t in 0..ticks {
                resident = resident.min(limit);
                let touched = if t % 20 == 19 { all } else { hot };
                let swapins = touched.saturating_sub(resident);
                resident = (resident + swapins).min(all);
                stall += swapins as u64 * 10_000;
                (limit, _) = c.tick(TICK, stall, resident);
            }
            let share = stall as f64 / (ticks * tick_ns) as f64;
            let aim = target / (1.0 + target);
            assert!(share <= aim, "target {target}: share {share}");
        }
    }

    #[test]
    fn a_run_smaller_than_the_floor_is_left_alone() {
        let mut c = Controller::new(0.05, GB);
        let (limit, _) = c.tick(TICK, 0, FLOOR_BYTES / PAGE / 2);
        assert_eq!(limit, GB / PAGE);
    }

    #[test]
    fn the_limit_never_leaves_floor_and_ceiling() {
        let mut c = Controller::new(0.10, 256 << 20);
        let mut stall = 0;
        for i in 0..2000u64 {
            // Waiting all of every other tick.
            if i % 2 == 0 {
                stall += TICK.as_nanos() as u64;
            }
            let (limit, _) = c.tick(TICK, stall, (256 << 20) / PAGE);
            assert!(
                (FLOOR_BYTES / PAGE..=(256 << 20) / PAGE).contains(&limit),
                "{limit}"
            );
        }
    }

    #[test]
    fn a_stall_total_that_goes_back_counts_as_no_wait() {
        // A process's slot swept between two reads may lower the total
        // for a moment: no negative wait, no jump when it comes back.
        let mut c = Controller::new(0.05, GB);
        c.tick(TICK, 1_000_000, GB / PAGE);
        let (_, share) = c.tick(TICK, 500_000, GB / PAGE);
        assert_eq!(share, 0.0);
        let (_, share) = c.tick(TICK, 1_000_000, GB / PAGE);
        assert_eq!(share, 0.0);
    }

    #[test]
    fn a_summary_reads_the_ticks() {
        let s = |limit, charge, share| Sample {
            at: Duration::ZERO,
            limit_pages: limit,
            charge_pages: charge,
            stall_share: share,
        };
        let sum = summarize(&[s(100, 50, 0.0), s(80, 70, 0.1), s(90, 60, 0.05)]);
        assert_eq!(sum.min_limit_bytes, 80 * PAGE);
        assert_eq!(sum.end_limit_bytes, 90 * PAGE);
        assert_eq!(sum.mean_charge_bytes, 60 * PAGE);
        assert!((sum.stall_share - 0.05).abs() < 1e-9);
        assert_eq!(summarize(&[]), Summary::default());
    }
}
