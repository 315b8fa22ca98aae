//! A fixed `--limit` far under what the program keeps using, told while
//! the run goes on: a program thrashing under a guessed limit can run
//! tens of times slower than plain, and its user should not have to wait
//! for the end to learn why.
//!
//! A thread of `uzswap run` reads, every [`TICK`](crate::control::TICK),
//! how long the run's threads have waited on uzswap in all (the runtimes'
//! `stall_ns` in the shared-limit file, as the controller does). Once the
//! wait over the last [`WINDOW`] passes [`SHARE`] of it, it says so once,
//! on stderr. Policy ([`ThrashWatch`], readings in, verdict out) apart
//! from plumbing ([`Watching`]).

use runtime::LimitControl;
use std::collections::VecDeque;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the wait is measured over.
pub const WINDOW: Duration = Duration::from_secs(10);
/// Share of [`WINDOW`] waited past which the limit is too low: the
/// program runs at half its speed or less.
pub const SHARE: f64 = 0.5;

/// Whether a run's wait has passed [`SHARE`] of a window; says so once.
#[derive(Debug)]
pub struct ThrashWatch {
    window: Duration,
    /// Readings (time since the start, total stall) back to the newest
    /// one at least a window old.
    readings: VecDeque<(Duration, u64)>,
    told: bool,
}

impl Default for ThrashWatch {
    fn default() -> Self {
        Self::new(WINDOW)
    }
}

impl ThrashWatch {
    /// A watch over the last `window` ([`WINDOW`] for a run).
    pub fn new(window: Duration) -> Self {
        Self {
            window,
            readings: VecDeque::new(),
            told: false,
        }
    }

    /// A reading: the run's threads had waited `stall_ns` in all at `at`
    /// into the run. The share waited over the last window the first time
    /// it passes [`SHARE`], else `None`.
    pub fn reading(&mut self, at: Duration, stall_ns: u64) -> Option<f64> {
        self.readings.push_back((at, stall_ns));
        // Keep the newest reading that is at least a window old.
        while self
            .readings
            .get(1)
            .is_some_and(|&(t, _)| at.saturating_sub(t) >= self.window)
        {
            self.readings.pop_front();
        }
        let &(t0, s0) = self.readings.front()?;
        let span = at.saturating_sub(t0);
        if self.told || span < self.window {
            return None;
        }
        let share = stall_ns.saturating_sub(s0) as f64 / span.as_nanos() as f64;
        (share > SHARE).then(|| {
            self.told = true;
            share
        })
    }
}

/// The watch's thread over a run's shared limit.
pub struct Watching {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl Watching {
    /// Watches the run whose shared-limit file is `path` (made if the
    /// run's first runtime has not yet); `tell` is called with the share
    /// waited the first time it passes [`SHARE`] of a `window`.
    pub fn start(
        path: &Path,
        window: Duration,
        tell: impl FnOnce(f64) + Send + 'static,
    ) -> std::io::Result<Self> {
        let control = LimitControl::open(path)?;
        let (stop, stopped) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("uzswap-thrash".into())
            .spawn(move || watch(&control, window, &stopped, tell))?;
        Ok(Self { stop, thread })
    }

    /// Stops watching.
    pub fn finish(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }
}

fn watch(control: &LimitControl, window: Duration, stop: &Receiver<()>, tell: impl FnOnce(f64)) {
    let start = Instant::now();
    let mut w = ThrashWatch::new(window);
    while let Err(RecvTimeoutError::Timeout) = stop.recv_timeout(crate::control::TICK) {
        if let Some(share) = w.reading(start.elapsed(), control.stall_ns()) {
            tell(share);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread, on a real shared-limit file whose runtime reports
    /// waiting 90% of the time: told once a window has passed; and never
    /// on one whose runtime does not wait.
    #[test]
    fn the_watch_reads_the_runs_wait_from_its_shared_limit() {
        let dir = std::env::temp_dir().join(format!("uzswap-thrash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let watch_one = |name: &str, waiting: f64, at_most: Duration| {
            let path = dir.join(name);
            let runtime = runtime::SharedLimit::open(&path).unwrap();
            let (told, heard) = std::sync::mpsc::channel();
            let w = Watching::start(&path, Duration::from_secs(1), move |share| {
                let _ = told.send(share);
            })
            .unwrap();
            // The runtime's wait follows the clock, whatever the scheduling.
            let start = Instant::now();
            let mut added = 0u64;
            let mut share = None;
            while start.elapsed() < at_most && share.is_none() {
                let due = (start.elapsed().as_nanos() as f64 * waiting) as u64;
                runtime.add_stall(due - added.min(due));
                added = added.max(due);
                share = heard.recv_timeout(Duration::from_millis(50)).ok();
            }
            w.finish();
            (share, start.elapsed())
        };
        let (share, after) = watch_one("thrashing", 0.9, Duration::from_secs(6));
        let share = share.expect("a run waiting 90% of the time is told within 6 s");
        assert!(share > SHARE, "{share}");
        assert!(
            after >= Duration::from_secs(1),
            "told before a window passed: {after:?}"
        );
        // Two and a half windows.
        let (share, _) = watch_one("idle", 0.0, Duration::from_millis(2500));
        assert_eq!(share, None, "a run that does not wait is never told");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_window_mostly_waited_is_told_once() {
        let mut w = ThrashWatch::default();
        // Waiting 70% of every quarter second from the start: nothing
        // until a whole window has passed, then once.
        let mut told = Vec::new();
        for tick in 0..=80 {
            let at = secs(f64::from(tick) * 0.25);
            let stall = (at.as_nanos() as f64 * 0.7) as u64;
            if let Some(share) = w.reading(at, stall) {
                told.push((tick, share));
            }
        }
        assert_eq!(told.len(), 1, "{told:?}");
        let (tick, share) = told[0];
        assert_eq!(tick, 40, "told at 10 s, not before");
        assert!((share - 0.7).abs() < 1e-6, "{share}");
    }

    #[test]
    fn a_burst_of_waiting_within_a_bearable_window_is_not_told() {
        let mut w = ThrashWatch::default();
        let mut stall = 0u64;
        for tick in 0..=120 {
            let at = secs(f64::from(tick) * 0.25);
            // Four seconds of waiting all the time, out of every twelve.
            if tick % 48 < 16 {
                stall += 250_000_000;
            }
            assert_eq!(w.reading(at, stall), None, "tick {tick}");
        }
    }

    #[test]
    fn the_window_slides_past_a_quiet_start() {
        let mut w = ThrashWatch::default();
        let mut stall = 0u64;
        let mut told = None;
        for tick in 0..=160 {
            let at = secs(f64::from(tick) * 0.25);
            // Quiet for 20 s, then waiting 90% of the time.
            if tick > 80 {
                stall += 225_000_000;
            }
            if let Some(share) = w.reading(at, stall) {
                told.get_or_insert((tick, share));
            }
        }
        let (tick, share) = told.expect("told once the window is mostly waiting");
        assert!((100..=110).contains(&tick), "tick {tick}");
        assert!(share > SHARE, "{share}");
    }
}
