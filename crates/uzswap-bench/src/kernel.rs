//! The usemem workload under the real kernel, for `uzswap bench kernel-peer`:
//! a memcg with a memory limit (v1 `memory.limit_in_bytes`, or v2
//! `memory.high` as the seeds use), swap on a swap file with kernel zswap,
//! or on zram. Needs root. Every setting changed is recorded first and put
//! back when the [`Machine`] guard drops, also on errors and panics:
//! zswap's parameters, the THP sizes, swap devices, zram0, the cgroup, and
//! debugfs if it was mounted for the run.

use crate::usemem::{run_workers, Measured, System, Workload};
use crate::BenchError;
use launch::format_size;
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How the kernel swaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSwap {
    /// zswap with this compressor, in front of a swap file.
    Zswap(String),
    /// zram0 with this algorithm as the swap device, zswap off.
    Zram(String),
}

fn err(msg: impl Into<String>) -> BenchError {
    BenchError::Kernel(msg.into())
}

fn read(path: &Path) -> Result<String, BenchError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| err(format!("reading {}: {e}", path.display())))
}

fn write(path: &Path, value: &str) -> Result<(), BenchError> {
    std::fs::write(path, value)
        .map_err(|e| err(format!("writing {value:?} to {}: {e}", path.display())))
}

/// The selected word of a sysfs choice list (`always [madvise] never`).
fn selected(choice: &str) -> String {
    choice
        .split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(choice)
        .to_string()
}

