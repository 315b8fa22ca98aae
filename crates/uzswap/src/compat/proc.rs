//! Running one command of a case and measuring it: wall time, the CPU time
//! and peak RSS of its whole waited-for process tree (`wait4`'s rusage), as
//! the invoking user or as `nobody` (through `setpriv`).

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Process group of the command running now (0: none), for the signal
/// handler.
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);
/// A SIGINT, SIGTERM or SIGHUP arrived while a command ran.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(signal: libc::c_int) {
    let group = RUNNING_GROUP.load(Ordering::SeqCst);
    // SAFETY: kill, signal and raise are async-signal-safe; the group is
    // our own child's.
    unsafe {
        if group > 0 {
            libc::kill(-group, libc::SIGKILL);
            INTERRUPTED.store(true, Ordering::SeqCst);
        } else {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}

/// Commands run in their own process group (so that a case's leftovers can
/// be ended), which a Ctrl-C at the terminal does not reach: on SIGINT,
/// SIGTERM or SIGHUP the running command's group is killed and
/// [`interrupted`] turns true (the suite then stops and cleans up); with
/// no command running, the signal has its default effect.
pub fn end_commands_on_interrupt() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only makes async-signal-safe
        // calls.
        unsafe { libc::signal(signal, on_interrupt as *const () as libc::sighandler_t) };
    }
}

/// Whether the suite was interrupted (see [`end_commands_on_interrupt`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// uid and gid of `nobody` (Debian, Fedora, Arch all agree).
pub const NOBODY: u32 = 65534;

/// Who a case runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum User {
    /// The user running `uzswap compat` (named).
    Invoker(String),
    /// `nobody`, through `setpriv` (needs root).
    Nobody,
}

impl User {
    pub fn name(&self) -> &str {
        match self {
            User::Invoker(name) => name,
            User::Nobody => "nobody",
        }
    }

    /// Whether the user is root (a privileged userfaultfd is open to it).
    pub fn is_root(&self) -> bool {
        matches!(self, User::Invoker(_)) && is_root()
    }
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The name of the effective user, or `uid N`.
pub fn invoker_name() -> String {
    // SAFETY: geteuid cannot fail; getpwuid returns null or a pointer to a
    // static entry, read at once (no other thread calls getpw* here).
    unsafe {
        let uid = libc::geteuid();
        let pw = libc::getpwuid(uid);
        if pw.is_null() || (*pw).pw_name.is_null() {
            return format!("uid {uid}");
        }
        std::ffi::CStr::from_ptr((*pw).pw_name)
            .to_string_lossy()
            .into_owned()
    }
}

/// A command line to run in a folder, with a clean environment.
#[derive(Debug, Clone)]
pub struct Job {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// `HOME` and `TMPDIR`: the user's scratch folder of this case.
    pub scratch: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub timeout: Duration,
}

/// What a finished command did and cost.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// Exit code, or 128 + signal.
    pub code: i32,
    pub timed_out: bool,
    pub elapsed: Duration,
    /// User + system CPU time of the process and its waited-for children.
    pub cpu: Duration,
    /// Peak RSS of the largest process of the tree, bytes.
    pub max_rss: u64,
    /// The memory of the command's process group over its run, where it
    /// was sampled ([`run_sampled`]).
    pub memory: MemoryTrace,
}

/// How to sample a command's memory while it runs.
#[derive(Debug, Clone, Copy)]
pub struct Sampling {
    pub every: Duration,
    /// Memory the command uses outside its processes, added to each
    /// sample (the kernel's zswap pool or zram device).
    pub extra: fn() -> u64,
}

/// A command's memory over its run: the resident set sizes of its process
/// group's processes summed (and [`Sampling::extra`]), sampled at even
/// intervals; the peak is at least the largest process's own peak
/// (`ru_maxrss`), which a short run's samples can miss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryTrace {
    pub peak: u64,
    /// Over time (the samples are evenly spaced).
    pub mean: u64,
    pub samples: u64,
}

impl MemoryTrace {
    fn add(&mut self, bytes: u64) {
        self.peak = self.peak.max(bytes);
        self.mean = ((self.mean as u128 * self.samples as u128 + bytes as u128)
            / (self.samples as u128 + 1)) as u64;
        self.samples += 1;
    }
}

