//! Whether this thread is running the runtime's own code. The LD_PRELOAD
//! library's hooks pass every call made from inside the runtime straight
//! to libc or the kernel (a compression library's `malloc`, a store's
//! `mmap`), so the runtime never takes its own memory for a program
//! allocation. The runtime marks itself inside wherever a program thread
//! runs its code on its own initiative (the fork handlers); the library
//! marks its hooks.
//!
//! The mark and whether the thread is one of the runtime's own share one
//! thread-local byte: in the LD_PRELOAD library each thread-local lookup
//! is a call (`__tls_get_addr`), and a hook that allocates asks both and
//! marks itself, once per `malloc` and `free`. [`enter_unless_inside`]
//! does it in one lookup, and the mark's drop in none.

use std::cell::Cell;

thread_local! {
    /// [`INSIDE`], [`KNOWN`], [`RUNTIME`].
    static FLAGS: Cell<u8> = const { Cell::new(0) };
}

/// The thread runs the runtime's code now.
const INSIDE: u8 = 1;
/// Whether the thread is one of the runtime's has been asked.
const KNOWN: u8 = 2;
/// It is.
const RUNTIME: u8 = 4;

/// This thread is inside the runtime while the value lives. Not `Send`: it
/// is dropped by the thread that made it.
#[derive(Debug)]
pub struct Inside {
    /// This thread's [`FLAGS`].
    flags: *const Cell<u8>,
    was: bool,
}

impl Inside {
    fn mark(flags: &Cell<u8>) -> Self {
        let v = flags.get();
        flags.set(v | INSIDE);
        Inside {
            flags,
            was: v & INSIDE != 0,
        }
    }
}

/// Marks this thread inside the runtime until the returned value drops.
pub fn enter() -> Inside {
    FLAGS.with(Inside::mark)
}

impl Drop for Inside {
    fn drop(&mut self) {
        // SAFETY: `flags` is the thread-local of the thread that made this
        // value (it is not `Send`), which lives longer than the value; a
        // `Cell<u8>` has no destructor, so it stays valid until the thread
        // ends.
        let flags = unsafe { &*self.flags };
        let v = flags.get();
        flags.set(if self.was { v | INSIDE } else { v & !INSIDE });
    }
}

/// Whether this thread is inside the runtime.
pub fn inside() -> bool {
    FLAGS.with(|f| f.get() & INSIDE != 0)
}

/// Marks this thread inside, unless it is already or is one of the
/// runtime's threads (`None`). `is_runtime` tells the latter, asked once a
/// thread.
pub fn enter_unless_inside(is_runtime: impl FnOnce() -> bool) -> Option<Inside> {
    FLAGS.with(|f| (classified(f, is_runtime) & (INSIDE | RUNTIME) == 0).then(|| Inside::mark(f)))
}

/// Whether this thread is inside, or is one of the runtime's threads.
pub fn inside_or_runtime(is_runtime: impl FnOnce() -> bool) -> bool {
    FLAGS.with(|f| classified(f, is_runtime) & (INSIDE | RUNTIME) != 0)
}

/// Whether this thread is one of the runtime's (`is_runtime` tells, asked
/// once a thread).
pub fn runtime_thread(is_runtime: impl FnOnce() -> bool) -> bool {
    FLAGS.with(|f| classified(f, is_runtime) & RUNTIME != 0)
}

/// The thread's flags, [`KNOWN`] set.
fn classified(flags: &Cell<u8>, is_runtime: impl FnOnce() -> bool) -> u8 {
    let v = flags.get();
    if v & KNOWN != 0 {
        return v;
    }
    let v = v | KNOWN | if is_runtime() { RUNTIME } else { 0 };
    flags.set(v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_nest_and_unwind_in_order() {
        assert!(!inside());
        let outer = enter();
        assert!(inside());
        {
            let _inner = enter();
            assert!(inside());
        }
        assert!(inside(), "the inner mark's drop keeps the outer one");
        drop(outer);
        assert!(!inside());
    }

    #[test]
    fn a_program_thread_enters_once_and_a_runtime_thread_never() {
        let program = std::thread::spawn(|| {
            let mark = enter_unless_inside(|| false);
            assert!(mark.is_some() && inside());
            assert!(enter_unless_inside(|| unreachable!("asked twice")).is_none());
            assert!(inside_or_runtime(|| unreachable!("asked twice")));
            drop(mark);
            assert!(!inside_or_runtime(|| unreachable!("asked twice")));
            !runtime_thread(|| unreachable!("asked twice"))
        });
        assert!(program.join().unwrap());
        let runtime = std::thread::spawn(|| {
            assert!(runtime_thread(|| true));
            assert!(enter_unless_inside(|| unreachable!("asked twice")).is_none());
            assert!(!inside(), "a runtime thread is not marked, it passes");
            inside_or_runtime(|| unreachable!("asked twice"))
        });
        assert!(runtime.join().unwrap());
    }
}
