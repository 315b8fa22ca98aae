//! Running a program under the LD_PRELOAD library (`uzswap run`): finding
//! the library, checking that userfaultfd works for this user, passing the
//! settings, and collecting every process's counters at the end.

use crate::report::{ProcessReport, RunReport, RunStats};
use crate::settings::{env, Settings};
use common::passed_fd::PassedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// File name of the LD_PRELOAD library.
pub const LIBRARY: &str = "libuzswap_preload.so";
/// Variable naming the library explicitly.
pub const LIBRARY_VAR: &str = "UZSWAP_PRELOAD";

/// Why a program could not be started under uzswap.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{LIBRARY} not found (looked at {looked}); build it with `cargo build --release -p uzswap-preload`, or name it in {LIBRARY_VAR}")]
    NoLibrary { looked: String },
    #[error("{0}")]
    Settings(#[from] crate::settings::SettingsError),
    #[error(transparent)]
    Runtime(#[from] runtime::RuntimeError),
    #[error("no command to run")]
    NoCommand,
    #[error("cannot run {cmd}: {source}")]
    Spawn { cmd: String, source: std::io::Error },
    #[error(transparent)]
    RunDir(#[from] crate::rundir::RunDirError),
    #[error("--max-slowdown: {0}")]
    Controller(String),
    #[error("the run's files in {dir}: {source}")]
    RunFiles {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("uzswap attach pages with a userfaultfd that handles kernel faults: --user-mode-only would leave its system-call filter in the process after detach (seccomp filters cannot be taken out)")]
    AttachUserModeOnly,
    #[error("paging process {pid} from outside: {source}")]
    Outside {
        pid: u32,
        source: remote::PagerError,
    },
}

/// Finds the library: `$UZSWAP_PRELOAD`, else next to `exe` (or in its
/// `deps/`), as cargo lays out `target/<profile>/`.
pub fn find_library(exe: &Path) -> Result<PathBuf, LaunchError> {
    if let Some(p) = std::env::var_os(LIBRARY_VAR) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(LaunchError::NoLibrary {
                looked: format!("{LIBRARY_VAR}={}", p.display()),
            })
        };
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [dir.join(LIBRARY), dir.join("deps").join(LIBRARY)];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| LaunchError::NoLibrary {
            looked: candidates
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// How a program run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub elapsed: Duration,
    /// User and system CPU time of the program and its children.
    pub user: Duration,
    pub sys: Duration,
    /// The report of every process of the run that used the runtime, by
    /// pid.
    pub processes: Vec<ProcessReport>,
    /// Report files that could not be read, with why (a process killed
    /// while writing leaves none; a broken one is named here).
    pub unreadable: Vec<String>,
    /// What processes that changed user left for the end of the run
    /// (`NAME.note` files in [`OTHER_USERS_DIR`]: where their swap files
    /// went), each a line.
    pub notes: Vec<String>,
    /// With `--max-slowdown`: the controller's ticks.
    pub control: Option<Vec<crate::control::Sample>>,
}

impl Outcome {
    /// A counter summed over the run's processes:
    /// `outcome.total(|r| r.swap.zswpout)`.
    pub fn total(&self, counter: impl Fn(&ProcessReport) -> u64) -> u64 {
        self.processes.iter().map(counter).sum()
    }

    /// The largest peak RSS of the run's reporting processes, bytes.
    pub fn max_rss_bytes(&self) -> u64 {
        self.processes
            .iter()
            .map(|r| r.program.peak_rss_bytes)
            .max()
            .unwrap_or(0)
    }

    /// How the run ended and its counters summed (`--stats-out`).
    pub fn report(&self) -> RunReport {
        RunReport {
            run: RunStats {
                processes: self.processes.len() as u64,
                exit_code: self.exit_code() as u64,
                elapsed_us: self.elapsed.as_micros() as u64,
                user_us: self.user.as_micros() as u64,
                sys_us: self.sys.as_micros() as u64,
                max_rss_bytes: self.max_rss_bytes(),
            },
            total: ProcessReport::sum(&self.processes),
        }
    }

    /// The exit code to pass on: the program's, or 128 + its signal.
    pub fn exit_code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.status
            .code()
            .unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
    }
}

/// A program to run under uzswap.
#[derive(Debug, Clone)]
pub struct Launch {
    pub settings: Settings,
    pub library: PathBuf,
    pub command: Vec<String>,
    /// `--per-process-limit`: each process of the run has its own limit.
    /// Otherwise they share one, as a memcg's processes do (a file in the
    /// stats folder, [`Settings::shared_limit_file`]).
    pub per_process_limit: bool,
    /// `--max-slowdown`: the most the run may be slowed (0.05: 5%); a
    /// controller ([`crate::control`]) then moves the shared limit under
    /// `settings.limit_bytes`, the ceiling.
    pub max_slowdown: Option<f64>,
    /// Under a fixed shared limit, say once on stderr, while the run goes
    /// on, if its threads wait on paging more than half of ten seconds
    /// ([`crate::thrash`]).
    pub warn_thrash: bool,
}

/// User and system CPU time of this process's waited-for children so far.
pub fn children_cpu() -> (Duration, Duration) {
    let u = common::rusage::usage(common::rusage::Who::Children);
    (u.user, u.sys)
}

impl Launch {
    /// The command with the library preloaded and the settings in its
    /// environment; `stats_dir` receives each process's counters.
    pub fn command(&self, stats_dir: &Path) -> Result<Command, LaunchError> {
        let (program, args) = self.command.split_first().ok_or(LaunchError::NoCommand)?;
        let mut cmd = Command::new(program);
        cmd.args(args);
        let preload = match std::env::var("LD_PRELOAD") {
            Ok(old) if !old.is_empty() => format!("{} {old}", self.library.display()),
            _ => self.library.display().to_string(),
        };
        cmd.env("LD_PRELOAD", preload);
        let mut settings = self.settings.clone();
        if !self.per_process_limit {
            settings.shared_limit_file = Some(shared_limit_path(&self.settings, stats_dir));
        }
        for (k, v) in settings.to_vars() {
            cmd.env(k, v);
        }
        cmd.env(env::STATS_DIR, stats_dir);
        Ok(cmd)
    }

    /// [`Launch::command`], with the run's files in `stats_dir` (made
    /// now) passed down as descriptors ([`pass_run_files`]).
    pub fn run_command(&self, stats_dir: &Path) -> Result<Command, LaunchError> {
        let mut cmd = self.command(stats_dir)?;
        let shared =
            (!self.per_process_limit).then(|| shared_limit_path(&self.settings, stats_dir));
        pass_run_files(&mut cmd, stats_dir, shared.as_deref()).map_err(|source| {
            LaunchError::RunFiles {
                dir: stats_dir.to_path_buf(),
                source,
            }
        })?;
        Ok(cmd)
    }

    /// Runs the program to the end (checking userfaultfd first) and
    /// gathers every process's counters. `on_start` gets the child's pid.
    pub fn run(&self, on_start: impl FnOnce(u32)) -> Result<Outcome, LaunchError> {
        if crate::outside::is_static_command(&self.command) {
            return self.run_outside(on_start);
        }
        self.settings.validate()?;
        self.settings.probe_fault_mode()?;
        let dir = new_stats_dir("uzswap-run")?;
        let mut cmd = self.run_command(&dir)?;
        let controller = self.start_controller(&dir)?;
        let watching = self.start_thrash_watch(&dir, controller.is_some());
        let (user0, sys0) = children_cpu();
        let start = Instant::now();
        let mut child = cmd.spawn().map_err(|source| LaunchError::Spawn {
            cmd: self.command.join(" "),
            source,
        })?;
        on_start(child.id());
        let status = child.wait().map_err(|source| LaunchError::Spawn {
            cmd: self.command.join(" "),
            source,
        });
        if let Some(w) = watching {
            w.finish();
        }
        finish(status, start, (user0, sys0), controller, &dir, None)
    }

    /// With `warn_thrash`, a fixed limit the run's processes share, and no
    /// controller: the watch that tells the user their limit is too low
    /// while the run goes on. A watch that cannot start costs the run
    /// nothing but the warning.
    fn start_thrash_watch(&self, dir: &Path, controlled: bool) -> Option<crate::thrash::Watching> {
        if !self.warn_thrash || controlled || self.per_process_limit {
            return None;
        }
        let limit = self.settings.limit_bytes;
        let path = shared_limit_path(&self.settings, dir);
        crate::thrash::Watching::start(&path, crate::thrash::WINDOW, move |share| {
            eprintln!(
                "uzswap: the program has waited on paging {:.0}% of the last {} s: --limit {} is well under the memory it keeps using, and it may run many times slower than plain. Without --limit (or with --max-slowdown PCT) uzswap finds the lowest limit for the slowdown you allow",
                100.0 * share,
                crate::thrash::WINDOW.as_secs(),
                crate::settings::format_size(limit),
            );
        })
        .ok()
    }

    /// With `--max-slowdown`: starts the controller of the run's shared
    /// limit (its file in `dir`, as [`Launch::command`] names it).
    pub(crate) fn start_controller(
        &self,
        dir: &Path,
    ) -> Result<Option<crate::control::Running>, LaunchError> {
        if self.per_process_limit && self.max_slowdown.is_some() {
            return Err(LaunchError::Controller(
                "--max-slowdown moves the limit the run's processes share: not with --per-process-limit".into(),
            ));
        }
        start_controller(self.max_slowdown, &self.settings, dir)
    }
}

/// The folder of a run's stats folder where the processes that changed
/// user leave their counters: anyone may create files in it, but it is
/// reached only through the descriptor the run passes down
/// ([`env::STATS_FD`]), the folder above being private.
pub const OTHER_USERS_DIR: &str = "other-users";

/// Opens the run's shared-limit file `shared` (making it, mode 0600:
/// [`runtime::open_limit_file`]) and makes [`OTHER_USERS_DIR`] in
/// `stats_dir`, and leaves both open across `exec` for every process of
/// the command, named in its environment
/// ([`PassedFd`]'s form): a process that changes user after it starts (a
/// server started as root that runs as another user) may no longer open
/// them by name. The descriptors close when `cmd` is dropped.
fn pass_run_files(
    cmd: &mut Command,
    stats_dir: &Path,
    shared: Option<&Path>,
) -> std::io::Result<()> {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let mut keep: Vec<OwnedFd> = Vec::new();
    if let Some(path) = shared {
        let file = above_low_numbers(runtime::open_limit_file(path)?.into())?;
        cmd.env(
            env::SHARED_LIMIT_FD,
            PassedFd::of(file.as_raw_fd())?.render(),
        );
        keep.push(file);
    }
    let others = stats_dir.join(OTHER_USERS_DIR);
    std::fs::DirBuilder::new().mode(0o700).create(&others)?;
    // Write and search for anyone, no listing; sticky: each removes only
    // what it made. Set after the mkdir, whose mode the umask trims.
    std::fs::set_permissions(&others, std::fs::Permissions::from_mode(0o1733))?;
    let folder = above_low_numbers(std::fs::File::open(&others)?.into())?;
    cmd.env(env::STATS_FD, PassedFd::of(folder.as_raw_fd())?.render());
    keep.push(folder);
    let fds: Vec<i32> = keep.iter().map(|f| f.as_raw_fd()).collect();
    // SAFETY: the closure runs in the child between fork and exec and only
    // calls fcntl (async-signal-safe) on descriptors the parent keeps open
    // (`keep`, moved into the closure) for as long as the command lives.
    unsafe {
        cmd.pre_exec(move || {
            let _open = &keep;
            for &fd in &fds {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    Ok(())
}

/// Lowest number a descriptor passed down takes: shell scripts use 3–9
/// for their own redirections, and socket activation hands servers their
/// sockets from 3 up.
const PASSED_FD_FLOOR: i32 = 100;

/// `fd` moved to a number at least [`PASSED_FD_FLOOR`] (close-on-exec,
/// as before).
fn above_low_numbers(fd: std::os::fd::OwnedFd) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: F_DUPFD_CLOEXEC on an open descriptor; the result is checked
    // and owned here alone.
    let moved = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, PASSED_FD_FLOOR) };
    if moved < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `moved` was just made by fcntl and is owned by no one else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(moved) })
}