/// Resident bytes of the processes of process group `group`, from
/// `/proc/PID/stat` (a process that ends while it is read is left out).
pub fn group_rss(group: libc::pid_t) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(common::proc_stat::read)
        .filter(|s| s.pgrp == group)
        .map(|s| s.rss_pages * page)
        .sum()
}

/// The environment every case runs with: nothing of the invoker's (no
/// pyenv shims, no ~/.sqliterc), C locale (sort order), fixed Python hash
/// seed (set order).
fn clean_env(cmd: &mut Command, scratch: &Path) {
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C")
        .env("HOME", scratch)
        .env("TMPDIR", scratch)
        .env("PYTHONHASHSEED", "0");
}

/// The process for `job` as `user`.
fn command_for(user: &User, job: &Job) -> Result<Command, String> {
    let (program, args) = job
        .argv
        .split_first()
        .ok_or_else(|| "empty command".to_string())?;
    let mut cmd = match user {
        User::Invoker(_) => Command::new(program),
        User::Nobody => {
            let mut c = Command::new("setpriv");
            c.args([
                format!("--reuid={NOBODY}"),
                format!("--regid={NOBODY}"),
                "--clear-groups".to_string(),
            ]);
            c.arg(program);
            c
        }
    };
    cmd.args(args).current_dir(&job.cwd);
    clean_env(&mut cmd, &job.scratch);
    let out = File::create(&job.stdout).map_err(|e| format!("{}: {e}", job.stdout.display()))?;
    let err = File::create(&job.stderr).map_err(|e| format!("{}: {e}", job.stderr.display()))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        .process_group(0);
    Ok(cmd)
}

/// Runs `job` as `user` to the end (killing its process group at the
/// timeout) and measures it.
pub fn run(user: &User, job: &Job) -> Result<Measured, String> {
    run_sampled(user, job, None)
}

/// [`run`], sampling the memory of the command's process group as
/// `sampling` says.
pub fn run_sampled(user: &User, job: &Job, sampling: Option<Sampling>) -> Result<Measured, String> {
    let mut cmd = command_for(user, job)?;
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", job.argv.join(" ")))?;
    let pid = child.id() as libc::pid_t;
    RUNNING_GROUP.store(pid, Ordering::SeqCst);
    let mut memory = MemoryTrace::default();
    let mut next_sample = start;
    let timed_out = wait_exited(pid, start, job.timeout, &mut || {
        if let Some(s) = sampling {
            if Instant::now() >= next_sample {
                memory.add(group_rss(pid) + (s.extra)());
                next_sample += s.every;
            }
        }
    });
    let elapsed = start.elapsed();
    // The group's leader is a zombie now, so its id cannot be reused: end
    // whatever the command left behind in its group (a server, a worker).
    // SAFETY: signalling our own child's process group.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let reaped = reap(pid);
    RUNNING_GROUP.store(0, Ordering::SeqCst);
    drop(child);
    let timed_out = timed_out?;
    let (status, usage) = reaped?;
    let usage = common::rusage::Usage::from(&usage);
    if sampling.is_some() {
        // The group's peak is at least its largest process's own peak
        // (`ru_maxrss`): a program of a tenth of a second is one or two
        // samples, the first taken before it has allocated anything.
        memory.peak = memory.peak.max(usage.max_rss_bytes);
    }
    Ok(Measured {
        code: exit_code(status),
        timed_out,
        elapsed,
        cpu: usage.cpu(),
        max_rss: usage.max_rss_bytes,
        memory,
    })
}

/// Waits (without reaping) until `pid` has exited; past `timeout` kills its
/// process group. Returns whether it timed out.
/// `tick` is called at every poll (every few ms).
fn wait_exited(
    pid: libc::pid_t,
    start: Instant,
    timeout: Duration,
    tick: &mut dyn FnMut(),
) -> Result<bool, String> {
    let mut timed_out = false;
    loop {
        // SAFETY: an all-zero siginfo_t is valid for waitid to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on our own child, writing into `info`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == -1 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("waitid {pid}: {e}"));
        }
        // SAFETY: waitid filled `info` (si_pid stays 0 while it runs).
        if unsafe { info.si_pid() } != 0 {
            return Ok(timed_out);
        }
        if !timed_out && start.elapsed() > timeout {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            timed_out = true;
        }
        tick();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps `pid`, returning its wait status and the rusage of it and its
/// waited-for descendants.
fn reap(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage), String> {
    loop {
        let mut status = 0;
        // SAFETY: an all-zero rusage is valid for wait4 to fill.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child, writing into locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4 {pid}: {e}"));
        }
    }
}

fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        libc::WEXITSTATUS(status)
    }
}

/// The signal name of an exit code above 128, as `uzswap run` and shells
/// report a killed program.
pub fn describe_code(code: i32) -> String {
    let name = match code - 128 {
        _ if code <= 128 => return format!("exit {code}"),
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTERM => "SIGTERM",
        s => return format!("killed by signal {s}"),
    };
    format!("killed by {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path, argv: &[&str], timeout: Duration) -> Job {
        Job {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: dir.to_path_buf(),
            scratch: dir.to_path_buf(),
            stdout: dir.join("out"),
            stderr: dir.join("err"),
            timeout,
        }
    }

    #[test]
    fn measures_exit_codes_output_and_memory() {
        let dir = std::env::temp_dir().join(format!("uzswap-compat-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let me = User::Invoker(invoker_name());
        let script =
            "echo hi; echo oops >&2; head -c 50000000 /dev/zero | tail -c 1 >/dev/null; exit 3";
        let m = run(
            &me,
            &job(&dir, &["sh", "-c", script], Duration::from_secs(60)),
        )
        .unwrap();
        assert_eq!(m.code, 3);
        assert!(!m.timed_out);
        assert_eq!(std::fs::read_to_string(dir.join("out")).unwrap(), "hi\n");
        assert_eq!(std::fs::read_to_string(dir.join("err")).unwrap(), "oops\n");
        assert!(m.max_rss > 1 << 20, "{m:?}");
        let m = run(
            &me,
            &job(&dir, &["sleep", "30"], Duration::from_millis(200)),
        )
        .unwrap();
        assert!(m.timed_out && m.code == 128 + libc::SIGKILL, "{m:?}");
        assert!(m.elapsed < Duration::from_secs(10));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sampling_sees_the_memory_of_the_whole_group() {
        let dir = std::env::temp_dir().join(format!("uzswap-compat-sample-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let me = User::Invoker(invoker_name());
        // Two processes of the group hold 64 MiB each for a while: python
        // touches its bytearray, a second one the same.
        let hold = "import time; b = bytearray(64 << 20); b[::4096] = b\"x\" * (len(b) // 4096); time.sleep(1.5)";
        let script = format!("python3 -c '{hold}' & python3 -c '{hold}'; wait");
        let sampling = Sampling {
            every: Duration::from_millis(50),
            extra: || 1 << 20,
        };
        let m = run_sampled(
            &me,
            &job(&dir, &["sh", "-c", &script], Duration::from_secs(60)),
            Some(sampling),
        )
        .unwrap();
        assert_eq!(m.code, 0, "{m:?}");
        assert!(m.memory.samples >= 10, "{m:?}");
        assert!(m.memory.peak > (128 + 1) << 20, "{m:?}");
        assert!(
            m.memory.mean <= m.memory.peak && m.memory.mean > 1 << 20,
            "{m:?}"
        );
        // Unsampled runs say nothing.
        let m = run(&me, &job(&dir, &["true"], Duration::from_secs(60))).unwrap();
        assert_eq!(m.memory, MemoryTrace::default());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_run_shorter_than_a_sample_peaks_at_least_at_its_own_peak() {
        let dir = std::env::temp_dir().join(format!("uzswap-compat-short-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let me = User::Invoker(invoker_name());
        // 64 MiB touched and gone long before the second sample.
        let touch = "b = bytearray(64 << 20); b[::4096] = b\"x\" * (len(b) // 4096)";
        let sampling = Sampling {
            every: Duration::from_secs(30),
            extra: || 0,
        };
        let m = run_sampled(
            &me,
            &job(&dir, &["python3", "-c", touch], Duration::from_secs(60)),
            Some(sampling),
        )
        .unwrap();
        assert_eq!(m.code, 0, "{m:?}");
        assert!(m.memory.samples <= 1, "{m:?}");
        assert!(m.memory.peak >= 64 << 20, "{m:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_signals() {
        assert_eq!(describe_code(1), "exit 1");
        assert_eq!(describe_code(139), "killed by SIGSEGV");
        assert_eq!(describe_code(128 + 5), "killed by signal 5");
    }
}
