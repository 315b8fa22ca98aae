//! A value a forked child replaces before any other thread of it exists.
//!
//! After `fork()` the child has one thread, and the runtime's threads, its
//! userfaultfd, its `/proc/self/pagemap` handle and its store's workers
//! belong to the parent. The child handler swaps in its own while no other
//! thread runs and no reference into the old value is alive: that is the
//! whole safety argument of [`ForkCell::replace_in_child`].

use std::cell::UnsafeCell;

pub(crate) struct ForkCell<T>(UnsafeCell<T>);

// SAFETY: shared access is `&T` only ([`ForkCell::get`]); the one mutation
// happens in a single-threaded forked child (see `replace_in_child`).
unsafe impl<T: Send + Sync> Sync for ForkCell<T> {}

impl<T> ForkCell<T> {
    pub fn new(v: T) -> Self {
        Self(UnsafeCell::new(v))
    }

    pub fn get(&self) -> &T {
        // SAFETY: mutation happens only in `replace_in_child`, whose caller
        // guarantees no reference from here is alive then.
        unsafe { &*self.0.get() }
    }

    /// Replaces the value, returning the old one.
    ///
    /// # Safety
    /// Only in a forked child's `pthread_atfork` child handler: the process
    /// has one thread, and no reference obtained from [`ForkCell::get`] is
    /// alive.
    pub unsafe fn replace_in_child(&self, v: T) -> T {
        // SAFETY: the caller's guarantee: no other reference exists.
        unsafe { std::mem::replace(&mut *self.0.get(), v) }
    }
}
