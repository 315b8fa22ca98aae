//! Starting a program under the out-of-process pager: the child asks to
//! be traced (`PTRACE_TRACEME`) and stops at its `execve`; the pager's
//! thread (its tracer) opens the userfaultfd in the new image, and lets it
//! go. Which programs need it: [`is_static`].

use crate::inject::{find_syscall_insn, Tracee};
use crate::pager::{Pager, PagerConfig, PagerError};
use crate::seccomp::Listener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// `PT_INTERP`: the program header naming the dynamic loader.
const PT_INTERP: u32 = 3;

/// Whether `path` is an x86_64 ELF executable with no dynamic loader
/// (statically linked: Go's default, musl builds), which an LD_PRELOAD
/// library cannot enter. Scripts and dynamic executables are not.
pub fn is_static(path: &Path) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let f = std::fs::File::open(path)?;
    let mut head = [0u8; 64];
    if f.read_at(&mut head, 0)? < head.len() || &head[..4] != b"\x7fELF" || head[4] != 2 {
        return Ok(false);
    }
    let u16_at = |o: usize| u16::from_le_bytes([head[o], head[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(head[0x20..0x28].try_into().unwrap_or_default());
    let (phentsize, phnum) = (u16_at(0x36), u16_at(0x38));
    let mut headers = vec![0u8; phentsize * phnum];
    f.read_exact_at(&mut headers, phoff)?;
    Ok(!headers
        .chunks_exact(phentsize.max(4))
        .any(|h| u32::from_le_bytes([h[0], h[1], h[2], h[3]]) == PT_INTERP))
}

/// `program` as `execvp` finds it.
pub fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(program))
            .find(|p| p.is_file())
    })
}

/// Why a started program runs unpaged.
pub struct Unpaged {
    pub why: PagerError,
    /// The syscall guard's listener, where the program runs under its
    /// filter: its calls must still be answered
    /// ([`crate::seccomp::Listener::allow_until_hung_up`]), or they fail.
    pub listener: Option<Listener>,
}

/// Starts `cmd` stopped at its `execve`, opens its userfaultfd and lets it
/// run. Call from the thread that will run the pager: it is the tracer.
/// Where this user may only open a user-mode-only userfaultfd, the program
/// starts under the syscall guard's filter (`seccomp`). When the pager
/// cannot be set up the child runs on unpaged, and the error says why.
pub fn spawn(
    mut cmd: Command,
    config: &PagerConfig,
) -> std::io::Result<(Child, Result<Pager, Unpaged>)> {
    let guarded = crate::seccomp::guard_needed();
    let (setup, sock) = match guarded.then(crate::seccomp::prepare).transpose()? {
        Some((setup, sock)) => {
            let at = setup.fd_in_child();
            (Some(setup), Some((sock, at)))
        }
        None => (None, None),
    };
    // SAFETY: the closure runs in the forked child before execve and makes
    // only async-signal-safe system calls on data made before the fork.
    // A child that cannot be traced (already traced by `strace -f`, a
    // Yama policy) execs all the same, untraced: it then runs unpaged; one
    // whose filter cannot be installed sends no listener, and runs
    // unpaged too.
    unsafe {
        cmd.pre_exec(move || {
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            if let Some(setup) = &setup {
                let _ = setup.install();
            }
            Ok(())
        });
    }
    // The child's `execve` waits for the listener's answer while
    // `Command::spawn` waits for the `execve`: a thread answers until the
    // child has stopped after it.
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let answering = sock.as_ref().map(|(sock, at)| {
            let stop = &stop;
            scope.spawn(move || {
                let listener = crate::seccomp::receive(sock, *at)?;
                while !stop.load(Ordering::Relaxed) {
                    if let Some(n) = listener.recv_within(Duration::from_millis(5)) {
                        listener.allow(n.id);
                    }
                }
                Ok::<_, std::io::Error>(listener)
            })
        });
        let spawned = cmd.spawn();
        // The parent's copy of the child's socket end goes with the
        // closure: a child that sent nothing makes `receive` fail.
        drop(cmd);
        let stopped = spawned.map(|child| {
            let why = wait_exec_stop(child.id() as i32).err();
            (child, why)
        });
        stop.store(true, Ordering::Relaxed);
        let listener = answering.map(|t| {
            t.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the answering thread panicked")))
        });
        let (child, why) = stopped?;
        let pid = child.id() as i32;
        let result = match (why, listener) {
            (Some(why), Some(Ok(l))) => Err(Unpaged {
                why,
                listener: Some(l),
            }),
            (Some(why), _) => Err(Unpaged {
                why,
                listener: None,
            }),
            (None, Some(Err(e))) => {
                // SAFETY: detach with integers: the child runs on.
                unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) };
                Err(Unpaged {
                    why: PagerError::Io(e),
                    listener: None,
                })
            }
            (None, Some(Ok(l))) => set_up(pid, config, Some(l)),
            (None, None) => set_up(pid, config, None),
        };
        Ok((child, result))
    })
}

/// Waits for the child's stop after its `execve` (an exit is left for its
/// parent to reap); an error if it cannot be traced.
fn wait_exec_stop(pid: i32) -> Result<(), PagerError> {
    let me = std::process::id() as i32;
    loop {
        if crate::inject::stop_code(pid)?.is_some() {
            return Ok(());
        }
        if let Some(tracer) = tracer_of(pid) {
            if tracer != gettid() && tracer != me {
                let why = if tracer == 0 {
                    "it could not be traced".to_string()
                } else {
                    format!("it is traced by process {tracer} already")
                };
                return Err(PagerError::Io(std::io::Error::other(why)));
            }
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

fn set_up(pid: i32, config: &PagerConfig, listener: Option<Listener>) -> Result<Pager, Unpaged> {
    let insn = match find_syscall_insn(pid) {
        Ok(i) => i,
        Err(e) => {
            // SAFETY: detach with integers: the child runs on.
            unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) };
            return Err(Unpaged {
                why: e.into(),
                listener,
            });
        }
    };
    let opened = Tracee::stopped(pid, insn)
        .map_err(PagerError::from)
        .and_then(|mut tracee| {
            let uffd = crate::uffd::open_in(pid, &mut tracee, &mut || {}, listener.is_some());
            tracee.detach()?;
            Ok(uffd?)
        });
    match opened.and_then(|uffd| Pager::new(pid, uffd, config)) {
        Ok(pager) => Ok(pager.with_guard(listener)),
        Err(why) => Err(Unpaged { why, listener }),
    }
}

/// Pages a running process from outside: one of its threads is stopped
/// (`PTRACE_SEIZE`) long enough to open its userfaultfd. Call from the
/// thread that will run the pager.
pub fn attach(pid: i32, config: &PagerConfig) -> Result<Pager, PagerError> {
    let insn = find_syscall_insn(pid)?;
    let mut tracee = Tracee::seize(pid, pid, insn, &mut || {})?;
    let uffd = crate::uffd::open_in(pid, &mut tracee, &mut || {}, false);
    tracee.detach()?;
    Pager::new(pid, uffd?, config)
}

fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// `TracerPid` of process `pid` (0: none), once it has exec'd: before,
/// the child is still a copy of this process and not yet asking.
fn tracer_of(pid: i32) -> Option<i32> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    if exe == std::env::current_exe().ok()? {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))
        .and_then(|v| v.trim().parse().ok())
}
