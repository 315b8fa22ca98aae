//! The swap file's folder for a process that changed user since `uzswap
//! run` started it (a server started as root that runs as `postgres` or
//! `nobody`): the folder the run names (`--swapfile-dir`, else the
//! starting user's temp folder) may refuse it. Its swap file is made in
//! `/var/tmp`, else `/tmp`, instead: an unnamed file of mode 0600 either
//! way (`swapfile`), so nothing of it is reachable there. The first
//! process of the run that does so says where, once; a folder that
//! refuses a process of the user who started the run is a setting of
//! that user's and stays an error.

use common::passed_fd::PassedFd;
use launch::rundir::{may_make_entries_in, VAR_TMP};
use std::path::{Path, PathBuf};

/// Folders tried, in order, by a process the run's folder refuses.
const FALLBACKS: [&str; 2] = [VAR_TMP, "/tmp"];

/// Name of the note, in the run's folder for other users' counters, that
/// the first process to fall back leaves (so that one says so), and that
/// `uzswap run` prints at the end of the run.
const SAID: &str = "swapfile-dir.note";

/// Where this process makes its swap file instead of `dir`, if `dir`
/// refuses it and it runs as another user than the one who started the
/// run (`run_folder`: the folder the run passed down, which that user
/// owns); `None`: `dir` as asked.
pub(crate) fn instead_of(dir: &Path, run_folder: Option<&PassedFd>) -> Option<PathBuf> {
    if may_make_entries_in(dir) {
        return None;
    }
    let run_folder = run_folder?;
    let folder = run_folder.current(true)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if run_folder.owner()? == me {
        return None;
    }
    let other = FALLBACKS
        .iter()
        .map(Path::new)
        .find(|d| may_make_entries_in(d))?
        .to_path_buf();
    say_once(folder, me, dir, &other);
    Some(other)
}

/// `uzswap: …` on stderr and in the note [`SAID`] (which `uzswap run`
/// prints at the end), if no process of the run has said it yet.
fn say_once(folder: std::os::fd::RawFd, me: u32, dir: &Path, other: &Path) {
    use std::io::Write;
    let Ok(mut note) = common::passed_fd::create_in(folder, SAID, true) else {
        return;
    };
    let text = format!(
        "uzswap: pid {} runs as user {me}, which may not make its swap file in {} (a folder of the user who started the run): processes of that user made theirs in {}\n",
        std::process::id(),
        dir.display(),
        other.display()
    );
    let _ = note.write_all(text.as_bytes());
    // SAFETY: write(2) of a valid buffer to stderr.
    unsafe { libc::write(2, text.as_ptr().cast(), text.len()) };
}
