//! The work folder of a run (each case's input, each user's runs) and
//! the `uzswap` binary the cases run under, both reachable by every user
//! of the run: `nobody` reads the inputs and runs the binary and its
//! library from there.

use super::proc::User;
use super::CompatArgs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The `uzswap` binary the cases run under, with the library beside it.
pub(super) struct Tools {
    pub(super) uzswap: PathBuf,
}

/// The folders of a run.
pub(super) struct Work {
    pub(super) root: PathBuf,
    pub(super) keep: bool,
}

impl Work {
    pub(super) fn inputs(&self, case: &str) -> PathBuf {
        self.root.join("inputs").join(case)
    }

    pub(super) fn runs(&self, user: &User, case: &str) -> PathBuf {
        self.root.join("runs").join(user.name()).join(case)
    }

    /// Removes `path` (in the work folder) unless `--keep`.
    pub(super) fn remove_unless_kept_at(&self, path: &Path) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(path);
        }
    }

    pub(super) fn remove_unless_kept(&self) {
        self.remove_unless_kept_at(&self.root);
    }
}

/// Whether user `nobody` can reach `path`: every folder above it
/// searchable by others, the file itself readable (and `exec`utable).
fn reachable_by_others(path: &Path, exec: bool) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    let need = if exec { 0o005 } else { 0o004 };
    let need = if meta.is_dir() { 0o001 } else { need };
    meta.permissions().mode() & need == need
        && path.ancestors().skip(1).all(|dir| {
            dir.as_os_str().is_empty()
                || std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0)
        })
}

fn set_mode(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

pub(super) fn make_dir(path: &Path, mode: u32) -> Result<(), String> {
    std::fs::create_dir_all(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
    set_mode(path, mode)
}

/// Makes every file in `dir` readable (and its folders searchable) by
/// every user, whatever the umask was.
pub(super) fn readable_by_all(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_dir() {
            set_mode(&path, mode | 0o555)?;
            readable_by_all(&path)?;
        } else {
            let exec = if mode & 0o100 != 0 { 0o111 } else { 0 };
            set_mode(&path, mode | 0o444 | exec)?;
        }
    }
    Ok(())
}

pub(super) fn create_work(a: &CompatArgs, users: &[User]) -> Result<Work, String> {
    let parent = a.work_dir.clone().unwrap_or_else(std::env::temp_dir);
    let root = parent.join(format!("uzswap-compat-{}", std::process::id()));
    if root.exists() {
        return Err(format!("{} exists already", root.display()));
    }
    make_dir(&root, 0o755)?;
    let root = root
        .canonicalize()
        .map_err(|e| format!("{}: {e}", root.display()))?;
    if users.contains(&User::Nobody) && !reachable_by_others(&root, false) {
        let _ = std::fs::remove_dir(&root);
        return Err(format!(
            "user nobody cannot reach the work folder {}: choose another with --work-dir (or TMPDIR)",
            root.display()
        ));
    }
    Ok(Work { root, keep: a.keep })
}

/// The running `uzswap` and its library; both copied into the work folder
/// when `nobody` is among the users and cannot read them where they are (a
/// target folder under /root), or when the library is not beside the
/// binary (`$UZSWAP_PRELOAD`, which the cases' clean environment drops).
pub(super) fn locate_tools(work: &Work, users: &[User]) -> Result<Tools, String> {
    let exe = std::env::current_exe().map_err(|e| format!("locating uzswap: {e}"))?;
    let library = launch::find_library(&exe).map_err(|e| e.to_string())?;
    let beside = library.parent() == exe.parent();
    let reachable = reachable_by_others(&exe, true) && reachable_by_others(&library, false);
    if beside && (reachable || !users.contains(&User::Nobody)) {
        return Ok(Tools { uzswap: exe });
    }
    let bin = work.root.join("bin");
    make_dir(&bin, 0o755)?;
    let uzswap = bin.join("uzswap");
    for (from, to) in [(&exe, &uzswap), (&library, &bin.join(launch::run::LIBRARY))] {
        std::fs::copy(from, to)
            .map_err(|e| format!("copying {} to {}: {e}", from.display(), to.display()))?;
        set_mode(to, 0o755)?;
    }
    Ok(Tools { uzswap })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_system_binary_is_reachable_by_others() {
        assert!(reachable_by_others(Path::new("/usr/bin/env"), true));
    }
}