/// The run's shared-limit file: the one the settings name, else
/// `shared-limit` in the run's folder `dir`.
pub(crate) fn shared_limit_path(settings: &Settings, dir: &Path) -> PathBuf {
    settings
        .shared_limit_file
        .clone()
        .unwrap_or_else(|| dir.join("shared-limit"))
}

/// With a slowdown to keep: starts the controller of the shared limit
/// ([`shared_limit_path`]) under the settings' limit, the ceiling.
pub(crate) fn start_controller(
    max_slowdown: Option<f64>,
    settings: &Settings,
    dir: &Path,
) -> Result<Option<crate::control::Running>, LaunchError> {
    let Some(slowdown) = max_slowdown else {
        return Ok(None);
    };
    let path = shared_limit_path(settings, dir);
    let controller = crate::control::Controller::new(slowdown, settings.limit_bytes);
    crate::control::Running::start(controller, &path)
        .map(Some)
        .map_err(|e| LaunchError::Controller(format!("{}: {e}", path.display())))
}

/// The end of a run, the program waited for: its status, times and every
/// process's counters (those in `dir`, and `outside`'s, a process paged
/// from outside); `dir` is removed.
pub(crate) fn finish(
    status: Result<ExitStatus, LaunchError>,
    start: Instant,
    (user0, sys0): (Duration, Duration),
    controller: Option<crate::control::Running>,
    dir: &Path,
    outside: Option<ProcessReport>,
) -> Result<Outcome, LaunchError> {
    let elapsed = start.elapsed();
    let control = controller.map(crate::control::Running::finish);
    let (user1, sys1) = children_cpu();
    let (mut processes, unreadable) = read_stats_dir(dir);
    processes.extend(outside);
    let notes = read_notes(&dir.join(OTHER_USERS_DIR));
    let _ = std::fs::remove_dir_all(dir);
    Ok(Outcome {
        status: status?,
        elapsed,
        user: user1.saturating_sub(user0),
        sys: sys1.saturating_sub(sys0),
        processes,
        unreadable,
        notes,
        control,
    })
}

