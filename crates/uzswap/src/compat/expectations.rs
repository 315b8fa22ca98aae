//! What each case of the suite is expected to do under uzswap today, as
//! root and as an unprivileged user: the one table to edit when a case's
//! known failure is fixed (or a new one is found).

use super::proc::User;

/// What a case does under uzswap today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// Same output as the plain run, with pages paged: a failure fails the
    /// suite.
    Works,
    /// Fails today for this reason; still run and listed, and reported as
    /// "passes now" when it stops failing. (No case is one today.)
    #[allow(dead_code)]
    KnownIssue(&'static str),
}

use Expected::Works;

/// A case's expectation as root (the runtime opens `/dev/userfaultfd`)
/// and as an unprivileged user (`userfaultfd(UFFD_USER_MODE_ONLY)`): the
/// two may differ.
pub struct Expectation {
    pub case: &'static str,
    pub root: Expected,
    pub unprivileged: Expected,
}

/// What each case does under uzswap today, as observed (quick and full
/// sizes alike). Flip an entry to `Works` when its failure is fixed.
#[rustfmt::skip]
pub const EXPECTATIONS: &[Expectation] = &[
    //            case               as root                 as an unprivileged user
    Expectation { case: "python-hash",    root: Works,                 unprivileged: Works },
    Expectation { case: "python-list",    root: Works,                 unprivileged: Works },
    Expectation { case: "numpy",          root: Works,                 unprivileged: Works },
    Expectation { case: "python-mp-fork", root: Works,                 unprivileged: Works },
    Expectation { case: "node-buffer",    root: Works,                 unprivileged: Works },
    Expectation { case: "java-nio",       root: Works,                 unprivileged: Works },
    Expectation { case: "node-heap",      root: Works,                 unprivileged: Works },
    Expectation { case: "java-heap",      root: Works,                 unprivileged: Works },
    Expectation { case: "sqlite",         root: Works,                 unprivileged: Works },
    Expectation { case: "sqlite-heap",    root: Works,                 unprivileged: Works },
    Expectation { case: "sort",           root: Works,                 unprivileged: Works },
    Expectation { case: "xz",             root: Works,                 unprivileged: Works },
    Expectation { case: "zstd",           root: Works,                 unprivileged: Works },
    Expectation { case: "gcc",            root: Works,                 unprivileged: Works },
    Expectation { case: "redis",          root: Works,                 unprivileged: Works },
    Expectation { case: "redis-heap",     root: Works,                 unprivileged: Works },
    Expectation { case: "perl-hash",      root: Works,                 unprivileged: Works },
    Expectation { case: "postgres",       root: Works,                 unprivileged: Works },
    Expectation { case: "usemem",         root: Works,                 unprivileged: Works },
    Expectation { case: "randpage",       root: Works,                 unprivileged: Works },
    Expectation { case: "randpage-static", root: Works,                unprivileged: Works },
    Expectation { case: "go-static",      root: Works,                 unprivileged: Works },
    Expectation { case: "go-net",         root: Works,                 unprivileged: Works },
    Expectation { case: "rust-musl",      root: Works,                 unprivileged: Works },
];

pub(super) fn expected(case: &str, user: &User) -> Expected {
    EXPECTATIONS
        .iter()
        .find(|e| e.case == case)
        .map_or(Works, |e| {
            if user.is_root() {
                e.root
            } else {
                e.unprivileged
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::cases::CASES;

    #[test]
    fn every_case_has_one_expectation() {
        for c in CASES {
            assert_eq!(
                EXPECTATIONS.iter().filter(|e| e.case == c.name).count(),
                1,
                "{}",
                c.name
            );
        }
        for e in EXPECTATIONS {
            assert!(CASES.iter().any(|c| c.name == e.case), "{}", e.case);
        }
    }
}
