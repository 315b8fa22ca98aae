//! Injected system calls in a running program: the result is the call's,
//! and the program runs on unchanged.

use remote::inject::{find_syscall_insn, Tracee};
use std::process::Command;

fn busy_shell() -> std::process::Child {
    Command::new("/bin/sh")
        .args(["-c", "i=0; while :; do i=$((i+1)); done"])
        .spawn()
        .unwrap()
}

#[test]
fn an_injected_getpid_returns_the_targets_pid_in_user_mode_and_in_a_sleep() {
    for cmd in [None, Some("sleep 100")] {
        let mut child = match cmd {
            None => busy_shell(),
            Some(c) => Command::new("/bin/sh")
                .args(["-c", &format!("exec {c}")])
                .spawn()
                .unwrap(),
        };
        let pid = child.id() as i32;
        std::thread::sleep(std::time::Duration::from_millis(100));
        let insn = find_syscall_insn(pid).unwrap();
        for _ in 0..50 {
            let mut t = Tracee::seize(pid, pid, insn, &mut || {}).unwrap();
            assert_eq!(
                t.syscall(libc::SYS_getpid, &[], &mut || {}).unwrap(),
                pid as i64
            );
            t.detach().unwrap();
        }
        // Still running (the sleep restarted, the loop goes on).
        assert!(child.try_wait().unwrap().is_none());
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
