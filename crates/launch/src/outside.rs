//! `uzswap run` of a statically linked program: the LD_PRELOAD library
//! cannot enter it, so the out-of-process pager ([`remote`]) pages it from
//! a thread of `uzswap run` itself. The settings that apply are the store's
//! and the limit (fixed, or moved by `--max-slowdown`'s controller through
//! the same shared-limit file); the program's own children, if dynamic,
//! get the library as usual and share the limit.

use crate::report::{ProcessReport, ProgramStats};
use crate::run::{
    children_cpu, new_stats_dir, shared_limit_path, start_controller, Launch, LaunchError, Outcome,
};
use remote::PagerConfig;
use runtime::RuntimeStats;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Whether `command` names a statically linked program.
pub fn is_static_command(command: &[String]) -> bool {
    command
        .first()
        .and_then(|p| remote::resolve(p))
        .is_some_and(|p| remote::is_static(&p).unwrap_or(false))
}

/// The report of a process paged from outside, in the preloaded
/// processes' form.
pub fn report_of(pid: u32, limit_bytes: usize, pager: &remote::Pager) -> ProcessReport {
    let (p, swap) = (&pager.stats(), pager.swap_stats());
    let program = ProgramStats {
        pid: pid as u64,
        limit_bytes: limit_bytes as u64,
        peak_rss_bytes: p.peak_rss_bytes,
        regions: p.ranges_registered,
        ..ProgramStats::default()
    };
    let runtime = RuntimeStats {
        resident_pages: p.resident_pages,
        charged_pages: p.resident_pages + p.pool_charged_pages,
        limit_pages: p.limit_pages,
        faults: p.faults,
        zero_faults: p.zero_faults,
        swapin_faults: p.swapin_faults,
        folio_swapins: p.folio_swapins,
        around_pages: p.around_pages,
        evicted_pages: p.evicted_pages,
        pgsteal_proactive: p.pgsteal_proactive,
        evict_failures: p.evict_failures,
        stall_ns: p.stall_ns,
        wp_faults: p.wp_faults,
        kernel_faults: true,
        ..RuntimeStats::default()
    };
    // The syscall guard from outside, in the in-process guard's names: a
    // call held by the filter is its trap, and its guarded call.
    let guard = p.guarded.then(|| guard::Counters {
        traps: p.syscall_notifications,
        guarded_calls: p.syscall_notifications,
        unknown_syscalls: p.syscall_unknown,
        unknown_buffers: p.syscall_unknown_buffers,
        pinned_bytes: p.syscall_pinned_bytes,
        registered: p.syscall_registered,
        ..Default::default()
    });
    ProcessReport {
        program,
        guard,
        runtime,
        swap,
    }
}

/// The live counters of a process paged from outside, served where
/// `uzswap stats PID` looks for the process's own (`RUN_DIR/PID.sock`), by
/// a thread of this process until dropped.
struct LiveStats {
    text: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    path: Option<std::path::PathBuf>,
}

