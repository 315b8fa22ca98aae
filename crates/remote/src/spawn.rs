//! Starting a program under the out-of-process pager: the child asks to
//! be traced (`PTRACE_TRACEME`) and stops at its `execve`; the pager's
//! thread (its tracer) opens the userfaultfd in the new image, and lets it
//! go. Which programs need it: [`is_static`].

use crate::inject::{find_syscall_insn, Tracee};
use crate::pager::{Pager, PagerConfig, PagerError};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

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

/// Starts `cmd` stopped at its `execve`, opens its userfaultfd and lets it
/// run. Call from the thread that will run the pager: it is the tracer.
/// Where this user may only open a user-mode-only userfaultfd, the pager
/// puts the program under the syscall guard before it registers any of
/// its memory (`seccomp`). When the pager cannot be set up the child runs
/// on unpaged, and the error says why.
pub fn spawn(
    mut cmd: Command,
    config: &PagerConfig,
) -> std::io::Result<(Child, Result<Pager, PagerError>)> {
    // SAFETY: the closure runs in the forked child before execve and makes
    // one async-signal-safe system call.
    // A child that cannot be traced (already traced by `strace -f`, a
    // Yama policy) execs all the same, untraced: it then runs unpaged.
    unsafe {
        cmd.pre_exec(|| {
            libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    let pid = child.id() as i32;
    let pager = wait_exec_stop(pid).and_then(|()| set_up(pid, config));
    Ok((child, pager))
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
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
}

fn set_up(pid: i32, config: &PagerConfig) -> Result<Pager, PagerError> {
    let insn = match find_syscall_insn(pid) {
        Ok(i) => i,
        Err(e) => {
            // SAFETY: detach with integers: the child runs on.
            unsafe { libc::ptrace(libc::PTRACE_DETACH, pid, 0, 0) };
            return Err(e.into());
        }
    };
    let guarded = config.user_mode_only || crate::seccomp::guard_needed();
    let mut tracee = Tracee::stopped(pid, insn)?;
    let uffd = crate::uffd::open_in(pid, &mut tracee, &mut || {}, guarded);
    // Made while the child is stopped: one that exits at once (its pid,
    // pidfd and pagemap gone) is then paged until its exit, not reported
    // as unpaged.
    let pager = uffd
        .map_err(PagerError::from)
        .and_then(|uffd| Pager::new(pid, uffd, config));
    tracee.detach()?;
    Ok(pager?.guarded(guarded))
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
