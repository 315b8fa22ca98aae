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
//! * **Cold pages leave before pressure.** The controller also sets a cold
//!   age: every runtime of the run evicts the resident pages untouched
//!   that long (no fault and no tracked write since), whatever the limit.
//!   It starts at [`COLD_AGE_START_MS`] and follows the stall as the limit
//!   does: shorter while under the target (once the run is older than the
//!   age), up to twice as long a tick over it.
//! * **No debt past the budget.** What the run has swapped out is stall
//!   it may still have to pay ([`SWAPIN_COST_NS`] a page in the pool,
//!   [`FILE_SWAPIN_COST_NS`] one on the swap file): a program that
//!   reads all its data again at the end (a digest, a teardown) pays for
//!   every page evicted. While the wait spent so far plus bringing all of
//!   it back would pass the budget, nothing more leaves (no probe, no cold
//!   age). Early in a run this bounds the savings (at 5%, 20 MB a second
//!   of run); a service that runs for minutes is not bound by it.
//!
//! The wait counts the reclaimers' CPU time that ran while no CPU was
//! idle (`Crowding`): where the program keeps every CPU busy, the
//! reclaimer's compression is its time taken.
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
/// The cold age a run starts with: resident pages untouched for a second
/// leave before any pressure (a program of under a second keeps all).
pub const COLD_AGE_START_MS: f64 = 1_000.0;
/// The youngest cold age.
pub const COLD_AGE_MIN_MS: f64 = 250.0;
/// The oldest cold age.
pub const COLD_AGE_MAX_MS: f64 = 120_000.0;
/// Most the cold age shortens in one tick under the target.
pub const COLD_PROBE: f64 = 0.15;
/// What bringing one swapped-out page back costs the program, ns: a
/// random swap-in fault's median on this project's machines (9–15 µs,
/// BENCHMARKS.md's `bench faults`).
pub const SWAPIN_COST_NS: f64 = 10_000.0;
/// What bringing back a page from the swap file costs: a 4 KiB random
/// read of the device (45 µs p50 on this project's machines' virtio disk,
/// the swap file kept out of the page cache) and the fault around it.
pub const FILE_SWAPIN_COST_NS: f64 = 55_000.0;

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
    /// The cold age set, ms (0: none).
    pub cold_age_ms: u32,
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
    /// Resident pages untouched this long leave before pressure, ms.
    cold_age_ms: f64,
    /// The charge is under the floor: too little to save anything yet.
    small: bool,
    /// Pages the run has swapped out now.
    swapped_pages: usize,
    /// Of those, pages on the swap file.
    on_file_pages: usize,
    /// Bringing every swapped-out page back would take more than the
    /// run's stall budget has left: nothing more leaves for now.
    in_debt: bool,
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
            cold_age_ms: COLD_AGE_START_MS,
            small: true,
            swapped_pages: 0,
            on_file_pages: 0,
            in_debt: false,
        }
    }

    /// The run has `pages` swapped out now, `on_file` of them on the swap
    /// file (read before each tick): what the program would wait for if
    /// it touched them all again.
    pub fn swapped_out(&mut self, pages: usize, on_file: usize) {
        self.swapped_pages = pages;
        self.on_file_pages = on_file.min(pages);
    }

    /// What bringing back every page swapped out would cost, ns.
    fn debt_ns(&self) -> f64 {
        let pooled = self.swapped_pages - self.on_file_pages;
        pooled as f64 * SWAPIN_COST_NS + self.on_file_pages as f64 * FILE_SWAPIN_COST_NS
    }

    /// The cold age now, ms: resident pages untouched that long leave
    /// before any pressure (0: none, while the run is under the floor or
    /// bringing back all it swapped out would pass its budget).
    pub fn cold_age_ms(&self) -> u32 {
        if self.small || self.in_debt {
            0
        } else {
            self.cold_age_ms as u32
        }
    }

    /// The stall share aimed at.
    pub fn target_share(&self) -> f64 {
        self.target
    }

    /// The cold age follows the stall as the limit does, on its own
    /// scale: over the target it lengthens, up to twice a tick (the pages
    /// that left were not cold: they are faulting back); under it, within
    /// the run's budget, it shortens by up to [`COLD_PROBE`], less the
    /// closer the share is to the target, so cold pages leave sooner —
    /// but only once the run is older than the age: before that no page
    /// can have been untouched so long, so a quiet tick says nothing about
    /// whether such pages come back. (A run of a second, sqlite's say, had
    /// its age shortened to 0.6 s by quiet ticks and then evicted a third
    /// of its cache, to fault it back in its last tenth of a second.)
    fn tick_cold_age(&mut self, share: f64, in_budget: bool) {
        let age = self.cold_age_ms;
        let run_ms = self.wall_ns as f64 / 1e6;
        let next = if share > self.target {
            age * (1.0 + (share / self.target - 1.0).min(1.0))
        } else if in_budget && run_ms >= age {
            age * (1.0 - COLD_PROBE * (1.0 - share / self.target))
        } else {
            age
        };
        self.cold_age_ms = next.clamp(COLD_AGE_MIN_MS, COLD_AGE_MAX_MS);
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
        // What the run has spent of its budget, and what bringing back all
        // it has swapped out would spend: a program that reads everything
        // again (a digest, a teardown, a final pass) must still end
        // within its slowdown, so no more leaves while that is over.
        let spent = self.last_stall_ns as f64;
        self.in_debt = spent + self.debt_ns() > budget;
        let in_budget = spent <= PROBE_BUDGET * budget && !self.in_debt;
        let limit = self.limit_pages as f64;
        let charge = charge_pages as f64;
        let growth = charge / (self.last_charge_pages.max(1) as f64);
        let growing = growth > 1.0 + GROWTH;
        self.last_charge_pages = charge_pages;
        self.small = charge_pages < self.floor_pages && share <= self.target;
        if self.small {
            // Too little to save anything yet (a program starting).
            return (self.limit_pages, share);
        }
        self.tick_cold_age(share, in_budget);
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
    let mut crowding = Crowding::new(control.background_ns());
    // Until told to stop, or the sender goes.
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(TICK) {
        let now = Instant::now();
        let charge = control.charge();
        controller.swapped_out(control.swapped(), control.on_file());
        let crowded_ns = crowding.tick(control.background_ns());
        let (limit, share) = controller.tick(now - last, control.stall_ns() + crowded_ns, charge);
        control.set_limit(limit);
        control.set_cold_age_ms(controller.cold_age_ms());
        last = now;
        samples.push(Sample {
            at: now - start,
            limit_pages: limit,
            charge_pages: charge,
            stall_share: share,
            cold_age_ms: controller.cold_age_ms(),
        });
    }
    control.set_limit(0);
    control.set_cold_age_ms(0);
    samples
}

