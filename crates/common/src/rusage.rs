//! Resource usage (`getrusage(2)`, or a `wait4(2)` result) as durations
//! and bytes: one conversion from `libc::rusage` for every caller.

use std::time::Duration;

/// Whose usage [`usage`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// This process, all its threads (`RUSAGE_SELF`).
    Process,
    /// This process's terminated and waited-for children and their
    /// waited-for descendants (`RUSAGE_CHILDREN`).
    Children,
}

/// CPU time and peak memory, from a `libc::rusage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time in user mode (`ru_utime`).
    pub user: Duration,
    /// CPU time in the kernel (`ru_stime`).
    pub sys: Duration,
    /// Peak resident set size in bytes (`ru_maxrss`, which is in KiB).
    pub max_rss_bytes: u64,
}

impl Usage {
    /// User plus system CPU time.
    pub fn cpu(&self) -> Duration {
        self.user + self.sys
    }
}

impl From<&libc::rusage> for Usage {
    fn from(ru: &libc::rusage) -> Self {
        Self {
            user: timeval(ru.ru_utime),
            sys: timeval(ru.ru_stime),
            max_rss_bytes: ru.ru_maxrss.max(0) as u64 * 1024,
        }
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::new(
        t.tv_sec.max(0) as u64,
        t.tv_usec.clamp(0, 999_999) as u32 * 1000,
    )
}

/// The resource usage of `who` so far.
pub fn usage(who: Who) -> Usage {
    let which = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Children => libc::RUSAGE_CHILDREN,
    };
    // SAFETY: an all-zero rusage is a valid value to be overwritten.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `which` is a valid selector and `ru` a valid rusage to fill;
    // with those getrusage cannot fail.
    unsafe { libc::getrusage(which, &mut ru) };
    Usage::from(&ru)
}

/// User plus system CPU time of `who` so far.
pub fn cpu_time(who: Who) -> Duration {
    usage(who).cpu()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_grows_with_work() {
        let before = cpu_time(Who::Process);
        let start = std::time::Instant::now();
        let mut x = 1u64;
        while start.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let after = usage(Who::Process);
        assert!(after.cpu() > before, "{before:?} -> {after:?}");
        assert!(after.max_rss_bytes > 0);
    }

    #[test]
    fn converts_a_rusage() {
        // SAFETY: an all-zero rusage is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        ru.ru_utime = libc::timeval {
            tv_sec: 2,
            tv_usec: 500_000,
        };
        ru.ru_stime = libc::timeval {
            tv_sec: 0,
            tv_usec: 250,
        };
        ru.ru_maxrss = 3;
        let u = Usage::from(&ru);
        assert_eq!(u.user, Duration::from_millis(2500));
        assert_eq!(u.sys, Duration::from_micros(250));
        assert_eq!(u.cpu(), Duration::from_micros(2_500_250));
        assert_eq!(u.max_rss_bytes, 3072);
    }
}