fn run_tool(tool: &str, args: &[&str]) -> Result<(), BenchError> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .map_err(|e| err(format!("{tool}: {e} (util-linux)")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(err(format!(
            "{tool} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// `/proc/vmstat` counters.
pub fn vmstat() -> Result<Vec<(String, u64)>, BenchError> {
    common::name_value::parse(&read(Path::new("/proc/vmstat"))?)
        .map_err(|e| err(format!("/proc/vmstat: {e}")))
}

/// A `/proc/vmstat` counter; one this kernel lacks is an error.
fn counter(stats: &[(String, u64)], name: &str) -> Result<u64, BenchError> {
    common::name_value::get(stats, name).ok_or_else(|| {
        err(format!(
            "/proc/vmstat has no {name} (a kernel without zswap?)"
        ))
    })
}

/// The kernel's swap counters, read before and after a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SwapCounts {
    pub zswpout: u64,
    pub zswpin: u64,
    pub pswpout: u64,
    pub pswpin: u64,
    /// zswap's `reject_*` counters (debugfs), summed.
    pub rejects: u64,
}

impl SwapCounts {
    /// The counters now (`/proc/vmstat`, debugfs zswap).
    pub fn now() -> Result<Self, BenchError> {
        let v = vmstat()?;
        Ok(Self {
            zswpout: counter(&v, "zswpout")?,
            zswpin: counter(&v, "zswpin")?,
            pswpout: counter(&v, "pswpout")?,
            pswpin: counter(&v, "pswpin")?,
            rejects: Machine::reject_total(),
        })
    }

    /// What was counted between `before` and `self`.
    pub fn since(self, before: Self) -> Self {
        Self {
            zswpout: self.zswpout.saturating_sub(before.zswpout),
            zswpin: self.zswpin.saturating_sub(before.zswpin),
            pswpout: self.pswpout.saturating_sub(before.pswpout),
            pswpin: self.pswpin.saturating_sub(before.pswpin),
            rejects: self.rejects.saturating_sub(before.rejects),
        }
    }
}

/// `Zswap:` of `/proc/meminfo`, in bytes: the memory zswap's pool takes.
pub fn zswap_pool_bytes() -> u64 {
    common::meminfo::bytes("Zswap").unwrap_or(0)
}

const ZSWAP: &str = "/sys/module/zswap/parameters";
const MEMCG_V1: &str = "/sys/fs/cgroup/memory";

/// Whether the kernel runs use a cgroup v1 memcg (this machine mounts the
/// v1 memory controller). A v1 memcg does not charge zswap's pool: its
/// limit counts resident memory only, and the pool is bounded by
/// `max_pool_percent` alone. uzswap runs compared with it use the same
/// rule (`--uncharged-pool`); a v2 memcg charges the pool, as uzswap does
/// by default.
pub fn memcg_v1() -> bool {
    Path::new(MEMCG_V1).join("memory.limit_in_bytes").exists()
}

/// What the limit counts on both sides, for the tables' headers.
pub fn limit_rule() -> &'static str {
    if memcg_v1() {
        "the limit counts resident memory, not the compressed pool (a cgroup v1 memcg does not charge zswap; uzswap runs with --uncharged-pool)"
    } else {
        "the limit counts resident memory and the compressed pool (a cgroup v2 memcg charges zswap, as uzswap does)"
    }
}
const THP: &str = "/sys/kernel/mm/transparent_hugepage";
const ZRAM: &str = "/sys/block/zram0";
const DEBUG_ZSWAP: &str = "/sys/kernel/debug/zswap";

/// The machine set up for one kernel run; dropping it restores everything.
pub struct Machine {
    /// sysfs files changed, with their values before, in change order.
    saved: Vec<(PathBuf, String)>,
    swapfile: Option<PathBuf>,
    zram_swap: bool,
    cgroup: PathBuf,
    mounted_debugfs: bool,
    /// Where worker pids go.
    procs_file: CString,
}

impl Machine {
    /// Checks that this is root and nothing is in the way, then sets up
    /// swap, zswap or zram, the THP folio size (`None`: the machine's THP
    /// settings as they are) and a memcg of `limit`.
    pub fn prepare(
        swap: &KernelSwap,
        limit: usize,
        folio: Option<usize>,
        swap_bytes: usize,
    ) -> Result<Self, BenchError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(err(
                "bench kernel-peer needs root: it creates a memcg, turns swap on and sets zswap's parameters",
            ));
        }
        let active = read(Path::new("/proc/swaps"))?;
        if active.lines().count() > 1 {
            return Err(err(format!(
                "swap is already on ({}); turn it off for a clean comparison",
                active.lines().skip(1).collect::<Vec<_>>().join("; ")
            )));
        }
        let mut m = Machine {
            saved: Vec::new(),
            swapfile: None,
            zram_swap: false,
            cgroup: PathBuf::new(),
            mounted_debugfs: false,
            procs_file: CString::default(),
        };
        m.mount_debugfs();
        if let Some(folio) = folio {
            m.set_folio(folio)?;
        }
        match swap {
            KernelSwap::Zswap(compressor) => m.zswap(compressor, swap_bytes)?,
            KernelSwap::Zram(algorithm) => m.zram(algorithm, swap_bytes)?,
        }
        m.cgroup(limit)?;
        Ok(m)
    }

    fn set(&mut self, path: impl Into<PathBuf>, value: &str) -> Result<(), BenchError> {
        let path = path.into();
        let old = read(&path)?;
        if !self.saved.iter().any(|(p, _)| *p == path) {
            self.saved.push((path.clone(), selected(&old)));
        }
        write(&path, value)
    }

    fn mount_debugfs(&mut self) {
        if Path::new(DEBUG_ZSWAP).exists() {
            return;
        }
        let ok = Command::new("mount")
            .args(["-t", "debugfs", "none", "/sys/kernel/debug"])
            .output()
            .is_ok_and(|o| o.status.success());
        self.mounted_debugfs = ok;
    }

    /// Large folios of `folio` bytes for anonymous memory (mTHP sizes).
    fn set_folio(&mut self, folio: usize) -> Result<(), BenchError> {
        if !Path::new(THP).exists() {
            return if folio == 4096 {
                Ok(())
            } else {
                Err(err("this kernel has no transparent huge pages"))
            };
        }
        self.set(format!("{THP}/enabled"), "never")?;
        let sizes: Vec<String> = std::fs::read_dir(THP)
            .map_err(|e| err(e.to_string()))?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("hugepages-"))
            .filter(|n| Path::new(THP).join(n).join("enabled").exists())
            .collect();
        let want = format!("hugepages-{}kB", folio / 1024);
        if folio > 4096 && !sizes.contains(&want) {
            return Err(err(format!("this kernel has no {want} folios")));
        }
        for s in sizes {
            let v = if s == want { "always" } else { "never" };
            self.set(format!("{THP}/{s}/enabled"), v)?;
        }
        Ok(())
    }

    fn zswap(&mut self, compressor: &str, bytes: usize) -> Result<(), BenchError> {
        let crypto = read(Path::new("/proc/crypto"))?;
        if !crypto
            .lines()
            .any(|l| l.split(':').nth(1).map(str::trim) == Some(compressor))
        {
            return Err(err(format!(
                "the kernel has no {compressor} compressor (see /proc/crypto)"
            )));
        }
        self.set(format!("{ZSWAP}/enabled"), "Y")?;
        self.set(format!("{ZSWAP}/compressor"), compressor)?;
        self.set(format!("{ZSWAP}/max_pool_percent"), "20")?;
        let path = PathBuf::from(format!("/var/tmp/uzswap-peer-{}.swap", std::process::id()));
        let file =
            std::fs::File::create(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
        self.swapfile = Some(path.clone());
        // SAFETY: fallocate on a file we own; the result is checked.
        let r = unsafe {
            libc::fallocate(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
                0,
                bytes as libc::off_t,
            )
        };
        if r != 0 {
            return Err(err(format!(
                "allocating a {} swap file: {}",
                format_size(bytes),
                std::io::Error::last_os_error()
            )));
        }
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| err(e.to_string()))?;
        let p = path.display().to_string();
        run_tool("mkswap", &[&p])?;
        run_tool("swapon", &[&p])
    }

    fn zram(&mut self, algorithm: &str, bytes: usize) -> Result<(), BenchError> {
        if !Path::new(ZRAM).exists() {
            return Err(err("no /sys/block/zram0 (modprobe zram)"));
        }
        if read(Path::new(&format!("{ZRAM}/disksize")))? != "0" {
            return Err(err("zram0 is in use (its disksize is set); reset it first"));
        }
        let algos = read(Path::new(&format!("{ZRAM}/comp_algorithm")))?;
        if !algos
            .split_whitespace()
            .any(|a| a.trim_matches(['[', ']']) == algorithm)
        {
            return Err(err(format!("zram offers {algos}, not {algorithm}")));
        }
        self.set(format!("{ZSWAP}/enabled"), "N")?;
        self.set(format!("{ZRAM}/comp_algorithm"), algorithm)?;
        write(Path::new(&format!("{ZRAM}/disksize")), &bytes.to_string())?;
        self.zram_swap = true;
        run_tool("mkswap", &["/dev/zram0"])?;
        run_tool("swapon", &["/dev/zram0"])
    }

    fn cgroup(&mut self, limit: usize) -> Result<(), BenchError> {
        let name = format!("uzswap-peer-{}", std::process::id());
        let v1 = Path::new(MEMCG_V1);
        let (dir, knob) = if memcg_v1() {
            (v1.join(&name), "memory.limit_in_bytes")
        } else if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            (Path::new("/sys/fs/cgroup").join(&name), "memory.high")
        } else {
            return Err(err("no memory cgroup controller mounted"));
        };
        std::fs::create_dir(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
        self.cgroup = dir.clone();
        write(&dir.join(knob), &limit.to_string())?;
        self.procs_file = CString::new(dir.join("cgroup.procs").display().to_string())
            .map_err(|e| err(e.to_string()))?;
        Ok(())
    }

    /// The workload's command (the parent forks the workers, which stay in
    /// its memcg), moved into the memcg before it runs.
    pub fn command(&self, w: &Workload) -> Command {
        let mut c = w.command();
        let path = self.procs_file.clone();
        // SAFETY: the closure runs in the child between fork and exec and
        // only makes async-signal-safe calls (getpid, open, write, close)
        // on memory prepared before the fork.
        unsafe {
            c.pre_exec(move || {
                let mut buf = [0u8; 20];
                let digits = common::decimal::format(libc::getpid() as u64, &mut buf);
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let len = digits.len();
                let r = libc::write(fd, digits.as_ptr() as *const libc::c_void, len);
                libc::close(fd);
                if r != len as isize {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }

    /// `argv` run in this memcg: a shell moves itself in, then execs it.
    pub fn enter_argv(&self, argv: &[String]) -> Vec<String> {
        let mut out = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            r#"echo $$ > "$0" && exec "$@""#.to_string(),
            self.procs_file.to_string_lossy().into_owned(),
        ];
        out.extend_from_slice(argv);
        out
    }

    /// The most memory the memcg was charged since it was made (v1
    /// `memory.max_usage_in_bytes`, v2 `memory.peak`), bytes; 0 if unknown.
    pub fn memcg_peak_bytes(&self) -> u64 {
        ["memory.max_usage_in_bytes", "memory.peak"]
            .iter()
            .find_map(|f| read(&self.cgroup.join(f)).ok()?.parse().ok())
            .unwrap_or(0)
    }

    /// Pages zswap rejected so far (debugfs `reject_*`, summed).
    pub fn reject_total() -> u64 {
        std::fs::read_dir(DEBUG_ZSWAP)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("reject_"))
            .filter_map(|e| {
                std::fs::read_to_string(e.path())
                    .ok()?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .sum()
    }

    /// The memory zram0 uses now (`mm_stat`'s `mem_used_total`).
    pub fn zram_mem_used() -> u64 {
        std::fs::read_to_string(format!("{ZRAM}/mm_stat"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(2)?.parse().ok())
            .unwrap_or(0)
    }

    /// The most memory zram0 used since it was set up (`mm_stat`).
    pub fn zram_mem_used_max() -> u64 {
        std::fs::read_to_string(format!("{ZRAM}/mm_stat"))
            .ok()
            .and_then(|s| s.split_whitespace().nth(4)?.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if !self.cgroup.as_os_str().is_empty() {
            // Killed processes may take a moment to leave the memcg.
            for _ in 0..100 {
                if std::fs::remove_dir(&self.cgroup).is_ok() || !self.cgroup.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        if let Some(p) = self.swapfile.take() {
            let _ = run_tool("swapoff", &[&p.display().to_string()]);
            let _ = std::fs::remove_file(&p);
        }
        if self.zram_swap {
            let _ = run_tool("swapoff", &["/dev/zram0"]);
            let _ = write(Path::new(&format!("{ZRAM}/reset")), "1");
        }
        for (path, value) in self.saved.drain(..).rev() {
            if let Err(e) = write(&path, &value) {
                eprintln!(
                    "bench kernel-peer: could not restore {}: {e}",
                    path.display()
                );
            }
        }
        if self.mounted_debugfs {
            let _ = Command::new("umount").arg("/sys/kernel/debug").output();
        }
    }
}

/// Runs the workload under the kernel with `swap`, the processes sharing a
/// memcg of `limit` bytes, anonymous folios of `folio` bytes.
pub fn run_kernel(
    w: &Workload,
    swap: &KernelSwap,
    limit: usize,
    folio: usize,
) -> Result<Measured, BenchError> {
    let swap_bytes = (w.footprint() * 2).max(256 << 20);
    let machine = Machine::prepare(swap, limit, Some(folio), swap_bytes)?;
    let before = SwapCounts::now()?;
    let mut pool_peak = 0u64;
    let zram = matches!(swap, KernelSwap::Zram(_));
    let run = run_workers(machine.command(w), w.procs, |_| {
        let now = if zram {
            Machine::zram_mem_used_max()
        } else {
            zswap_pool_bytes()
        };
        pool_peak = pool_peak.max(now);
    })?;
    let counts = SwapCounts::now()?.since(before);
    if zram {
        pool_peak = pool_peak.max(Machine::zram_mem_used_max());
    }
    drop(machine);
    let (system, compressor) = match swap {
        KernelSwap::Zswap(c) => (System::KernelZswap, c.clone()),
        KernelSwap::Zram(a) => (System::KernelZram, a.clone()),
    };
    Ok(Measured {
        system,
        compressor,
        folio: format_size(folio),
        procs: w.procs,
        total_kbs: run.total_kbs,
        aggregate_kbs: run.aggregate_kbs,
        elapsed: run.elapsed,
        user: run.user,
        sys: run.sys,
        zswpout: counts.zswpout,
        zswpin: counts.zswpin,
        pswpout: counts.pswpout,
        pswpin: counts.pswpin,
        rejects: counts.rejects,
        pool_peak_bytes: pool_peak,
        verified: run.verified,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_choices_read_back_as_the_selected_word() {
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("[lzo-rle] lzo lz4"), "lzo-rle");
        assert_eq!(selected("Y"), "Y");
        assert_eq!(selected("20"), "20");
    }

    #[test]
    fn vmstat_has_the_swap_counters() {
        let v = vmstat().unwrap();
        for name in ["pswpin", "pswpout"] {
            assert!(v.iter().any(|(k, _)| k == name), "{name} missing");
        }
    }
}