/// The lines of every `NAME.note` in `dir` (regular files, as
/// [`read_report_file`] reads them), in name order.
fn read_notes(dir: &Path) -> Vec<String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "note"))
        .collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| read_report_file(p).ok())
        .flat_map(|text| text.lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A fresh private folder for a run's per-process counters (and its
/// shared-limit file), in the user's run folder
/// ([`crate::rundir::new_run_folder`]). The caller removes it.
pub fn new_stats_dir(prefix: &str) -> Result<PathBuf, LaunchError> {
    Ok(crate::rundir::new_run_folder(prefix)?)
}

/// Every `PID.stats` in `dir` and its [`OTHER_USERS_DIR`], by pid; and
/// those that could not be read.
pub fn read_stats_dir(dir: &Path) -> (Vec<ProcessReport>, Vec<String>) {
    let (mut reports, mut unreadable) = (Vec::new(), Vec::new());
    let here = std::fs::read_dir(dir).into_iter().flatten();
    let others = std::fs::read_dir(dir.join(OTHER_USERS_DIR))
        .into_iter()
        .flatten();
    for entry in here.chain(others).flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "stats") {
            continue;
        }
        match read_report_file(&path) {
            Ok(text) => match ProcessReport::parse(&text) {
                Ok(r) => reports.push(r),
                Err(e) => unreadable.push(format!("{}: {e}", path.display())),
            },
            Err(e) => unreadable.push(format!("{}: {e}", path.display())),
        }
    }
    reports.sort_by_key(|r| r.program.pid);
    (reports, unreadable)
}

