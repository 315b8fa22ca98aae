//! Complete core dumps under `uzswap run`: a program that fills memory far
//! above its limit and aborts leaves a core file with every page it wrote,
//! the swapped-out ones included, as root and as user nobody. Needs the
//! LD_PRELOAD library next to the `uzswap` binary.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{as_nobody, compile_c, library, text, uzswap_for_any_user};

const PATTERN: &str = "/proc/sys/kernel/core_pattern";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The word `coredump.c` writes at index `i` of its buffer.
fn word_at(i: u64) -> u64 {
    let page = i / 512;
    if page.is_multiple_of(2) {
        0xC0DE_C0DE_0000_0000 ^ page
    } else {
        (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }
}

/// The bytes of `[addr, addr + len)` in an ELF core file (its `PT_LOAD`
/// segments), page by page; `None` for a page the file does not hold.
fn core_pages(core: &[u8], addr: u64, len: u64) -> Vec<Option<&[u8]>> {
    let u16_at = |o: usize| u16::from_le_bytes(core[o..o + 2].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(core[o..o + 8].try_into().unwrap());
    assert_eq!(&core[..4], b"\x7fELF", "not an ELF file");
    let (phoff, phentsize, phnum) = (u64_at(0x20) as usize, u16_at(0x36), u16_at(0x38));
    // (vaddr, file offset, bytes in the file) of each loadable segment.
    let loads: Vec<(u64, u64, u64)> = (0..phnum)
        .map(|k| phoff + k * phentsize)
        .filter(|&p| u32::from_le_bytes(core[p..p + 4].try_into().unwrap()) == 1)
        .map(|p| (u64_at(p + 16), u64_at(p + 8), u64_at(p + 32)))
        .collect();
    (0..len / 4096)
        .map(|pg| {
            let a = addr + pg * 4096;
            let &(va, off, size) = loads.iter().find(|(va, _, n)| *va <= a && a < va + n)?;
            let at = (off + a - va) as usize;
            core.get(at..at + 4096).filter(|_| a + 4096 <= va + size)
        })
        .collect()
}

/// Pages of the buffer the core file holds wrongly (zeros, say) or not
/// at all.
fn wrong_pages(core: &[u8], addr: u64, len: u64) -> usize {
    core_pages(core, addr, len)
        .into_iter()
        .enumerate()
        .filter(|(pg, bytes)| {
            let Some(bytes) = bytes else { return true };
            bytes.chunks_exact(8).enumerate().any(|(j, w)| {
                u64::from_le_bytes(w.try_into().unwrap()) != word_at(*pg as u64 * 512 + j as u64)
            })
        })
        .count()
}

/// Sets `core_pattern` to `core` (a file in the crashing process's
/// folder) for as long as it lives, where it is a pipe or a path
/// elsewhere; puts the old one back on drop.
struct PlainCorePattern(Option<String>);

impl PlainCorePattern {
    fn set() -> Self {
        let old = std::fs::read_to_string(PATTERN).unwrap_or_default();
        let old = old.trim_end().to_string();
        if old.starts_with('|') || old.contains('/') {
            assert!(
                is_root(),
                "core_pattern is {old:?}: only root can point it at the process's folder for this test"
            );
            std::fs::write(PATTERN, "core").unwrap();
            PlainCorePattern(Some(old))
        } else {
            PlainCorePattern(None)
        }
    }
}

impl Drop for PlainCorePattern {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(PATTERN, old);
        }
    }
}

/// Runs `cmd` (uzswap run … coredump) in `dir` with no limit on core
/// files; returns its stdout, stderr and exit code.
fn crash(mut cmd: Command, dir: &Path) -> (String, String, Option<i32>) {
    cmd.current_dir(dir);
    // SAFETY: setrlimit is async-signal-safe; it runs in the child between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let unlimited = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &unlimited) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let out = cmd.output().unwrap();
    (text(&out.stdout), text(&out.stderr), out.status.code())
}

/// The core file a crash in `dir` left (`core`, `core.PID`…).
fn core_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (name == "core" || name.starts_with("core.")) && p.is_file()
        })
        .unwrap_or_else(|| panic!("no core file in {}", dir.display()))
}

#[test]
fn a_core_dump_holds_every_page_the_program_wrote_as_root_and_as_nobody() {
    library();
    let _pattern = PlainCorePattern::set();
    let users: &[&str] = if is_root() {
        &["self", "nobody"]
    } else {
        &["self"]
    };
    for user in users {
        let dir = std::env::temp_dir().join(format!("uzswap-core-{user}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let prog = compile_c("coredump", &dir);
        let uz = uzswap_for_any_user(&dir, &[&prog]);
        let mut cmd = if *user == "nobody" {
            as_nobody(&uz)
        } else {
            Command::new(&uz)
        };
        cmd.args(["run", "-q", "--limit", "8M", "--swapfile-dir"])
            .arg(&dir)
            .arg("--")
            .arg(&prog)
            .arg("64")
            .env("TMPDIR", &dir);
        let (stdout, stderr, code) = crash(cmd, &dir);
        assert_eq!(code, Some(128 + libc::SIGABRT), "{user}: {stderr}");
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("buffer "))
            .expect(&stdout);
        let (addr, len) = line.split_once(' ').unwrap();
        let (addr, len) = (
            u64::from_str_radix(addr, 16).unwrap(),
            len.parse::<u64>().unwrap(),
        );
        assert_eq!(len, 64 << 20);
        let core = std::fs::read(core_file(&dir)).unwrap();
        let wrong = wrong_pages(&core, addr, len);
        assert_eq!(
            wrong,
            0,
            "{user}: {wrong} of {} pages wrong in the core file\nstderr: {stderr}",
            len / 4096
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn the_programs_own_handlers_and_queries_see_what_they_set() {
    library();
    let dir = std::env::temp_dir().join(format!("uzswap-core-handlers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let prog = compile_c("sigdfl", &dir);
    let out = Command::new(common::UZSWAP)
        .args(["run", "-q", "--limit", "4M", "--"])
        .arg(&prog)
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 9, "{lines:?}");
    assert!(lines.iter().all(|l| l.ends_with(" ok")), "{lines:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