/// The reclaimers' CPU time that ran while no CPU was idle: the
/// program's own time taken (its threads could have run there), counted
/// as stall. Where a CPU stood idle, work beside the program cost it
/// nothing (a single-threaded program on two CPUs); where the program
/// keeps every CPU busy (a server and its clients), every reclaimer
/// second is a second of its. Machine-wide idle time from `/proc/stat`
/// (its 10 ms resolution is fine at [`TICK`]); without it, nothing counts.
#[derive(Debug)]
struct Crowding {
    background_ns: u64,
    idle_ns: Option<u64>,
    /// So far.
    crowded_ns: u64,
}

impl Crowding {
    fn new(background_ns: u64) -> Self {
        Self {
            background_ns,
            idle_ns: idle_ns(),
            crowded_ns: 0,
        }
    }

    /// The crowded time so far, after a tick whose reclaimers' total is
    /// `background_ns`.
    fn tick(&mut self, background_ns: u64) -> u64 {
        let worked = background_ns.saturating_sub(self.background_ns);
        self.background_ns = self.background_ns.max(background_ns);
        let idle = idle_ns();
        if let (Some(now), Some(before)) = (idle, self.idle_ns) {
            self.crowded_ns += crowded(worked, now.saturating_sub(before));
        }
        self.idle_ns = idle;
        self.crowded_ns
    }
}

/// Of `worked` ns of background CPU time in a tick in which the machine's
/// CPUs stood idle `idle` ns together, what could only have been taken
/// from the program.
fn crowded(worked: u64, idle: u64) -> u64 {
    worked.saturating_sub(idle)
}

