//! Private run folders: where a user's live-stats sockets and each run's
//! counters and shared-limit file live.
//!
//! The folder is `$UZSWAP_RUN_DIR` if set, else `$XDG_RUNTIME_DIR/uzswap`
//! where `XDG_RUNTIME_DIR` is a folder of this user's (the login session's
//! private folder), else `/dev/shm/uzswap-UID` where `/dev/shm` is a
//! memory file system this user may write, else `TMPDIR/uzswap-UID`
//! (`/tmp/uzswap-UID`). `TMPDIR` is where temporary files go (the swap
//! file among them, on disk); the run folder is live state, as
//! `XDG_RUNTIME_DIR` is.
//!
//! The folder belongs in memory: every runtime of a run keeps its charge
//! in the shared-limit file's mapped page, and on a journaling disk file
//! system (`/tmp` on ext4) a write to that page after the flusher cleaned
//! it starts a journal handle, which waits while the journal commits the
//! program's own file writes; the run's `mkdir`, sockets and `rmdir` wait
//! the same way. A program writing a 24 MB file (`cp`, `sort -o`) took
//! 1.1–1.5x its plain time under `uzswap run` with the folder in `/tmp`,
//! 1.0x with it in `/dev/shm`.
//!
//! A shared folder lets anyone make that name first, so the folder is
//! made with mode 0700 and then checked with `lstat`: it must be a real
//! folder (not a symbolic link) owned by this user. One that another user
//! made, or a link, is refused with a clear error, never used; one of ours
//! with a wider mode (made by an older uzswap) is narrowed to 0700, unless
//! the user named it in `UZSWAP_RUN_DIR`. Files
//! inside are made with `O_NOFOLLOW` and mode 0600, each run's folder with
//! `mkdir` (never reused), and the stats socket is made 0600.

use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::settings::env;

/// A run folder that cannot be trusted or made.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    #[error("cannot make the run folder {path}: {source}")]
    Make {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing the run folder {path}: it is a symbolic link (remove it, or set UZSWAP_RUN_DIR to a folder of yours)")]
    Symlink { path: PathBuf },
    #[error("refusing the run folder {path}: it is not a folder")]
    NotAFolder { path: PathBuf },
    #[error("refusing the run folder {path}: it belongs to user {owner}, not to user {me} (another user made it first; remove it, or set UZSWAP_RUN_DIR to a folder of yours)")]
    Foreign { path: PathBuf, owner: u32, me: u32 },
}

/// The run folder of user `uid` whose environment is `var` (this
/// process's, or another process's read from `/proc/PID/environ`); not
/// made, not checked.
pub fn run_dir_for(var: impl Fn(&str) -> Option<OsString>, uid: u32) -> PathBuf {
    let shm = Path::new(SHM);
    run_dir_among(var, uid, is_writable_memory_fs(shm).then_some(shm))
}

/// The shared memory file system's usual mount point.
const SHM: &str = "/dev/shm";

/// [`run_dir_for`], with `shm` the memory file system to fall back on
/// before `/tmp`, if there is one.
fn run_dir_among(var: impl Fn(&str) -> Option<OsString>, uid: u32, shm: Option<&Path>) -> PathBuf {
    if let Some(d) = var(env::RUN_DIR).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(x) = var("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        let x = PathBuf::from(x);
        let ours = std::fs::symlink_metadata(&x).is_ok_and(|m| m.is_dir() && m.uid() == uid);
        if ours {
            return x.join("uzswap");
        }
    }
    let base = match shm {
        Some(shm) => shm.to_path_buf(),
        None => var("TMPDIR")
            .filter(|d| !d.is_empty())
            .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
    };
    base.join(format!("uzswap-{uid}"))
}

/// Whether `dir` is a tmpfs folder this process may make entries in.
fn is_writable_memory_fs(dir: &Path) -> bool {
    common::memfs::fs_type(dir) == Some(libc::TMPFS_MAGIC) && may_make_entries_in(dir)
}

/// Whether this process, as its effective user, may make entries in
/// `dir` (a process that changed user asks as its new one).
pub fn may_make_entries_in(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: faccessat with a NUL-terminated path; no memory is written.
    let rc = unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        )
    };
    rc == 0
}

