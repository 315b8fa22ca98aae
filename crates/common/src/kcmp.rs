//! Whether two tasks share their memory: `kcmp(2)` with `KCMP_VM`. Asked
//! where a task may run on another's memory without being one of its
//! threads (a `vfork` child before its `execve`, a `clone(CLONE_VM)`
//! child). No allocation: callers ask from signal handlers.

/// `kcmp` type: the two tasks' memory.
const KCMP_VM: libc::c_long = 1;

/// Whether tasks `a` and `b` use the same memory; `None` where the kernel
/// cannot tell (no `kcmp`, no permission, a task gone): each caller
/// takes the answer that is safe for it.
pub fn same_memory(a: libc::pid_t, b: libc::pid_t) -> Option<bool> {
    // SAFETY: kcmp takes plain integers.
    let r = unsafe { libc::syscall(libc::SYS_kcmp, a, b, KCMP_VM, 0, 0) };
    (r >= 0).then_some(r == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_shares_memory_and_a_forked_child_does_not() {
        // SAFETY: getpid and gettid cannot fail.
        let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
        assert_eq!(same_memory(pid, tid), Some(true));
        // SAFETY: the child only pauses until killed.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            loop {
                // SAFETY: pause has no arguments.
                unsafe { libc::pause() };
            }
        }
        assert_eq!(same_memory(pid, child), Some(false));
        // SAFETY: our own child.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::waitpid(child, std::ptr::null_mut(), 0);
        }
    }
}
