//! Counters of the running program: served on `RUN_DIR/PID.sock` (read by
//! `uzswap stats PID`) and written to `STATS_DIR/PID.stats` at exit (read
//! by `uzswap run`).

use crate::preload;
use runtime::report;
use runtime::settings::env;
use std::io::Write;
use std::os::unix::net::UnixListener;
use std::sync::atomic::Ordering;

/// Every counter: the program's regions, the runtime's, the swap store's.
pub fn fields() -> Vec<(String, u64)> {
    let mut f = vec![("pid".to_string(), u64::from(std::process::id()))];
    let Some(p) = preload::started() else {
        return f;
    };
    let (regions, bytes) = preload::holdings();
    f.extend([
        ("limit_bytes".into(), p.settings.limit_bytes as u64),
        ("folio_bytes".into(), p.settings.folio_bytes as u64),
        ("regions".into(), regions),
        ("region_bytes".into(), bytes),
        (
            "region_allocs".into(),
            p.region_allocs.load(Ordering::Relaxed),
        ),
        (
            "regions_released".into(),
            p.regions_released.load(Ordering::Relaxed),
        ),
    ]);
    if guard::handler_installed() {
        let g = guard::counters();
        f.extend([
            ("guard_traps".into(), g.traps),
            ("guard_guarded_calls".into(), g.guarded_calls),
            ("guard_unknown_syscalls".into(), g.unknown_syscalls),
            ("guard_pinned_bytes".into(), g.pinned_bytes),
        ]);
    }
    let named = |v: Vec<(&'static str, u64)>| v.into_iter().map(|(n, x)| (n.to_string(), x));
    f.extend(named(p.runtime.stats().fields()));
    f.extend(named(p.runtime.swap_stats().fields()));
    f
}

/// Serves [`fields`] to every connection on `RUN_DIR/PID.sock`.
pub fn start_server() {
    let path = report::socket_path(std::process::id());
    if let Some(dir) = path.parent() {
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
    }
    let _ = std::fs::remove_file(&path);
    let Ok(listener) = UnixListener::bind(&path) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("uzswap/stats".into())
        .spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let _ = conn.write_all(report::render(&fields()).as_bytes());
            }
        });
}

/// At exit: the final counters to `STATS_DIR/PID.stats`, and the socket
/// removed.
pub fn write_exit_report() {
    if preload::started().is_none() || !preload::owns_runtime() {
        return;
    }
    let _busy = preload::force_busy();
    if let Some(p) = preload::started() {
        // Exiting: this process's pages no longer count in a shared limit.
        p.runtime.leave_shared_limit();
    }
    let pid = std::process::id();
    let _ = std::fs::remove_file(report::socket_path(pid));
    if let Some(dir) = std::env::var_os(env::STATS_DIR) {
        let path = std::path::Path::new(&dir).join(format!("{pid}.stats"));
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, report::render(&fields())).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
}