/// Where swap files go by default: [`on_a_disk`] of the temp folder
/// (`$TMPDIR`, else `/tmp`), which lives in memory where `/tmp` is a tmpfs,
/// as Fedora, Arch and Debian 13 mount it.
pub fn default_swapfile_dir() -> PathBuf {
    on_a_disk(std::env::temp_dir())
}

/// Where a swap file goes instead of `dir`: `dir` itself, unless it lives
/// in memory (pages written back to a file there would still take the
/// machine's memory, only outside the limit); then [`VAR_TMP`], where it
/// is a folder on a disk this user may make files in. Where both are in
/// memory, `dir` (and the run's report says what the file took).
pub fn on_a_disk(dir: PathBuf) -> PathBuf {
    choose_swapfile_dir(
        dir,
        Path::new(VAR_TMP),
        common::memfs::path_in_memory,
        |d| d.is_dir() && may_make_entries_in(d),
    )
}

/// The folder of long-lived temporary files, on a disk by convention.
pub const VAR_TMP: &str = "/var/tmp";

/// [`on_a_disk`]'s choice, its questions passed in.
fn choose_swapfile_dir(
    tmp: PathBuf,
    fallback: &Path,
    in_memory: impl Fn(&Path) -> bool,
    usable: impl Fn(&Path) -> bool,
) -> PathBuf {
    if in_memory(&tmp) && usable(fallback) && !in_memory(fallback) {
        fallback.to_path_buf()
    } else {
        tmp
    }
}

/// This process's real user.
pub fn my_uid() -> u32 {
    // SAFETY: getuid cannot fail and has no preconditions.
    unsafe { libc::getuid() }
}

/// This process's run folder, made if missing and checked
/// ([`private_dir`]). A folder the user named (`UZSWAP_RUN_DIR`) keeps its
/// mode; one of uzswap's own names is narrowed to 0700.
pub fn run_dir() -> Result<PathBuf, RunDirError> {
    let dir = run_dir_for(|k| std::env::var_os(k), my_uid());
    let named_by_user = std::env::var_os(env::RUN_DIR).is_some_and(|d| !d.is_empty());
    private_dir(&dir, my_uid(), !named_by_user)?;
    Ok(dir)
}

/// Makes `dir` (mode 0700) if it is missing, then checks that it is a
/// folder of user `uid`'s: not a link, not another user's. With `narrow`,
/// a folder of `uid`'s with a wider mode is narrowed to 0700 (for
/// uzswap's own names only: a folder the user named, `/tmp` say, keeps
/// its mode).
pub fn private_dir(dir: &Path, uid: u32, narrow: bool) -> Result<(), RunDirError> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(RunDirError::Make {
                path: dir.into(),
                source,
            })
        }
    }
    let meta = check_private_dir(dir, uid)?;
    if narrow && meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(
            |source| RunDirError::Make {
                path: dir.into(),
                source,
            },
        )?;
    }
    Ok(())
}

/// Checks, without changing anything, that `dir` is a real folder (not a
/// symbolic link) owned by `uid`; returns its metadata.
pub fn check_private_dir(dir: &Path, uid: u32) -> Result<std::fs::Metadata, RunDirError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| RunDirError::Make {
        path: dir.into(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(RunDirError::Symlink { path: dir.into() });
    }
    if !meta.is_dir() {
        return Err(RunDirError::NotAFolder { path: dir.into() });
    }
    if meta.uid() != uid {
        return Err(RunDirError::Foreign {
            path: dir.into(),
            owner: meta.uid(),
            me: uid,
        });
    }
    Ok(meta)
}

/// This process's live-stats socket, in its run folder (made and
/// checked).
pub fn own_socket_path() -> Result<PathBuf, RunDirError> {
    Ok(run_dir()?.join(format!("{}.sock", std::process::id())))
}

/// Listens on the live-stats socket `path` (one left by a process that
/// died is replaced), which only this user may connect to (mode 0600, in
/// a folder of mode 0700). `None` where it cannot be made so.
pub fn bind_stats_socket(path: &Path) -> Option<std::os::unix::net::UnixListener> {
    let _ = std::fs::remove_file(path);
    let listener = std::os::unix::net::UnixListener::bind(path).ok()?;
    if std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).is_err() {
        let _ = std::fs::remove_file(path);
        return None;
    }
    Some(listener)
}

