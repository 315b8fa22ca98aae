//! Whether this thread is running the runtime's own code. The LD_PRELOAD
//! library's hooks pass every call made from inside the runtime straight
//! to libc or the kernel (a compression library's `malloc`, a store's
//! `mmap`), so the runtime never takes its own memory for a program
//! allocation. The runtime marks itself inside wherever a program thread
//! runs its code on its own initiative (the fork handlers); the library
//! marks its hooks.

use std::cell::Cell;

thread_local! {
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// This thread is inside the runtime while the value lives.
#[derive(Debug)]
pub struct Inside {
    was: bool,
}

/// Marks this thread inside the runtime until the returned value drops.
pub fn enter() -> Inside {
    Inside {
        was: INSIDE.with(|i| i.replace(true)),
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|i| i.set(self.was));
    }
}

/// Whether this thread is inside the runtime.
pub fn inside() -> bool {
    INSIDE.with(Cell::get)
}
