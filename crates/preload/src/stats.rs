//! Counters of the running program: served on `RUN_DIR/PID.sock` (read by
//! `uzswap stats PID`) and written to `STATS_DIR/PID.stats` at exit (read
//! by `uzswap run`).

use crate::gate;
use crate::preload;
use crate::regions;
use launch::report::{ProcessReport, ProgramStats};
use launch::settings::env;
use std::io::Write;

/// Every counter: the program's regions, the guard's, the runtime's, the
/// swap store's. `None` before the runtime has started.
pub fn report() -> Option<ProcessReport> {
    let p = preload::started()?;
    let (regions, region_bytes) = regions::holdings();
    Some(ProcessReport {
        program: ProgramStats {
            pid: u64::from(std::process::id()),
            limit_bytes: p.settings.limit_bytes as u64,
            peak_rss_bytes: common::rusage::usage(common::rusage::Who::Process).max_rss_bytes,
            folio_bytes: p.settings.folio_bytes as u64,
            regions,
            region_bytes,
            ..p.counters.snapshot()
        },
        guard: guard::handler_installed().then(guard::counters),
        runtime: p.runtime.stats(),
        swap: p.runtime.swap_stats(),
    })
}

/// Serves [`report`] to every connection on `RUN_DIR/PID.sock`.
pub fn start_server() {
    // `uzswap run` checked the run folder before it started the program;
    // one that is (now) not private serves no stats.
    let Ok(path) = launch::rundir::own_socket_path() else {
        return;
    };
    let Some(listener) = launch::rundir::bind_stats_socket(&path) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("uzswap/stats".into())
        .spawn(move || {
            for mut conn in listener.incoming().flatten() {
                if let Some(r) = report() {
                    let _ = conn.write_all(r.render().as_bytes());
                }
            }
        });
}

/// At exit: the final counters to `STATS_DIR/PID.stats`, and the socket
/// removed.
pub fn write_exit_report() {
    if preload::started().is_none() || !preload::owns_runtime() {
        return;
    }
    let _busy = gate::force_busy();
    if let Some(p) = preload::started() {
        // Exiting: this process's pages no longer count in a shared limit.
        p.runtime.leave_shared_limit();
    }
    // The counters first, then the trace (`--record`): an eviction is
    // queued before it is counted, and this thread's faults are over, so
    // the trace holds at least what the report says (the reclaimer may
    // still add to both, other threads still fault).
    let final_report = std::env::var_os(env::STATS_DIR).and_then(|dir| Some((dir, report()?)));
    if let Some(p) = preload::started() {
        p.runtime.flush_trace();
    }
    let pid = std::process::id();
    if let Ok(path) = launch::rundir::own_socket_path() {
        let _ = std::fs::remove_file(path);
    }
    if let Some((dir, r)) = final_report {
        let text = r.render();
        let path = std::path::Path::new(&dir).join(format!("{pid}.stats"));
        let tmp = path.with_extension("tmp");
        let written = std::fs::write(&tmp, &text).is_ok() && std::fs::rename(&tmp, &path).is_ok();
        if !written {
            // Not ours to write to (this process changed user since the
            // run started): the folder the run passed down for that.
            let _ = std::fs::remove_file(&tmp);
            if let Some(folder) = crate::preload::PASSED
                .get()
                .and_then(|p| p.stats)
                .and_then(|p| p.current(true))
            {
                write_in(folder, pid, text.as_bytes());
            }
        }
    }
}

/// Writes `PID.stats` in the folder open at `folder` (made as `PID.tmp`,
/// then renamed, as in the stats folder itself); best effort.
fn write_in(folder: std::os::fd::RawFd, pid: u32, text: &[u8]) {
    use std::ffi::CString;
    use std::io::Write;
    let (tmp, done) = (format!("{pid}.tmp"), format!("{pid}.stats"));
    let Ok(mut file) = common::passed_fd::create_in(folder, &tmp, false) else {
        return;
    };
    if file.write_all(text).is_err() {
        return;
    }
    drop(file);
    let (Ok(tmp), Ok(done)) = (CString::new(tmp), CString::new(done)) else {
        return;
    };
    // SAFETY: renameat within the same folder descriptor, with
    // NUL-terminated names; the result is ignored (best effort).
    unsafe { libc::renameat(folder, tmp.as_ptr(), folder, done.as_ptr()) };
}
