//! The pager follows the faults: while a single-threaded program faults
//! often, the pager thread runs on that thread's CPU, as a `SCHED_IDLE`
//! thread (`uzswap run --pager-any-cpu` turns it off).
//!
//! A fault served from outside is a round trip between two threads: the
//! faulting thread sleeps in the kernel, the pager reads the fault, maps
//! the page and wakes the thread. Where the two run on different CPUs the
//! wake-up is an inter-processor interrupt to a CPU that went idle when the
//! thread slept; on a virtual machine whose idle CPUs halt (this project's
//! VM: `haltpoll` with `guest_halt_poll_ns` 0) that is a VM exit and the
//! host's scheduling, tens of µs a fault. On one CPU the round trip is two
//! context switches and no interrupt.
//!
//! Moving the pager there is not enough: the scheduler wakes the thread on
//! an idle CPU rather than on the busy one it slept on, and balances the
//! two apart. It keeps them together where the pager is a `SCHED_IDLE`
//! thread that sleeps when it has nothing to do (no spinning): a CPU that
//! runs only such threads counts as idle when a woken thread is placed
//! (`sched_idle_cpu`), so the program's thread wakes where it slept, and
//! the pager takes none of its time while it runs. The pager moves while
//! the thread sleeps in the fault it is about to serve (moving beside it
//! while it ran had the scheduler move it to the other CPU, every time),
//! and looks where it ran every [`PLACE_INTERVAL`]: the scheduler still
//! wakes it elsewhere now and then.
//!
//! Measured (`randpage-static`, 256 MiB under 128M, lzo-rle, interleaved,
//! root): 0.57x the time and 0.50x the CPU of the pager left on any CPU.
//!
//! A `SCHED_IDLE` thread runs only when nothing else on its CPU wants to.
//! With more busy threads than CPUs a pager there would hardly run, and
//! every fault would wait (beside four CPU hogs: 14x the time); beside a
//! program's other threads it would wait behind them (a Go program's
//! memory went past its limit, in a run before the loop's eviction
//! below). So the pager follows only a program of one thread that faults
//! often ([`BUSY_FAULTS`] an interval), on a machine with no more runnable
//! threads than the pager's CPUs besides itself (`/proc/loadavg`),
//! deciding every [`FOLLOW_INTERVAL`]. Where it waited for its CPU more
//! than half an interval while another thread than the faulting one ran
//! (`/proc/.../schedstat`), or where the [`Watchdog`] found it runnable
//! and hardly running at two looks [`WATCH_INTERVAL`] apart (a
//! `SCHED_IDLE` thread that does not run cannot see that itself), it goes
//! back to `SCHED_OTHER` on any CPU, for a back-off that doubles from
//! [`BACKOFF_MIN`] to [`BACKOFF_MAX`]. Leaving `SCHED_IDLE` needs
//! `CAP_SYS_NICE` (or an `RLIMIT_NICE` of 20): without it the pager never
//! enters it, and does not follow.
//!
//! On one CPU the program runs between the pager's services, so a fault
//! is always waiting when the pager reads the next: the pager's loop
//! evicts once the charge is a batch over the limit, before it serves on
//! (`Pager::serve_uffd_events`); without that, the program's peak passed
//! the limit by a fifth.
//!
//! The kernel tells the pager which thread faulted
//! (`UFFD_FEATURE_THREAD_ID`), not on which CPU: `/proc/TID/stat` does
//! (its `processor` field, where the thread last ran; read with
//! `common::proc_stat`, as its threads and state are). The program's
//! threads keep their own affinity and policy: only the pager moves.
//!
//! The choice is pure ([`decide`]); [`Follower`] reads the files and
//! makes the system calls.

