//! # common — what every uzswap crate shares
//!
//! The kernel keeps these in `include/linux` and `arch/*/include`: one
//! definition each, used by every subsystem. Here:
//!
//! * [`PAGE_SIZE`] / [`PAGE_SHIFT`]: the base page (x86-64 and arm64 4K
//!   kernels). Every crate uses this one; none defines its own.
//! * [`counters!`]: typed counters — one documented list of names makes a
//!   crate's live atomics, its snapshot struct, their text form and docs
//!   ([`counters`]).
//! * [`name_value`]: the `name value` text form (`/proc/vmstat`, reports).
//! * [`rusage`]: `getrusage(2)` (and `wait4(2)`'s rusage) as CPU
//!   durations and peak RSS bytes.
//! * [`wakeup::Wakeup`]: waking a background thread (the runtime's
//!   reclaimer, zswap's shrinker) without losing a kick.
//! * [`rate_limit::RateLimit`]: at most once every interval (the runtime's
//!   aging passes and shared-limit sweeps).
//! * [`bump::BumpArena`]: a static bump arena (the LD_PRELOAD library's
//!   blocks while it looks the program's allocator up).
//! * [`discard`]: `MADV_DONTNEED` of many ranges with one
//!   `process_madvise` (one TLB flush): the runtime's eviction and
//!   zsmalloc's arena both give memory back this way.
//! * [`meminfo`]: fields of `/proc/meminfo`, in bytes.
//! * [`memfs`]: whether a file or folder lives in memory (tmpfs, ramfs).
//! * [`proc_stat`]: fields of `/proc/PID/stat` (process group, start
//!   time, resident set).
//! * [`passed_fd::PassedFd`]: a descriptor `uzswap run` leaves open for
//!   the processes of a run (its files, for those that change user).
//! * [`kept_buffers::KeptBuffers`]: byte buffers kept for reuse, bounded
//!   (the swap store's and the swap file's per-eviction copies).
//!
//! This crate depends on nothing of uzswap's, so every other crate may
//! depend on it.

pub mod bump;
pub mod counters;
pub mod decimal;
pub mod discard;
pub mod kcmp;
pub mod kept_buffers;
pub mod memfs;
pub mod meminfo;
pub mod name_value;
pub mod passed_fd;
pub mod proc_stat;
pub mod rate_limit;
pub mod rusage;
pub mod sync;
pub mod wakeup;

/// Bytes in a base page.
pub const PAGE_SIZE: usize = 4096;
/// `log2(PAGE_SIZE)`.
pub const PAGE_SHIFT: u32 = PAGE_SIZE.trailing_zeros();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_is_the_machines() {
        // SAFETY: sysconf has no preconditions.
        let os = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        assert_eq!(os as usize, PAGE_SIZE);
        assert_eq!(1usize << PAGE_SHIFT, PAGE_SIZE);
    }
}
