//! Synchronisation primitives, swapped for `loom`'s under `--cfg loom` so the
//! free-vs-migration protocol is model-checked on the real code.
//!
//! The wrappers give both back-ends the same infallible API (`lock`, `read`,
//! `write`, `try_write`); lock poisoning cannot happen in loom models that do
//! not panic, and `common::sync` ignores it.

#[cfg(loom)]
pub(crate) use loom::sync::atomic;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic;

#[cfg(not(loom))]
mod imp {
    // The standard library's locks: no thread-local on any path (see
    // `common::sync`).
    pub(crate) use common::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
}

#[cfg(loom)]
mod imp {
    pub(crate) use loom::sync::{MutexGuard, RwLockReadGuard, RwLockWriteGuard};

    #[derive(Debug)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::Mutex::new(value))
        }
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }
    }

    #[derive(Debug)]
    pub(crate) struct RwLock<T>(loom::sync::RwLock<T>);

    impl<T> RwLock<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(loom::sync::RwLock::new(value))
        }
        pub(crate) fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().expect("loom rwlock poisoned")
        }
        pub(crate) fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().expect("loom rwlock poisoned")
        }
        pub(crate) fn try_write(&self) -> Option<RwLockWriteGuard<'_, T>> {
            self.0.try_write().ok()
        }
    }
}

pub(crate) use imp::*;