use common::proc_stat::{self, ProcStat};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the pager decides whether to follow the faults (their rate,
/// the program's threads, the machine's load, its own waits for a CPU).
pub(crate) const FOLLOW_INTERVAL: Duration = Duration::from_millis(10);
/// How often a following pager looks where the faulting thread ran.
pub(crate) const PLACE_INTERVAL: Duration = Duration::from_millis(1);
/// Faults an interval for the pager to follow them.
pub(crate) const BUSY_FAULTS: u64 = 16;
/// The first back-off after the pager waited for its CPU too long.
pub(crate) const BACKOFF_MIN: Duration = Duration::from_millis(100);
/// The longest back-off.
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(16);
/// How long the watchdog lets a following pager stay runnable without
/// making progress.
pub(crate) const WATCH_INTERVAL: Duration = Duration::from_millis(5);

/// The time a thread ran or waited on a run queue: the 1st or 2nd field
/// of `/proc/.../schedstat`, nanoseconds.
pub(crate) fn schedstat_field(schedstat: &str, n: usize) -> Option<Duration> {
    let ns: u64 = schedstat.split_ascii_whitespace().nth(n)?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The number of threads runnable now on the whole machine (the 4th field
/// of `/proc/loadavg`, `running/total`; the reader counts itself).
pub(crate) fn runnable_of(loadavg: &str) -> Option<usize> {
    loadavg
        .split_ascii_whitespace()
        .nth(3)?
        .split_once('/')?
        .0
        .parse()
        .ok()
}

/// Whether a `/proc/.../status` text's effective capabilities hold
/// `CAP_SYS_NICE` (bit 23).
pub(crate) fn has_cap_sys_nice(status: &str) -> bool {
    const CAP_SYS_NICE: u32 = 23;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0)
}

/// What the pager saw over one interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Look {
    /// Faults served.
    pub faults: u64,
    /// Threads of the faulting thread's process, if known.
    pub threads: Option<usize>,
    /// Threads runnable on the machine at the look, the pager counted.
    pub runnable: usize,
    /// Where the last faulting thread ran, if known.
    pub seen_cpu: Option<usize>,
    /// How long the pager waited for a CPU, how long the last faulting
    /// thread ran meanwhile (a wait for that thread is no starvation: it
    /// has all it needs), and the interval's length.
    pub waited: Duration,
    pub program_ran: Duration,
    pub interval: Duration,
}

/// Where the pager runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// On this CPU alone, as a `SCHED_IDLE` thread.
    On(usize),
    /// On any CPU it was allowed, at the normal priority.
    Anywhere,
    /// Anywhere, and not back for a back-off: while it followed, it waited
    /// for its CPU more than half the interval.
    Starved,
}

/// Where the pager should run after an interval in which it saw `look`,
/// following (`following`) or not. It follows a busy single-threaded
/// program's faulting thread to a CPU it may use, unless there is no
/// choice (one CPU allowed) or more threads are runnable than it has CPUs
/// besides itself; it stops when faults come rarely, and backs off when it
/// was starved of its CPU all the same.
pub(crate) fn decide(look: &Look, allowed: &[usize], following: bool) -> Place {
    if following && look.waited.saturating_sub(look.program_ran) * 2 > look.interval {
        return Place::Starved;
    }
    match look.seen_cpu {
        Some(cpu)
            if allowed.len() > 1
                && allowed.contains(&cpu)
                && look.faults >= BUSY_FAULTS
                && look.threads == Some(1)
                && look.runnable <= allowed.len() + 1 =>
        {
            Place::On(cpu)
        }
        _ => Place::Anywhere,
    }
}

/// The pager thread's place: the CPUs it was allowed at the start, where
/// it is pinned now, and what it saw since its last look.
#[derive(Debug)]
pub(crate) struct Follower {
    allowed: Vec<usize>,
    /// The CPU it is pinned to, as a `SCHED_IDLE` thread.
    current: Option<usize>,
    faults: u64,
    last_look: Instant,
    last_place: Instant,
    /// The last faulting thread's files, kept open.
    thread: ThreadFiles,
    /// The pager thread's own `schedstat`, and its wait at the last look.
    own_schedstat: std::fs::File,
    last_waited: Duration,
    backoff: Duration,
    backed_off_until: Option<Instant>,
    watchdog: Watchdog,
}