/// Idle time of all CPUs together since boot, ns (`idle` and `iowait` of
/// `/proc/stat`'s `cpu` line, in clock ticks).
fn idle_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let ticks = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks * (1_000_000_000 / hz as u64))
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
    /// Shortest cold age set, ms (0: none was).
    pub min_cold_age_ms: u32,
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
        min_cold_age_ms: samples
            .iter()
            .map(|s| s.cold_age_ms)
            .filter(|&a| a > 0)
            .min()
            .unwrap_or(0),
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
        assert_eq!(c.cold_age_ms(), 0, "no page leaves before pressure");
    }

    #[test]
    fn nothing_more_leaves_while_bringing_it_all_back_would_pass_the_budget() {
        let mut c = Controller::new(0.10, GB);
        let charge = GB / PAGE / 4;
        settle(&mut c, charge);
        // A quiet run swapped out all it could pay for: 10% of the
        // ticks' time at SWAPIN_COST_NS a page.
        let wall_ns = (c.wall_ns + TICK.as_nanos() as u64) as f64;
        let affordable = (c.target_share() * wall_ns / SWAPIN_COST_NS) as usize;
        c.swapped_out(affordable + 1, 0);
        let (held, _) = c.tick(TICK, 0, charge);
        assert_eq!(held, charge, "no probe under the charge");
        assert_eq!(c.cold_age_ms(), 0, "no cold page leaves");
        // Time pays the debt off: probing again.
        for _ in 0..4 {
            c.tick(TICK, 0, charge);
        }
        let (probed, _) = c.tick(TICK, 0, charge);
        assert!(probed < charge && c.cold_age_ms() > 0, "{probed}");
    }

    #[test]
    fn pages_on_the_swap_file_weigh_a_device_read_each() {
        let mut c = Controller::new(0.10, GB);
        let charge = GB / PAGE / 4;
        settle(&mut c, charge);
        // What the run could afford to bring back from the pool is too
        // much on the file.
        let wall_ns = (c.wall_ns + TICK.as_nanos() as u64) as f64;
        let pooled = (c.target_share() * wall_ns / SWAPIN_COST_NS) as usize / 2;
        c.swapped_out(pooled, 0);
        let (probed, _) = c.tick(TICK, 0, charge);
        assert!(
            probed < charge && c.cold_age_ms() > 0,
            "in budget: {probed}"
        );
        let mut c2 = c.clone();
        c2.swapped_out(pooled, pooled);
        let (held, _) = c2.tick(TICK, 0, charge);
        assert_eq!(held, probed, "on the file: held, no further probe");
        assert_eq!(c2.cold_age_ms(), 0, "no cold page leaves");
        // The same pages in the pool: probing on.
        c.swapped_out(pooled, 0);
        let (next, _) = c.tick(TICK, 0, charge);
        assert!(next < probed, "{next} after {probed}");
    }

    #[test]
    fn the_cold_age_shortens_while_quiet_and_lengthens_fast_on_stalls() {
        let mut c = Controller::new(0.05, GB);
        let charge = GB / PAGE / 2;
        // Quiet ticks younger than the age leave it as it is: no page is
        // that old yet.
        let mut young = Duration::ZERO;
        while (young + TICK).as_secs_f64() * 1e3 < COLD_AGE_START_MS {
            c.tick(TICK, 0, charge);
            young += TICK;
            assert_eq!(f64::from(c.cold_age_ms()), COLD_AGE_START_MS);
        }
        c.tick(TICK, 0, charge);
        let start = c.cold_age_ms();
        assert!(start > 0 && f64::from(start) < COLD_AGE_START_MS);
        // Quiet: down to the shortest, never under it.
        let mut ticks = 1;
        while f64::from(c.cold_age_ms()) > COLD_AGE_MIN_MS && ticks < 100 {
            c.tick(TICK, 0, charge);
            ticks += 1;
        }
        assert_eq!(f64::from(c.cold_age_ms()), COLD_AGE_MIN_MS);
        assert!(ticks > 5, "{ticks} ticks: a probe, not a jump");
        // A tick spent waiting, far over the target: twice as long at
        // once; then held while the run's wait is over its budget, and no
        // page leaves meanwhile.
        let tick_ns = TICK.as_nanos() as u64;
        c.tick(TICK, tick_ns, charge);
        assert_eq!(c.cold_age_ms, 2.0 * COLD_AGE_MIN_MS);
        assert_eq!(c.cold_age_ms(), 0);
        c.tick(TICK, tick_ns, charge);
        assert_eq!(c.cold_age_ms, 2.0 * COLD_AGE_MIN_MS);
        // Stalls that go on: up to the longest, never over it.
        let mut stall = tick_ns;
        for _ in 0..100 {
            stall += tick_ns / 2;
            c.tick(TICK, stall, charge);
        }
        assert_eq!(c.cold_age_ms, COLD_AGE_MAX_MS);
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
    fn background_work_counts_only_where_no_cpu_stood_idle() {
        assert_eq!(crowded(100, 250), 0, "an idle CPU took it");
        assert_eq!(crowded(100, 0), 100, "every CPU busy");
        assert_eq!(crowded(100, 40), 60);
        assert!(idle_ns().is_some(), "/proc/stat reads");
        let mut c = Crowding::new(1_000);
        // A total that goes back (a slot swept) counts nothing.
        let before = c.crowded_ns;
        assert_eq!(c.tick(500), before);
    }

    #[test]
    fn a_summary_reads_the_ticks() {
        let s = |limit, charge, share, cold_age_ms| Sample {
            at: Duration::ZERO,
            limit_pages: limit,
            charge_pages: charge,
            stall_share: share,
            cold_age_ms,
        };
        let sum = summarize(&[
            s(100, 50, 0.0, 0),
            s(80, 70, 0.1, 700),
            s(90, 60, 0.05, 900),
        ]);
        assert_eq!(sum.min_cold_age_ms, 700);
        assert_eq!(sum.min_limit_bytes, 80 * PAGE);
        assert_eq!(sum.end_limit_bytes, 90 * PAGE);
        assert_eq!(sum.mean_charge_bytes, 60 * PAGE);
        assert!((sum.stall_share - 0.05).abs() < 1e-9);
        assert_eq!(summarize(&[]), Summary::default());
    }
}
