//! The usemem experiments, repeated and set side by side: `bench usemem`
//! (processes under `uzswap run`, every compressor × folio) and `bench
//! kernel-peer` (the same workload under uzswap, kernel zswap and zram,
//! interleaved). Each configuration runs `reps` times; the run with the
//! median whole-job elapsed time stands for it.

use crate::kernel::{self, KernelSwap};
use crate::usemem::{self, Measured, System, UsememParams, Workload};
use crate::{BenchError, Progress};
use launch::Settings;
use std::path::PathBuf;

/// `bench usemem`, `reps` times interleaved: the median run of each
/// compressor × folio.
pub fn usemem(
    params: &UsememParams,
    reps: usize,
    progress: &Progress,
) -> Result<Vec<Measured>, BenchError> {
    let mut runs: Vec<Vec<Measured>> = Vec::new();
    for _ in 0..reps {
        for (i, m) in usemem::run(params, progress)?.into_iter().enumerate() {
            if runs.len() <= i {
                runs.push(Vec::new());
            }
            runs[i].push(m);
        }
    }
    Ok(medians(runs))
}

/// What `bench kernel-peer` runs.
#[derive(Debug, Clone)]
pub struct KernelPeerParams {
    pub workload: Workload,
    /// The limit all processes share (uzswap) / the memcg's (kernel).
    pub limit_bytes: usize,
    /// Each run under uzswap and under kernel zswap.
    pub compressors: Vec<String>,
    /// zram algorithms, run as a kernel swap device.
    pub zram: Vec<String>,
    /// uzswap's eviction unit and the kernel's mTHP size.
    pub folio_bytes: usize,
    /// uzswap compresses each batch with worker threads.
    pub parallel: bool,
    /// uzswap's pool limit (`--pool-limit`): a small one forces writeback
    /// to the swap file.
    pub pool_limit_bytes: Option<usize>,
    /// Also run uzswap with its swap file unencrypted
    /// (`--no-encrypt-swap`), to show what encryption costs.
    pub plain_swap_too: bool,
    pub library: PathBuf,
    pub reps: usize,
}

/// The label of uzswap's rows whose swap file is not encrypted.
pub const PLAIN_SWAP: &str = "(plain swap file)";

/// One configuration of the comparison.
enum PeerRun {
    Uzswap(Settings),
    Kernel(KernelSwap),
}

impl KernelPeerParams {
    /// Side by side: uzswap then kernel zswap for each compressor, then
    /// zram.
    fn configs(&self) -> Result<Vec<(String, PeerRun)>, BenchError> {
        let mut configs = Vec::new();
        for c in &self.compressors {
            let settings = Settings {
                limit_bytes: self.limit_bytes,
                // The same rule as the kernel's memcg (see memcg_v1).
                charge_pool: !kernel::memcg_v1(),
                compressor: c.parse().map_err(|e| BenchError::Params(format!("{e}")))?,
                folio_bytes: self.folio_bytes,
                parallel: self.parallel,
                swapfile_bytes: (self.workload.footprint() * 2).max(64 << 20),
                pool_limit_bytes: self.pool_limit_bytes,
                ..Settings::default()
            };
            settings
                .validate()
                .map_err(|e| BenchError::Params(e.to_string()))?;
            if self.plain_swap_too {
                let plain = Settings {
                    encrypt_swap: false,
                    ..settings.clone()
                };
                configs.push((format!("uzswap {c} {PLAIN_SWAP}"), PeerRun::Uzswap(plain)));
            }
            configs.push((format!("uzswap {c}"), PeerRun::Uzswap(settings)));
            configs.push((
                format!("kernel zswap {c}"),
                PeerRun::Kernel(KernelSwap::Zswap(c.clone())),
            ));
        }
        for z in &self.zram {
            configs.push((
                format!("kernel zram {z}"),
                PeerRun::Kernel(KernelSwap::Zram(z.clone())),
            ));
        }
        Ok(configs)
    }

    /// How many runs [`kernel_peer`] makes (for progress).
    pub fn runs(&self) -> usize {
        let uzswap_runs = if self.plain_swap_too { 2 } else { 1 };
        ((1 + uzswap_runs) * self.compressors.len() + self.zram.len()) * self.reps
    }
}

