//! `uzswap attach PID` and `uzswap detach PID`: a running process paged
//! from outside (`launch::outside::Attach`), and the attachment ended
//! from another terminal.

use crate::compat::human_size;
use crate::run::{percent_arg, RuntimeArgs};
use clap::Args;
use launch::report::{self, RunReport, RunStats};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct AttachArgs {
    /// The settings of `uzswap run`; those of the swap store and the limit
    /// apply (a process paged from outside has no preloaded runtime).
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    /// As for `uzswap run`: the limit found from pressure; 5% when no
    /// --limit is given
    #[arg(long, value_parser = percent_arg)]
    pub max_slowdown: Option<f64>,
    /// Print nothing of uzswap's own.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write the counters to this file at the end, one `name value` per
    /// line (`uzswap run --stats-out`'s form).
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// The process to page: one of yours (any, as root).
    pub pid: u32,
}

/// Set by SIGINT or SIGTERM (`uzswap detach` sends SIGINT).
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Where `uzswap attach` leaves its own pid for `uzswap detach PID`.
fn marker(pid: u32) -> Result<PathBuf, String> {
    Ok(launch::rundir::run_dir()
        .map_err(|e| e.to_string())?
        .join(format!("attach-{pid}")))
}

pub fn attach(a: &AttachArgs) -> Result<(), String> {
    let max_slowdown = a.runtime.max_slowdown(a.max_slowdown);
    let settings = a.runtime.settings_for(a.max_slowdown)?;
    if let Some(path) = &settings.record {
        crate::run::make_record_file(path)?;
    }
    let job = launch::outside::Attach {
        settings: settings.clone(),
        max_slowdown,
        pid: a.pid,
    };
    let marker = marker(a.pid)?;
    // SAFETY: handlers that only store to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
    }
    let quiet = a.quiet;
    let limit = match max_slowdown {
        Some(s) => format!("the limit found for a {}% slowdown", s * 100.0),
        None => format!("a {} limit", human_size(settings.limit_bytes as u64)),
    };
    let outcome = job.run(&STOP, || {
        let _ = std::fs::write(&marker, std::process::id().to_string());
        if !quiet {
            eprintln!(
                "uzswap: paging process {} with {limit}; Ctrl-C (or `uzswap detach {}`) gives every page back",
                a.pid, a.pid
            );
        }
    });
    let _ = std::fs::remove_file(&marker);
    let o = outcome.map_err(|e| e.to_string())?;
    if let Some(path) = &a.stats_out {
        let r = RunReport {
            run: RunStats {
                processes: 1,
                elapsed_us: o.elapsed.as_micros() as u64,
                max_rss_bytes: o.report.program.peak_rss_bytes,
                ..RunStats::default()
            },
            total: o.report,
        };
        std::fs::write(path, r.render())
            .map_err(|e| format!("--stats-out {}: {e}", path.display()))?;
    }
    if !a.quiet {
        let s = report::Savings::of(&o.report);
        let how = match o.ended {
            remote::Ended::Exited => format!("process {} exited", a.pid),
            remote::Ended::Stopped => format!(
                "detached from process {}: {} pages given back",
                a.pid, o.pages_back
            ),
        };
        eprintln!(
            "uzswap: {how} after {:.1}s; {} evicted, {} swap-in faults; at the end {} swapped out in a {} pool: {} saved",
            o.elapsed.as_secs_f64(),
            o.report.runtime.evicted_pages,
            o.report.runtime.swapin_faults,
            human_size(s.swapped_bytes),
            human_size(s.pool_bytes),
            human_size(s.saved_bytes.max(0) as u64),
        );
    }
    Ok(())
}

/// Ends `uzswap attach PID` (run by the same user): every page goes back
/// and the process runs on as before.
pub fn detach(pid: u32) -> Result<(), String> {
    let marker = marker(pid)?;
    let attach: i32 = std::fs::read_to_string(&marker)
        .map_err(|_| format!("no `uzswap attach {pid}` of yours is running"))?
        .trim()
        .parse()
        .map_err(|_| format!("{} is not a pid", marker.display()))?;
    // SAFETY: kill with integers.
    if unsafe { libc::kill(attach, libc::SIGINT) } != 0 {
        return Err(format!(
            "signalling `uzswap attach {pid}` (pid {attach}): {}",
            std::io::Error::last_os_error()
        ));
    }
    let start = Instant::now();
    while marker.exists() {
        if start.elapsed() > Duration::from_secs(300) {
            return Err(format!("`uzswap attach {pid}` (pid {attach}) has not finished giving pages back after 5 minutes"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("uzswap: process {pid} detached (its pages are back)");
    Ok(())
}
