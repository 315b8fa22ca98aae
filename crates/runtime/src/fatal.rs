//! Errors the runtime cannot recover from end the program at once, with a
//! message and a distinct exit code, rather than leave it blocked in a
//! fault that no thread will ever serve.
//!
//! Every runtime thread is named `uzswap/…`. [`install_panic_hook`] (called
//! by every runtime) makes a panic in any such thread — the fault handler,
//! the reclaimer, zswap's shrinker, a compression worker — end the process
//! the same way, before anything unwinds; [`spawn`] also catches a panic in
//! case a program replaced the hook. Exit codes: [`FATAL_EXIT`] (71) for a runtime
//! that failed while the program ran; [`START_EXIT`] (70) for one that could
//! not start (the preload library's code for bad settings and spawn
//! failures).

use std::thread::JoinHandle;

/// Exit code of a program whose runtime failed while it ran.
pub const FATAL_EXIT: i32 = 71;
/// Exit code of a program whose runtime could not start.
pub const START_EXIT: i32 = 70;

/// Writes `uzswap: fatal: MSG` to stderr and ends the process with `code`,
/// running no destructors or exit handlers (another thread may hold any
/// lock, and the program's memory may be unreachable).
pub fn exit_with(code: i32, msg: &str) -> ! {
    let text = format!("uzswap: fatal: {msg}\n");
    // SAFETY: write(2) of a valid buffer to stderr, then _exit(2), which
    // never returns; both are async-signal-safe.
    unsafe {
        libc::write(2, text.as_ptr() as *const libc::c_void, text.len());
        libc::_exit(code)
    }
}

/// Ends the program: the runtime failed ([`FATAL_EXIT`]).
pub fn die(msg: &str) -> ! {
    exit_with(FATAL_EXIT, msg)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Chains a panic hook that ends the process when a `uzswap/…` thread
/// panics, or a thread serving its own fault in its signal handler
/// ([`crate::in_thread`]); other threads' panics go to the previous hook.
/// Once per process.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let name = std::thread::current().name().map(str::to_string);
            match name {
                Some(n) if n.starts_with("uzswap/") => {
                    die(&format!("runtime thread {n} panicked: {info}"))
                }
                _ if crate::in_thread::serving_here() => die(&format!(
                    "the fault handler panicked serving a fault in thread {}: {info}",
                    crate::sys::gettid()
                )),
                _ => previous(info),
            }
        }));
    });
}

/// Starts a runtime thread named `name` (`uzswap/…`). A panic in it ends
/// the process ([`die`]).
pub fn spawn<F>(name: &str, f: F) -> std::io::Result<JoinHandle<()>>
where
    F: FnOnce() + Send + 'static,
{
    let thread_name = name.to_string();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
                die(&format!(
                    "runtime thread {thread_name} panicked: {}",
                    panic_message(&*p)
                ));
            }
        })
}