impl Follower {
    /// A follower for the calling thread (the pager's), with the CPUs that
    /// thread may use now. `None` where it could not leave `SCHED_IDLE`
    /// once in it, where its affinity or its waits cannot be read, where it
    /// may use one CPU only, or where its watchdog cannot start.
    pub fn for_this_thread() -> Option<Self> {
        if !may_leave_sched_idle() {
            return None;
        }
        let allowed = this_threads_cpus()?;
        if allowed.len() < 2 {
            return None;
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let own_schedstat = std::fs::File::open("/proc/thread-self/schedstat").ok()?;
        let last_waited = schedstat_field(&read_from_start(&own_schedstat)?, 1)?;
        let watchdog = Watchdog::start(tid, allowed.clone())?;
        Some(Self {
            allowed,
            current: None,
            faults: 0,
            last_look: Instant::now(),
            last_place: Instant::now(),
            thread: ThreadFiles::default(),
            own_schedstat,
            last_waited,
            backoff: BACKOFF_MIN,
            backed_off_until: None,
            watchdog,
        })
    }

    /// Whether the pager is pinned where the faults come from.
    pub fn following(&self) -> bool {
        self.current.is_some()
    }

    /// A fault of thread `tid` is about to be served, the thread asleep
    /// until it is: every [`FOLLOW_INTERVAL`] the pager decides whether to
    /// follow ([`decide`]), and while it follows it looks where the thread
    /// ran every [`PLACE_INTERVAL`] and moves there now.
    pub fn saw(&mut self, tid: i32) {
        self.faults += 1;
        if self.last_look.elapsed() >= FOLLOW_INTERVAL || self.rescued() {
            self.look(Some(tid));
        } else if self.current.is_some() && self.last_place.elapsed() >= PLACE_INTERVAL {
            self.last_place = Instant::now();
            let cpu = self.thread.stat(tid).map(|s| s.processor);
            if let Some(cpu) = cpu.filter(|c| self.allowed.contains(c)) {
                self.go_to(cpu);
            }
        }
    }

    /// Between faults: once none has come for two intervals (or the
    /// watchdog moved the pager), it decides again.
    pub fn follow(&mut self) {
        if self.last_look.elapsed() >= 2 * FOLLOW_INTERVAL || self.rescued() {
            self.look(None);
        }
    }

    /// Whether the watchdog gave the pager every CPU back since the last
    /// look.
    fn rescued(&self) -> bool {
        self.current.is_some() && self.watchdog.shared.rescued.load(Ordering::Acquire)
    }

    /// Decides on the interval since the last look, `tid` the thread whose
    /// fault is being served.
    fn look(&mut self, tid: Option<i32>) {
        let waited_total = read_from_start(&self.own_schedstat)
            .as_deref()
            .and_then(|s| schedstat_field(s, 1));
        let Some(waited_total) = waited_total else {
            self.release();
            return;
        };
        let stat = tid.and_then(|t| self.thread.stat(t));
        let look = Look {
            faults: std::mem::take(&mut self.faults),
            threads: stat.map(|s| s.threads),
            runnable: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .as_deref()
                .and_then(runnable_of)
                .unwrap_or(usize::MAX),
            seen_cpu: stat.map(|s| s.processor),
            waited: waited_total.saturating_sub(self.last_waited),
            program_ran: tid
                .and_then(|t| self.thread.ran_since_last(t))
                .unwrap_or_default(),
            interval: self.last_look.elapsed(),
        };
        self.last_look = Instant::now();
        self.last_place = self.last_look;
        self.last_waited = waited_total;
        let place = if self.watchdog.shared.rescued.swap(false, Ordering::AcqRel) {
            Place::Starved
        } else if self.backed_off_until.is_some_and(|t| Instant::now() < t) {
            return;
        } else {
            decide(&look, &self.allowed, self.current.is_some())
        };
        match place {
            Place::On(cpu) => {
                self.backed_off_until = None;
                if self.current.is_some() {
                    self.backoff = BACKOFF_MIN;
                }
                self.go_to(cpu);
            }
            Place::Anywhere => self.release(),
            Place::Starved => {
                self.release();
                self.backed_off_until = Some(Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
            }
        }
    }

    /// Pins the pager to `cpu` as a `SCHED_IDLE` thread; where a call is
    /// refused, it goes back to where it may run anywhere. The watchdog is
    /// told before the policy changes, and only the pager clears that: a
    /// pager starved between the two calls, or put back by the watchdog
    /// while it moved, is still watched.
    fn go_to(&mut self, cpu: usize) {
        if self.current == Some(cpu) {
            return;
        }
        self.watchdog
            .shared
            .following
            .store(true, Ordering::Release);
        if !set_this_threads_cpus(&[cpu]) || !set_sched_idle(0, true) {
            self.current = None;
            self.give_back();
            return;
        }
        self.current = Some(cpu);
    }

    /// Gives the pager thread every CPU it was allowed, at the normal
    /// priority.
    pub fn release(&mut self) {
        if self.current.take().is_some() {
            self.give_back();
        }
    }

    /// The calls of [`Follower::release`], then the watchdog told.
    fn give_back(&self) {
        set_sched_idle(0, false);
        set_this_threads_cpus(&self.allowed);
        self.watchdog
            .shared
            .following
            .store(false, Ordering::Release);
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.release();
    }
}

/// What the pager and its watchdog share.
#[derive(Debug, Default)]
struct WatchShared {
    /// The pager is pinned, as a `SCHED_IDLE` thread.
    following: AtomicBool,
    /// The watchdog gave it every CPU back at the normal priority.
    rescued: AtomicBool,
    stop: AtomicBool,
}

/// A thread at the normal priority that looks at a following pager every
/// [`WATCH_INTERVAL`]: found runnable (state `R`) and starved (it ran less
/// than a tenth of the interval) twice in a row, the pager is waiting
/// behind other threads, and cannot see it itself; the watchdog makes it
/// `SCHED_OTHER` on every CPU it was allowed, and says so (`rescued`). The
/// thread it follows counts among those others: a program that computes
/// for a while without faulting does not need the pager's CPU, but the
/// pager's own work does (registering the program's new mappings before
/// it fills them, eviction, cold passes).
#[derive(Debug)]
struct Watchdog {
    shared: Arc<WatchShared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(pager_tid: i32, allowed: Vec<usize>) -> Option<Self> {
        let shared = Arc::new(WatchShared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("uzswap/watch".into())
                .spawn(move || watch(pager_tid, &allowed, &shared))
                .ok()?
        };
        Some(Self {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// The watchdog's loop.
fn watch(pager_tid: i32, allowed: &[usize], shared: &WatchShared) {
    let mut pager = ThreadFiles::default();
    let mut last_ran = pager.ran_since_last(pager_tid);
    let mut stuck_looks = 0;
    while !shared.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(WATCH_INTERVAL);
        let ran = pager.ran_since_last(pager_tid);
        let starved = last_ran.is_some() && ran.is_some_and(|r| r < WATCH_INTERVAL / 10);
        last_ran = ran;
        let stuck =
            starved && shared.following.load(Ordering::Acquire) && pager.runnable(pager_tid);
        stuck_looks = if stuck { stuck_looks + 1 } else { 0 };
        if stuck_looks >= 2 {
            stuck_looks = 0;
            set_sched_idle(pager_tid, false);
            set_threads_cpus(pager_tid, allowed);
            shared.rescued.store(true, Ordering::Release);
        }
    }
}

/// A thread's `/proc/TID/stat` and `schedstat`, kept open: reading one
/// again from the start makes the kernel write it afresh, without an
/// `open` each time.
#[derive(Debug, Default)]
struct ThreadFiles {
    tid: i32,
    stat: Option<std::fs::File>,
    schedstat: Option<std::fs::File>,
    /// Its run time at the last reading.
    ran: Option<Duration>,
}

impl ThreadFiles {
    fn open(&mut self, tid: i32) {
        if self.tid != tid || self.stat.is_none() {
            let open = |f: &str| std::fs::File::open(format!("/proc/{tid}/{f}")).ok();
            self.tid = tid;
            self.stat = open("stat");
            self.schedstat = open("schedstat");
            self.ran = None;
        }
    }

    /// Thread `tid`'s stat now (its state, its process's threads, the CPU
    /// it last ran on).
    fn stat(&mut self, tid: i32) -> Option<ProcStat> {
        self.open(tid);
        proc_stat::parse(&read_from_start(self.stat.as_ref()?)?)
    }

    /// Whether thread `tid` is running or runnable now.
    fn runnable(&mut self, tid: i32) -> bool {
        self.stat(tid).is_some_and(|s| s.state == 'R')
    }

    /// How long thread `tid` ran since the last call for it (`None` the
    /// first time).
    fn ran_since_last(&mut self, tid: i32) -> Option<Duration> {
        self.open(tid);
        let now = schedstat_field(&read_from_start(self.schedstat.as_ref()?)?, 0)?;
        self.ran
            .replace(now)
            .map(|before| now.saturating_sub(before))
    }
}

/// A small `/proc` file read again from its start.
fn read_from_start(file: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 2048];
    let n = file.read_at(&mut buf, 0).ok()?;
    String::from_utf8(buf[..n].to_vec()).ok()
}

/// Whether the calling thread could go back from `SCHED_IDLE` to
/// `SCHED_OTHER` at nice 0: with `CAP_SYS_NICE`, or an `RLIMIT_NICE` of at
/// least 20.
fn may_leave_sched_idle() -> bool {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit to write.
    let nice_ok =
        unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut lim) } == 0 && lim.rlim_cur >= 20;
    nice_ok
        || has_cap_sys_nice(
            &std::fs::read_to_string("/proc/thread-self/status").unwrap_or_default(),
        )
}

/// Makes thread `tid` (0: the calling thread) `SCHED_IDLE` (`idle`) or
/// `SCHED_OTHER`; whether the kernel agreed.
fn set_sched_idle(tid: i32, idle: bool) -> bool {
    let policy = if idle {
        libc::SCHED_IDLE
    } else {
        libc::SCHED_OTHER
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a valid sched_param; `tid` is a thread of this process or 0.
    unsafe { libc::sched_setscheduler(tid, policy, &param) == 0 }
}

/// The CPUs the calling thread may run on.
pub(crate) fn this_threads_cpus() -> Option<Vec<usize>> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; 0 is the
    // calling thread.
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if r != 0 {
        return None;
    }
    Some(
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` is below CPU_SETSIZE, within `set`.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect(),
    )
}

/// Lets the calling thread run on `cpus` only; whether the kernel agreed.
fn set_this_threads_cpus(cpus: &[usize]) -> bool {
    set_threads_cpus(0, cpus)
}

/// Lets thread `tid` (0: the calling thread) run on `cpus` only; whether
/// the kernel agreed.
fn set_threads_cpus(tid: i32, cpus: &[usize]) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
        // SAFETY: `c` is below CPU_SETSIZE, within `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; `tid` is a
    // thread of this process or 0.
    unsafe { libc::sched_setaffinity(tid, std::mem::size_of_val(&set), &set) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicI32;

    /// A stat line as the kernel writes it, for a thread in `state` on
    /// `cpu`, named `comm`.
    fn stat_line(comm: &str, state: &str, cpu: usize) -> String {
        let mut fields: Vec<String> = (3..=52).map(|i| (i * 11).to_string()).collect();
        fields[0] = state.into();
        fields[39 - 3] = cpu.to_string();
        format!("4242 ({comm}) {}\n", fields.join(" "))
    }

    fn policy_of(tid: i32) -> i32 {
        // SAFETY: a thread of this process, or 0.
        unsafe { libc::sched_getscheduler(tid) }
    }

    /// The fields the follower reads of a stat line (`common::proc_stat`),
    /// whatever the thread's name.
    #[test]
    fn the_followers_stat_fields_are_read_after_the_name() {
        let processor = |l: &str| proc_stat::parse(l).map(|s| s.processor);
        let runnable = |l: &str| proc_stat::parse(l).is_some_and(|s| s.state == 'R');
        assert_eq!(processor(&stat_line("gomem", "S", 1)), Some(1));
        assert_eq!(processor(&stat_line("a b) (c d", "R", 7)), Some(7));
        assert_eq!(processor(&stat_line(") 9 9 9", "S", 3)), Some(3));
        assert!(runnable(&stat_line(") R R", "R", 0)));
        assert!(!runnable(&stat_line("R (R) R", "S", 0)));
        assert_eq!(processor("4242 (gomem) S 1 2 3"), None);
        assert_eq!(processor("no name at all"), None);
        assert!(!runnable(""));
    }

    #[test]
    fn schedstat_and_loadavg_fields_read() {
        let s = "275247785 29966262 1351\n";
        assert_eq!(
            schedstat_field(s, 0),
            Some(Duration::from_nanos(275_247_785))
        );
        assert_eq!(
            schedstat_field(s, 1),
            Some(Duration::from_nanos(29_966_262))
        );
        assert_eq!(schedstat_field("275247785\n", 1), None);
        assert_eq!(runnable_of("0.88 1.63 1.97 3/345 12345\n"), Some(3));
        assert_eq!(runnable_of("0.88 1.63 1.97 12/1345 12345"), Some(12));
        assert_eq!(runnable_of("0.88 1.63 1.97"), None);
        assert_eq!(runnable_of("0.88 1.63 1.97 x/345 1"), None);
    }

    #[test]
    fn cap_sys_nice_is_bit_23_of_the_effective_set() {
        assert!(has_cap_sys_nice("Name:\tx\nCapEff:\t000001fffeffffff\n"));
        assert!(has_cap_sys_nice("CapEff:\t0000000000800000\n"));
        assert!(!has_cap_sys_nice("CapEff:\t0000000000000000\n"));
        assert!(!has_cap_sys_nice("CapEff:\t00000000007fffff\n"));
        assert!(!has_cap_sys_nice("CapPrm:\t000001fffeffffff\n"));
        assert!(!has_cap_sys_nice(""));
    }

    fn look(faults: u64, seen_cpu: Option<usize>, waited_ms: u64) -> Look {
        Look {
            faults,
            threads: Some(1),
            runnable: 2,
            seen_cpu,
            waited: Duration::from_millis(waited_ms),
            program_ran: Duration::ZERO,
            interval: Duration::from_millis(10),
        }
    }

    #[test]
    fn a_busy_single_threaded_programs_cpu_is_followed_where_the_pager_may_run() {
        let both = [0, 1];
        assert_eq!(decide(&look(500, Some(1), 0), &both, false), Place::On(1));
        assert_eq!(decide(&look(500, Some(0), 1), &both, true), Place::On(0));
        // Not a CPU it may use; where it ran is not known.
        assert_eq!(
            decide(&look(500, Some(5), 0), &both, false),
            Place::Anywhere
        );
        assert_eq!(decide(&look(500, None, 0), &both, false), Place::Anywhere);
        // No choice to make.
        assert_eq!(decide(&look(500, Some(3), 0), &[3], false), Place::Anywhere);
        // A program of several threads, or of unknown threads.
        for threads in [Some(2), Some(12), None] {
            let l = Look {
                threads,
                ..look(500, Some(1), 0)
            };
            assert_eq!(decide(&l, &both, true), Place::Anywhere, "{threads:?}");
        }
    }

    #[test]
    fn rare_faults_leave_the_pager_anywhere() {
        let both = [0, 1];
        let few = BUSY_FAULTS - 1;
        assert_eq!(decide(&look(few, Some(1), 0), &both, true), Place::Anywhere);
        assert_eq!(
            decide(&look(BUSY_FAULTS, Some(1), 0), &both, true),
            Place::On(1)
        );
    }

    #[test]
    fn a_machine_with_more_runnable_threads_than_cpus_is_not_followed_on() {
        let both = [0, 1];
        let busy = |runnable| Look {
            runnable,
            ..look(500, Some(1), 0)
        };
        // The pager (which reads the count) and the program's thread.
        assert_eq!(decide(&busy(2), &both, false), Place::On(1));
        // And one more thread, which the other CPU runs.
        assert_eq!(decide(&busy(3), &both, true), Place::On(1));
        assert_eq!(decide(&busy(4), &both, false), Place::Anywhere);
        assert_eq!(decide(&busy(6), &both, true), Place::Anywhere);
    }

    #[test]
    fn a_pager_that_waited_for_its_cpu_behind_others_backs_off() {
        let both = [0, 1];
        assert_eq!(decide(&look(500, Some(1), 6), &both, true), Place::Starved);
        assert_eq!(decide(&look(500, Some(1), 5), &both, true), Place::On(1));
        // Waits while not following are the normal priority's: no back-off.
        assert_eq!(decide(&look(500, Some(1), 9), &both, false), Place::On(1));
        // Waits while the faulting thread itself ran are no starvation.
        let ran = |ms| Look {
            program_ran: Duration::from_millis(ms),
            ..look(500, Some(1), 9)
        };
        assert_eq!(decide(&ran(8), &both, true), Place::On(1));
        assert_eq!(decide(&ran(3), &both, true), Place::Starved);
    }

    #[test]
    fn the_files_of_a_real_thread_read() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let mut files = ThreadFiles::default();
        let stat = files.stat(tid).expect("its stat");
        assert!(this_threads_cpus().unwrap().contains(&stat.processor));
        assert!(stat.threads >= 1);
        assert_eq!(files.ran_since_last(tid), None, "the first reading");
        assert!(files.ran_since_last(tid).is_some());
    }

    /// A thread at the normal priority that spins on `cpu` until `stop`.
    fn busy_thread_on(cpu: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || {
            assert!(set_this_threads_cpus(&[cpu]));
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    }

    /// Runs `f` on a thread of its own (its affinity and policy are that
    /// thread's, not the test harness's), waiting for it.
    fn on_a_thread_of_its_own(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().expect("the test's thread");
    }

    /// Another thread pinned to the last allowed CPU faults often (as far
    /// as the follower knows): the follower moves the calling thread there
    /// as a `SCHED_IDLE` thread, and gives it every CPU back at the normal
    /// priority once the faults stop.
    #[test]
    fn the_follower_moves_to_the_faulting_threads_cpu_and_back() {
        on_a_thread_of_its_own(|| {
            let before = this_threads_cpus().unwrap();
            let Some(mut f) = Follower::for_this_thread() else {
                // One CPU, or no right to leave SCHED_IDLE: nothing changes.
                assert!(before.len() == 1 || !may_leave_sched_idle());
                assert_eq!(this_threads_cpus(), Some(before));
                assert_eq!(policy_of(0), libc::SCHED_OTHER);
                return;
            };
            let target = *before.last().unwrap();
            // The faulting thread: this test's process has more than one
            // thread, so the follower is told there is one.
            let (tid, stop) = (
                Arc::new(AtomicI32::new(0)),
                Arc::new(AtomicBool::new(false)),
            );
            let other = {
                let (tid, stop) = (tid.clone(), stop.clone());
                std::thread::spawn(move || {
                    assert!(set_this_threads_cpus(&[target]));
                    // SAFETY: gettid has no preconditions.
                    tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                })
            };
            let deadline = Instant::now() + Duration::from_secs(30);
            while tid.load(Ordering::SeqCst) == 0 {
                assert!(Instant::now() < deadline, "the other thread never started");
                std::thread::yield_now();
            }
            let tid = tid.load(Ordering::SeqCst);
            let mut rounds = 0;
            while this_threads_cpus() != Some(vec![target]) {
                assert!(Instant::now() < deadline, "never followed to {target}");
                let l = Look {
                    threads: Some(1),
                    ..look(BUSY_FAULTS, f.thread.stat(tid).map(|s| s.processor), 0)
                };
                // What `look` would do with one thread: decide, then move.
                if let Place::On(cpu) = decide(&l, &f.allowed, f.following()) {
                    f.go_to(cpu);
                }
                rounds += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(rounds >= 1);
            assert!(f.following());
            assert_eq!(policy_of(0), libc::SCHED_IDLE);
            // The faults stop: back to every CPU, at the normal priority.
            for _ in 0..2 {
                std::thread::sleep(2 * FOLLOW_INTERVAL);
                f.follow();
            }
            assert!(!f.following());
            assert_eq!(this_threads_cpus(), Some(before));
            assert_eq!(policy_of(0), libc::SCHED_OTHER);
            stop.store(true, Ordering::Relaxed);
            other.join().unwrap();
        });
    }

    /// Runs `test` on a thread of its own, with a follower for that thread
    /// (none where it cannot follow: nothing to test) and a busy thread at
    /// the normal priority on its first CPU, stopped however `test` ends.
    fn beside_a_busy_thread(test: impl FnOnce(&mut Follower, &[usize]) + Send + 'static) {
        struct Stop(Arc<AtomicBool>);
        impl Drop for Stop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        on_a_thread_of_its_own(move || {
            let before = this_threads_cpus().unwrap();
            let Some(mut f) = Follower::for_this_thread() else {
                return;
            };
            let stop = Stop(Arc::new(AtomicBool::new(false)));
            let hog = busy_thread_on(before[0], stop.0.clone());
            test(&mut f, &before);
            drop(stop);
            hog.join().unwrap();
        });
    }

    /// A following pager that stays runnable and does not run (the busy
    /// thread shares its CPU) is given every CPU back at the normal
    /// priority by the watchdog, which says so; the pager backs off at its
    /// next look.
    #[test]
    fn the_watchdog_rescues_a_pager_stuck_runnable() {
        beside_a_busy_thread(|f, before| {
            f.go_to(before[0]);
            assert_eq!(policy_of(0), libc::SCHED_IDLE);
            let deadline = Instant::now() + Duration::from_secs(30);
            // Runnable, hardly running: the watchdog must step in.
            while !f.watchdog.shared.rescued.load(Ordering::Acquire) {
                assert!(Instant::now() < deadline, "never rescued");
                std::hint::spin_loop();
            }
            assert_eq!(policy_of(0), libc::SCHED_OTHER);
            assert_eq!(this_threads_cpus().as_deref(), Some(before));
            f.follow();
            assert!(!f.following());
            // Backed off, once: the next back-off is twice the first.
            assert!(f.backed_off_until.is_some());
            assert_eq!(f.backoff, 2 * BACKOFF_MIN);
        });
    }

    /// Moves and returns in a loop, the watchdog looking all along (and
    /// stepping in where the pager, as a `SCHED_IDLE` thread, waits behind
    /// the busy thread on one of its CPUs): whatever the interleaving, a
    /// released pager is a `SCHED_OTHER` thread on every CPU it had, and
    /// the watchdog is told it does not follow.
    #[test]
    fn moves_and_returns_beside_the_watchdog_end_where_they_began() {
        beside_a_busy_thread(|f, before| {
            for round in 0..200 {
                f.go_to(before[round % before.len()]);
                if round % 3 == 0 {
                    // Long enough, now and then, for the watchdog's look.
                    std::thread::sleep(WATCH_INTERVAL);
                }
                f.release();
                assert_eq!(policy_of(0), libc::SCHED_OTHER, "round {round}");
                assert_eq!(
                    this_threads_cpus().as_deref(),
                    Some(before),
                    "round {round}"
                );
                assert!(!f.watchdog.shared.following.load(Ordering::Acquire));
            }
        });
    }
}