/// `bench kernel-peer` (root): every configuration `reps` times,
/// interleaved; the median run of each.
pub fn kernel_peer(p: &KernelPeerParams, progress: &Progress) -> Result<Vec<Measured>, BenchError> {
    let configs = p.configs()?;
    let mut runs: Vec<Vec<Measured>> = configs.iter().map(|_| Vec::new()).collect();
    for rep in 0..p.reps {
        for (i, (name, cfg)) in configs.iter().enumerate() {
            let m = match cfg {
                PeerRun::Uzswap(s) => {
                    let mut m = usemem::run_uzswap(&p.workload, s, &p.library)?;
                    if !s.encrypt_swap {
                        m.compressor = format!("{} {PLAIN_SWAP}", m.compressor);
                    }
                    m
                }
                PeerRun::Kernel(k) => {
                    kernel::run_kernel(&p.workload, k, p.limit_bytes, p.folio_bytes)?
                }
            };
            runs[i].push(m);
            progress.step(&format!("{name}, run {}", rep + 1));
        }
    }
    Ok(medians(runs))
}

/// The run with the median whole-job elapsed time of each configuration's
/// runs; it counts as verified only if every run was.
pub fn medians(runs: Vec<Vec<Measured>>) -> Vec<Measured> {
    runs.into_iter()
        .filter_map(|mut r| {
            r.sort_by_key(|m| m.elapsed);
            let verified = r.iter().all(|m| m.verified);
            let mut mid = r.get(r.len() / 2).cloned()?;
            mid.verified = verified;
            Some(mid)
        })
        .collect()
}

/// An error if any run read back a page that differed from the one written.
pub fn check_verified(rows: &[Measured]) -> Result<(), BenchError> {
    match rows.iter().find(|m| !m.verified) {
        Some(m) => Err(BenchError::Params(format!(
            "{}: a page read back differed from the page written",
            m.label()
        ))),
        None => Ok(()),
    }
}

/// uzswap against one kernel configuration, whole job.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// e.g. `lzo-rle vs zswap`.
    pub what: String,
    /// uzswap's whole-job elapsed time over the kernel's.
    pub elapsed: f64,
    /// The goal for `elapsed` (`<= 0.67x` against zswap, `<= 1.0x` zram).
    pub elapsed_goal: &'static str,
    /// CPU seconds per GiB swapped out, uzswap's over the kernel's (goal
    /// ≤ 1.0x).
    pub cpu_per_gib: f64,
    /// The seeds' write-phase Total throughput ratio (a labelled extra,
    /// not the goal).
    pub write_phase_total: f64,
}

/// uzswap against kernel zswap (same compressor) and zram.
/// What encrypting the swap file costs, per compressor run both ways:
/// (compressor, encrypted / plain whole-job CPU, encrypted / plain
/// elapsed, pages written to the file by the encrypted run).
pub fn encryption_costs(rows: &[Measured]) -> Vec<(String, f64, f64, u64)> {
    let uz = |m: &&Measured| m.system == System::Uzswap;
    rows.iter()
        .filter(uz)
        .filter_map(|enc| {
            let plain_name = format!("{} {PLAIN_SWAP}", enc.compressor);
            let plain = rows
                .iter()
                .filter(uz)
                .find(|p| p.compressor == plain_name)?;
            Some((
                enc.compressor.clone(),
                enc.cpu().as_secs_f64() / plain.cpu().as_secs_f64(),
                enc.elapsed.as_secs_f64() / plain.elapsed.as_secs_f64(),
                enc.pswpout,
            ))
        })
        .collect()
}

pub fn ratios(rows: &[Measured]) -> Vec<Ratio> {
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
    let make = |what: String, u: &Measured, k: &Measured, elapsed_goal| Ratio {
        what,
        elapsed: ratio(u.elapsed.as_secs_f64(), k.elapsed.as_secs_f64()),
        elapsed_goal,
        cpu_per_gib: ratio(u.cpu_per_gib(), k.cpu_per_gib()),
        write_phase_total: ratio(u.total_kbs, k.total_kbs),
    };
    let mut out = Vec::new();
    for u in rows.iter().filter(|m| m.system == System::Uzswap) {
        if let Some(k) = rows
            .iter()
            .find(|k| k.system == System::KernelZswap && k.compressor == u.compressor)
        {
            out.push(make(format!("{} vs zswap", u.compressor), u, k, "<= 0.67x"));
        }
        for z in rows.iter().filter(|z| z.system == System::KernelZram) {
            let what = format!("{} vs zram {}", u.compressor, z.compressor);
            out.push(make(what, u, z, "<= 1.0x"));
        }
    }
    out
}