/// A new folder for one run's counters (and its shared-limit file), in
/// this user's run folder: `RUN_DIR/PREFIX-PID-NANOS`, made with mode
/// 0700 by `mkdir` (an existing one is an error, never reused). The
/// caller removes it.
pub fn new_run_folder(prefix: &str) -> Result<PathBuf, RunDirError> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = run_dir()?.join(format!("{prefix}-{}-{nanos}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|source| RunDirError::Make {
            path: dir.clone(),
            source,
        })?;
    Ok(dir)
}

/// The environment of process `pid` (`/proc/PID/environ`), if this
/// process may read it.
pub fn environ_of(pid: u32) -> Option<Vec<(OsString, OsString)>> {
    use std::os::unix::ffi::OsStrExt;
    let raw = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    Some(
        raw.split(|&b| b == 0)
            .filter_map(|kv| {
                let eq = kv.iter().position(|&b| b == b'=')?;
                Some((
                    std::ffi::OsStr::from_bytes(&kv[..eq]).to_os_string(),
                    std::ffi::OsStr::from_bytes(&kv[eq + 1..]).to_os_string(),
                ))
            })
            .collect(),
    )
}

/// The real user of process `pid` (`/proc/PID/status`), as its runtime
/// names its run folder.
pub fn uid_of(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().next())
        .and_then(|real| real.parse().ok())
}

/// Where process `pid` serves its live stats, and the user it runs as:
/// its run folder, found from its own environment where it can be read
/// (root reading another user's process), else from this process's.
pub fn socket_of(pid: u32) -> Option<(PathBuf, u32)> {
    let uid = uid_of(pid)?;
    let dir = match environ_of(pid) {
        Some(vars) => run_dir_for(
            |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            uid,
        ),
        None => run_dir_for(|k| std::env::var_os(k), uid),
    };
    Some((dir.join(format!("{pid}.sock")), uid))
}