impl LiveStats {
    /// Serves process `pid`'s counters (none until the first [`set`]);
    /// where the socket cannot be made, serves nothing.
    fn serve(pid: u32) -> Self {
        let text = Arc::new(Mutex::new(String::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let bound = crate::rundir::run_dir().ok().and_then(|dir| {
            let path = dir.join(format!("{pid}.sock"));
            let listener = crate::rundir::bind_stats_socket(&path)?;
            listener.set_nonblocking(true).ok()?;
            Some((path, listener))
        });
        let Some((path, listener)) = bound else {
            return LiveStats {
                text,
                stop,
                thread: None,
                path: None,
            };
        };
        let (t, s) = (text.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("uzswap/stats".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((mut conn, _)) => {
                            let body = t.lock().map(|g| g.clone()).unwrap_or_default();
                            let _ = std::io::Write::write_all(&mut conn, body.as_bytes());
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                    }
                }
            })
            .ok();
        LiveStats {
            text,
            stop,
            thread,
            path: Some(path),
        }
    }

    fn set(&self, report: &ProcessReport) {
        if let Ok(mut g) = self.text.lock() {
            *g = report.render();
        }
    }
}

impl Drop for LiveStats {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// After a pager error on a running process: every page back, or, where
/// that fails too, the process killed (it would read zeros where its
/// stored pages were).
fn give_back_or_kill(pid: u32, pager: remote::Pager) {
    if let Err(e) = pager.release() {
        kill_for_lost_pages(pid, &e);
    }
}

fn kill_for_lost_pages(pid: u32, e: &remote::PagerError) {
    eprintln!("uzswap: process {pid}'s pages could not all be given back ({e}): it is stopped");
    // SAFETY: kill with integers.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// The pager's settings from a run's: the store's, the limit, and the
/// shared-limit file through which a controller moves it.
fn pager_config(
    settings: &crate::Settings,
    shared_limit_file: Option<std::path::PathBuf>,
) -> PagerConfig {
    let mut swap = settings.runtime_config().swap;
    // The pager has no adaptive split (the runtime's `split.rs`): the pool
    // gets half the limit unless `--pool-limit` says otherwise, and never
    // more than seven eighths (the pager keeps an eighth resident).
    if settings.charge_pool {
        let limit = settings.limit_bytes;
        let pool = settings.pool_limit_bytes.unwrap_or(limit / 2);
        swap.pool_limit_bytes = Some(pool.min(limit - limit / 8).max(common::PAGE_SIZE));
    }
    PagerConfig {
        limit_bytes: settings.limit_bytes,
        swap,
        shared_limit_file,
        charge_pool: settings.charge_pool,
        user_mode_only: settings.user_mode_only,
        record_file: settings.record.clone(),
        follow_faults: settings.pager_follows_faults,
    }
}

/// `uzswap attach`: a running process paged from outside.
#[derive(Debug, Clone)]
pub struct Attach {
    pub settings: crate::Settings,
    /// `--max-slowdown`, as for `uzswap run`.
    pub max_slowdown: Option<f64>,
    pub pid: u32,
}

/// How an attachment ended.
#[derive(Debug)]
pub struct AttachOutcome {
    /// The process exited, or the attachment was stopped (it runs on).
    pub ended: remote::Ended,
    /// Pages given back at the end.
    pub pages_back: usize,
    pub elapsed: std::time::Duration,
    pub report: ProcessReport,
    pub control: Option<Vec<crate::control::Sample>>,
}

impl Attach {
    /// Pages the process until it exits or `stop` is set, then gives every
    /// page back. `on_attached` runs once the process is paged.
    pub fn run(
        &self,
        stop: &std::sync::atomic::AtomicBool,
        on_attached: impl FnOnce() + Send,
    ) -> Result<AttachOutcome, LaunchError> {
        self.settings.validate()?;
        if self.settings.user_mode_only {
            return Err(LaunchError::AttachUserModeOnly);
        }
        let dir = new_stats_dir("uzswap-attach")?;
        let shared = shared_limit_path(&self.settings, &dir);
        let config = pager_config(&self.settings, Some(shared));
        let controller = start_controller(self.max_slowdown, &self.settings, &dir)?;
        let start = Instant::now();
        let pid = self.pid;
        let outside = |source| LaunchError::Outside { pid, source };
        // One thread attaches, serves and releases: it is the tracer.
        let result = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut pager = remote::attach(pid as i32, &config).map_err(outside)?;
                    on_attached();
                    let live = LiveStats::serve(pid);
                    let limit = config.limit_bytes;
                    let ended = pager.run_until(stop, &mut |p| {
                        live.set(&report_of(pid, limit, p));
                    });
                    drop(live);
                    let report = report_of(pid, config.limit_bytes, &pager);
                    let ended = match ended {
                        Ok(ended) => ended,
                        Err(e) => {
                            // The process runs on: its pages go back before
                            // the error is told (closing the userfaultfd
                            // with pages stored would leave zeros there).
                            give_back_or_kill(pid, pager);
                            return Err(outside(e));
                        }
                    };
                    let pages_back = match ended {
                        remote::Ended::Stopped => match pager.release() {
                            Ok(n) => n,
                            Err(e) => {
                                kill_for_lost_pages(pid, &e);
                                return Err(outside(e));
                            }
                        },
                        remote::Ended::Exited => 0,
                    };
                    Ok((ended, pages_back, report))
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(LaunchError::Controller(
                        "the pager's thread panicked".into(),
                    ))
                })
        });
        let control = controller.map(crate::control::Running::finish);
        let _ = std::fs::remove_dir_all(&dir);
        let (ended, pages_back, report) = result?;
        Ok(AttachOutcome {
            ended,
            pages_back,
            elapsed: start.elapsed(),
            report,
            control,
        })
    }
}

impl Launch {
    /// [`Launch::run`] for a statically linked program.
    pub(crate) fn run_outside(&self, on_start: impl FnOnce(u32)) -> Result<Outcome, LaunchError> {
        self.settings.validate()?;
        let dir = new_stats_dir("uzswap-run")?;
        let cmd = self.run_command(&dir)?;
        let shared = shared_limit_path(&self.settings, &dir);
        let controller = self.start_controller(&dir)?;
        let config = pager_config(&self.settings, (!self.per_process_limit).then_some(shared));
        let (user0, sys0) = children_cpu();
        let start = Instant::now();
        let name = self.command.join(" ");
        let (tx, rx) = std::sync::mpsc::channel();
        // The pager's thread starts the program: it is the program's tracer.
        let pager = std::thread::Builder::new()
            .name("uzswap/remote".into())
            .spawn(move || {
                let (child, pager) = remote::spawn(cmd, &config)?;
                let _ = tx.send(child.id());
                let report = match pager {
                    Ok(mut pager) => {
                        let live = LiveStats::serve(child.id());
                        let limit = config.limit_bytes;
                        let r = pager.run_until(&AtomicBool::new(false), &mut |p| {
                            live.set(&report_of(child.id(), limit, p));
                        });
                        drop(live);
                        if let Err(e) = &r {
                            eprintln!(
                                "uzswap: paging {} from outside failed: {e}; it is stopped",
                                child.id()
                            );
                            // SAFETY: kill with integers: the program could
                            // wait forever on a page nobody serves.
                            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
                        }
                        let report = report_of(child.id(), config.limit_bytes, &pager);
                        (Some(report), pager.into_listener())
                    }
                    Err(e) => {
                        eprintln!("uzswap: {} runs unpaged: {e}", child.id());
                        (None, None)
                    }
                };
                Ok::<_, std::io::Error>((child, report))
            })
            .map_err(|source| LaunchError::Spawn {
                cmd: name.clone(),
                source,
            })?;
        if let Ok(pid) = rx.recv() {
            on_start(pid);
        }
        let joined = pager
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the pager's thread panicked")));
        let (mut child, (report, listener)) = joined.map_err(|source| LaunchError::Spawn {
            cmd: name.clone(),
            source,
        })?;
        let status = child
            .wait()
            .map_err(|source| LaunchError::Spawn { cmd: name, source });
        // Children the program left running still make calls the filter
        // sends here: answered until they have all exited.
        if let Some(listener) = listener {
            listener.allow_until_hung_up();
        }
        crate::run::finish(status, start, (user0, sys0), controller, &dir, report)
    }
}