/// Most bytes read of one process's counters: a report is a few KiB.
const MAX_REPORT_BYTES: u64 = 1 << 20;

/// A report file's text. Other users may create files in
/// [`OTHER_USERS_DIR`]: only a regular file is read (no symbolic link
/// followed, no FIFO waited on), and at most [`MAX_REPORT_BYTES`] of it.
fn read_report_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    file.take(MAX_REPORT_BYTES).read_to_string(&mut text)?;
    Ok(text)
}

/// Reads a running process's counters from its socket, in the run folder
/// of the process's user (root reads any process's), once it is sure that
/// socket is that user's and that the process itself serves it.
pub fn live_stats(pid: u32) -> Result<ProcessReport, String> {
    use std::io::Read;
    let Some((path, uid)) = crate::rundir::socket_of(pid) else {
        return Err(format!("no process {pid}"));
    };
    if std::fs::symlink_metadata(&path).is_ok() {
        crate::rundir::check_socket(&path, uid)?;
    }
    match std::os::unix::net::UnixStream::connect(&path) {
        Ok(mut s) => {
            match peer_pid(&s) {
                Some(p) if p == pid || is_pager_of(p, uid) => {}
                other => {
                    return Err(format!(
                        "{} is served by process {other:?}, not by {pid}: not trusted",
                        path.display()
                    ))
                }
            }
            let mut text = String::new();
            s.read_to_string(&mut text)
                .map_err(|e| format!("reading {}: {e}", path.display()))?;
            ProcessReport::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
        }
        Err(e) => {
            let alive = Path::new(&format!("/proc/{pid}")).exists();
            Err(if alive {
                format!("process {pid} serves no uzswap stats at {} ({e}): it does not run under `uzswap run`, or has made no large allocation yet", path.display())
            } else {
                format!("no process {pid}")
            })
        }
    }
}

/// Whether process `p` may speak for a process paged from outside: an
/// uzswap of the same user (the socket is in that user's private run
/// folder, so only such a process could have made it there).
fn is_pager_of(p: u32, uid: u32) -> bool {
    let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
    comm.trim_end() == "uzswap" && crate::rundir::uid_of(p) == Some(uid)
}

/// The process at the other end of a Unix socket (`SO_PEERCRED`: the one
/// that listens on it).
fn peer_pid(s: &std::os::unix::net::UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        )
    };
    (rc == 0 && cred.pid > 0).then_some(cred.pid as u32)
}