/// Checks that `sock` is a socket owned by `uid` in a folder owned by
/// `uid`: a socket anyone else made is not trusted to speak for the
/// process.
pub fn check_socket(sock: &Path, uid: u32) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    if let Some(dir) = sock.parent() {
        check_private_dir(dir, uid).map_err(|e| e.to_string())?;
    }
    let meta = std::fs::symlink_metadata(sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    if !meta.file_type().is_socket() {
        return Err(format!("{}: not a socket", sock.display()));
    }
    if meta.uid() != uid {
        return Err(format!(
            "{}: belongs to user {}, not to the process's user {uid}: not trusted",
            sock.display(),
            meta.uid()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("uzswap-rundir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_run_folder_follows_the_environment() {
        let vars = |pairs: Vec<(&'static str, OsString)>| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        };
        assert_eq!(
            run_dir_for(vars(vec![(env::RUN_DIR, "/x/y".into())]), 7),
            PathBuf::from("/x/y")
        );
        let shm = Some(Path::new("/mem"));
        assert_eq!(
            run_dir_among(vars(vec![]), 7, None),
            PathBuf::from("/tmp/uzswap-7")
        );
        assert_eq!(
            run_dir_among(vars(vec![]), 7, shm),
            PathBuf::from("/mem/uzswap-7"),
            "in memory where there is a memory file system"
        );
        assert_eq!(
            run_dir_among(vars(vec![("TMPDIR", "/var/tmp".into())]), 7, shm),
            PathBuf::from("/mem/uzswap-7"),
            "TMPDIR is for temporary files, not live state"
        );
        assert_eq!(
            run_dir_among(vars(vec![("TMPDIR", "/var/tmp".into())]), 7, None),
            PathBuf::from("/var/tmp/uzswap-7")
        );
        // XDG_RUNTIME_DIR is used where it is the user's own folder.
        let x = scratch("xdg");
        let me = my_uid();
        assert_eq!(
            run_dir_for(vars(vec![("XDG_RUNTIME_DIR", x.clone().into())]), me),
            x.join("uzswap")
        );
        assert_eq!(
            run_dir_among(
                vars(vec![("XDG_RUNTIME_DIR", x.clone().into())]),
                me + 1,
                None
            ),
            PathBuf::from(format!("/tmp/uzswap-{}", me + 1)),
            "another user's XDG_RUNTIME_DIR (an environment passed on by setpriv) is not used"
        );
        std::fs::remove_dir_all(&x).unwrap();
    }

    #[test]
    fn a_memory_file_system_is_told_from_a_disk_one() {
        // /proc is no tmpfs; a missing folder is nothing.
        assert!(!is_writable_memory_fs(Path::new("/proc")));
        assert!(!is_writable_memory_fs(Path::new("/no/such/folder")));
        // /dev/shm (Linux mounts a tmpfs there) is found as one where it is
        // a tmpfs we can make a folder in, and never where it is not a tmpfs.
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let shm_is_tmpfs = mounts.lines().any(|l| {
            let mut f = l.split_whitespace().skip(1);
            f.next() == Some(SHM) && f.next() == Some("tmpfs")
        });
        let probe = Path::new(SHM).join(format!("uzswap-probe-{}", std::process::id()));
        let can_make = std::fs::create_dir(&probe).is_ok();
        let _ = std::fs::remove_dir(&probe);
        assert_eq!(
            is_writable_memory_fs(Path::new(SHM)),
            shm_is_tmpfs && can_make
        );
    }

    #[test]
    fn swap_files_go_to_a_disk_where_the_temp_folder_is_in_memory() {
        let tmp = PathBuf::from("/tmp");
        let var = Path::new("/var/tmp");
        let memory =
            |set: &'static [&'static str]| move |d: &Path| set.iter().any(|m| d == Path::new(m));
        let yes = |_: &Path| true;
        // The temp folder on a disk: it.
        assert_eq!(choose_swapfile_dir(tmp.clone(), var, memory(&[]), yes), tmp);
        // A tmpfs /tmp: /var/tmp on a disk.
        assert_eq!(
            choose_swapfile_dir(tmp.clone(), var, memory(&["/tmp"]), yes),
            var
        );
        // Both in memory, or /var/tmp not ours to write: the temp folder.
        assert_eq!(
            choose_swapfile_dir(tmp.clone(), var, memory(&["/tmp", "/var/tmp"]), yes),
            tmp
        );
        assert_eq!(
            choose_swapfile_dir(tmp.clone(), var, memory(&["/tmp"]), |_: &Path| false),
            tmp
        );
    }

    #[test]
    fn a_private_folder_is_made_0700_and_links_or_files_are_refused() {
        let d = scratch("private");
        let me = my_uid();
        let run = d.join("run");
        private_dir(&run, me, true).unwrap();
        let mode = std::fs::metadata(&run).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700);
        // A wider folder of ours is narrowed, unless the user named it.
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
        private_dir(&run, me, false).unwrap();
        assert_eq!(std::fs::metadata(&run).unwrap().mode() & 0o777, 0o755);
        private_dir(&run, me, true).unwrap();
        assert_eq!(std::fs::metadata(&run).unwrap().mode() & 0o777, 0o700);
        // A link to a folder (someone else's, say) is refused, not followed.
        let link = d.join("link");
        std::os::unix::fs::symlink(&run, &link).unwrap();
        let e = private_dir(&link, me, true).unwrap_err();
        assert!(matches!(e, RunDirError::Symlink { .. }), "{e}");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let file = d.join("file");
        std::fs::write(&file, b"").unwrap();
        assert!(matches!(
            private_dir(&file, me, true),
            Err(RunDirError::NotAFolder { .. })
        ));
        // A folder of another user's: here, ours seen as another's.
        let e = private_dir(&run, me + 1, true).unwrap_err();
        assert!(matches!(e, RunDirError::Foreign { .. }), "{e}");
        assert!(e.to_string().contains("belongs to user"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn this_process_is_found_by_its_own_environment() {
        let pid = std::process::id();
        assert_eq!(uid_of(pid), Some(my_uid()));
        let (sock, uid) = socket_of(pid).unwrap();
        assert_eq!(uid, my_uid());
        assert_eq!(
            sock,
            run_dir_for(|k| std::env::var_os(k), my_uid()).join(format!("{pid}.sock"))
        );
        assert!(socket_of(u32::MAX - 1).is_none(), "no such process");
    }
}
