//! A self-checking soak of the runtime (`uzswap soak`): threads write
//! versioned pages and check every byte at every read, while extra threads
//! push evictions and compact the pool, aging tracks writes, the pool is
//! small enough that pages go on to the swap file, and the swap file fails
//! at random (EIO and ENOSPC on writes, EIO and flipped bits on reads:
//! transient faults, as a disk's are). Every compressor and folio size
//! gets its turn. A mismatch is the one result that must never appear.

use crate::{BenchError, Progress};
use compress::Algorithm;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use runtime::{Runtime, RuntimeConfig};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swapfile::{FaultPlan, FaultRates, FaultyIo, FileIo, InjectedFaults, SwapFile};
use zswap::{Swap, PAGE_SIZE};

/// What to soak, and for how long.
#[derive(Debug, Clone)]
pub struct SoakParams {
    pub duration: Duration,
    /// Writer threads, each with its own pages.
    pub threads: usize,
    pub pages_per_thread: usize,
    /// The resident limit, in pages (the data is `threads *
    /// pages_per_thread`: keep it several times larger).
    pub limit_pages: usize,
    pub compressors: Vec<Algorithm>,
    /// Folio sizes, in pages.
    pub folios: Vec<usize>,
    pub rates: FaultRates,
    pub seed: u64,
}

impl Default for SoakParams {
    fn default() -> Self {
        Self {
            duration: Duration::from_secs(120),
            threads: 3,
            pages_per_thread: 1536,
            limit_pages: 512,
            compressors: vec![
                Algorithm::Lz4,
                Algorithm::Zstd(3),
                Algorithm::Deflate(6),
                Algorithm::Lzo,
                Algorithm::LzoRle,
            ],
            folios: vec![1, 16, 512],
            rates: FaultRates {
                read_eio: 2000,
                read_flip: 2000,
                write_eio: 2000,
                write_enospc: 1000,
            },
            seed: 1,
        }
    }
}

/// One compressor × folio round.
#[derive(Debug, Clone, Default)]
pub struct SoakRound {
    pub compressor: String,
    pub folio_pages: usize,
    pub seconds: f64,
    pub pages_written: u64,
    pub pages_verified: u64,
    pub mismatches: u64,
    /// The first mismatches, described.
    pub first_mismatches: Vec<String>,
    pub faults: InjectedFaults,
    pub evicted_pages: u64,
    pub swapin_faults: u64,
    pub zswpout: u64,
    pub pswpout: u64,
    pub pswpin: u64,
    pub writeback_errors: u64,
    pub evict_failures: u64,
    pub wp_faults: u64,
    pub compacted_pages: u64,
}

/// Every round of a soak.
#[derive(Debug, Clone, Default)]
pub struct SoakReport {
    pub rounds: Vec<SoakRound>,
}

impl SoakReport {
    pub fn mismatches(&self) -> u64 {
        self.rounds.iter().map(|r| r.mismatches).sum()
    }

    pub fn pages_verified(&self) -> u64 {
        self.rounds.iter().map(|r| r.pages_verified).sum()
    }

    pub fn faults_injected(&self) -> u64 {
        self.rounds.iter().map(|r| r.faults.total()).sum()
    }

    /// The table users read.
    pub fn table(&self) -> comfy_table::Table {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(vec![
            "compressor",
            "folio",
            "s",
            "written",
            "verified",
            "mismatches",
            "faults injected (r-eio/r-flip/w-eio/w-enospc)",
            "evicted",
            "swap-ins",
            "pswpout",
            "pswpin",
            "evict undone",
            "wb errors",
            "wp faults",
            "compacted",
        ]);
        for r in &self.rounds {
            t.add_row(vec![
                r.compressor.clone(),
                format!("{}K", r.folio_pages * 4),
                format!("{:.0}", r.seconds),
                r.pages_written.to_string(),
                r.pages_verified.to_string(),
                r.mismatches.to_string(),
                format!(
                    "{} ({}/{}/{}/{})",
                    r.faults.total(),
                    r.faults.read_eio,
                    r.faults.read_flip,
                    r.faults.write_eio,
                    r.faults.write_enospc
                ),
                r.evicted_pages.to_string(),
                r.swapin_faults.to_string(),
                r.pswpout.to_string(),
                r.pswpin.to_string(),
                r.evict_failures.to_string(),
                r.writeback_errors.to_string(),
                r.wp_faults.to_string(),
                r.compacted_pages.to_string(),
            ]);
        }
        t
    }
}

/// Page `i`'s bytes at version `v`: zero for some versions, text-like for
/// most, random for some (those do not compress and go raw or to disk).
fn fill(page: &mut [u8], i: usize, v: u64, seed: u64) {
    let key = (i as u64) << 32 ^ v ^ seed.rotate_left(17);
    match v % 7 {
        0 => page.fill(0),
        1 | 2 => SmallRng::seed_from_u64(key).fill(&mut page[..]),
        _ => {
            const WORDS: [&[u8]; 6] =
                [b"swap ", b"page ", b"zswap ", b"folio ", b"entry ", b"lru "];
            let mut k = key as usize;
            let mut pos = 0;
            while pos < page.len() {
                let w = WORDS[k % WORDS.len()];
                let n = w.len().min(page.len() - pos);
                page[pos..pos + n].copy_from_slice(&w[..n]);
                pos += n;
                k = k.wrapping_mul(31).wrapping_add(7);
            }
        }
    }
    if !v.is_multiple_of(7) {
        page[..8].copy_from_slice(&(i as u64).to_le_bytes());
        page[8..16].copy_from_slice(&v.to_le_bytes());
    }
}

/// A writer's tally.
#[derive(Default)]
struct Tally {
    written: AtomicU64,
    verified: AtomicU64,
    mismatches: AtomicU64,
    first: parking_lot::Mutex<Vec<String>>,
}

impl Tally {
    fn mismatch(&self, what: String) {
        self.mismatches.fetch_add(1, Ordering::Relaxed);
        let mut f = self.first.lock();
        if f.len() < 5 {
            f.push(what);
        }
    }
}

/// The region's memory, shared by the round's threads (each writes only
/// its own pages).
#[derive(Clone, Copy)]
struct Mem(*mut u8);
// SAFETY: a pointer to the round's region, alive until the threads are
// joined; each thread touches only its own pages.
unsafe impl Send for Mem {}

fn check_page(mem: Mem, i: usize, v: u64, seed: u64, expect: &mut [u8], tally: &Tally) {
    // SAFETY: page `i` of the region, this thread's own.
    let page = unsafe { std::slice::from_raw_parts(mem.0.add(i * PAGE_SIZE), PAGE_SIZE) };
    fill(expect, i, v, seed);
    tally.verified.fetch_add(1, Ordering::Relaxed);
    if page != expect {
        let at = page.iter().zip(expect.iter()).position(|(a, b)| a != b);
        tally.mismatch(format!(
            "page {i} version {v}: first difference at byte {at:?}"
        ));
    }
}

fn round(
    p: &SoakParams,
    alg: Algorithm,
    folio: usize,
    duration: Duration,
    seed: u64,
) -> Result<SoakRound, BenchError> {
    let npages = p.threads * p.pages_per_thread;
    let slots = 4 * npages;
    let swap_cfg = zswap::Config {
        compressor: alg,
        // A pool of a tenth of the data: the rest goes to the swap file.
        total_ram_bytes: npages * PAGE_SIZE,
        max_pool_percent: 10,
        swapfile_pages: slots,
        ..zswap::Config::default()
    };
    let plan = FaultPlan::default();
    plan.random(p.rates, seed);
    // A real (unlinked) file under the faults, read and written with
    // pread/pwrite.
    let file = FileIo::create_anonymous(&std::env::temp_dir()).map_err(|e| {
        BenchError::Params(format!(
            "swap file in {}: {e}",
            std::env::temp_dir().display()
        ))
    })?;
    let dev = SwapFile::new(Box::new(FaultyIo::new(Box::new(file), plan.clone())), slots)
        .map_err(zswap::ZswapError::from)?;
    let swap = Swap::with_device(swap_cfg.clone(), dev)?;
    let cfg = RuntimeConfig {
        swap: swap_cfg,
        limit_bytes: p.limit_pages * PAGE_SIZE,
        reclaim_batch: folio.max(32),
        evict_folio_pages: folio,
        track_writes: true,
        aging_interval: Duration::from_millis(5),
        ..RuntimeConfig::default()
    };
    let rt = Arc::new(Runtime::with_store(cfg, swap.clone())?);
    let region = rt.alloc(npages * PAGE_SIZE)?;
    let mem = Mem(region.as_ptr());
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let compacted = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + duration;
    let spawn_err = |e: std::io::Error| BenchError::Params(format!("cannot start a thread: {e}"));
    let mut helpers = Vec::new();
    {
        let (rt, stop) = (rt.clone(), stop.clone());
        helpers.push(
            std::thread::Builder::new()
                .name("soak-pusher".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        rt.reclaim(16);
                        std::thread::yield_now();
                    }
                })
                .map_err(spawn_err)?,
        );
    }
    {
        let (swap, stop, compacted) = (swap.clone(), stop.clone(), compacted.clone());
        helpers.push(
            std::thread::Builder::new()
                .name("soak-compactor".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let n = swap.zswap().compact();
                        compacted.fetch_add(n as u64, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(20));
                    }
                })
                .map_err(spawn_err)?,
        );
    }
    let mut writers = Vec::new();
    for t in 0..p.threads {
        let (tally, first, n) = (tally.clone(), t * p.pages_per_thread, p.pages_per_thread);
        let handle = std::thread::Builder::new()
            .name(format!("soak-writer{t}"))
            .spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ (t as u64 + 1) << 40);
                let mut version = vec![0u64; n];
                let mut expect = vec![0u8; PAGE_SIZE];
                while Instant::now() < deadline {
                    for _ in 0..256 {
                        let k = rng.gen_range(0..n);
                        let i = first + k;
                        if rng.gen_bool(0.5) {
                            version[k] += 1;
                            // SAFETY: page `i` of the region, this thread's own.
                            let page = unsafe {
                                std::slice::from_raw_parts_mut(mem.0.add(i * PAGE_SIZE), PAGE_SIZE)
                            };
                            fill(page, i, version[k], seed);
                            tally.written.fetch_add(1, Ordering::Relaxed);
                        } else if version[k] > 0 {
                            check_page(mem, i, version[k], seed, &mut expect, &tally);
                        }
                    }
                }
                // The final check: every page this thread wrote.
                for (k, &v) in version.iter().enumerate() {
                    if v > 0 {
                        check_page(mem, first + k, v, seed, &mut expect, &tally);
                    }
                }
            })
            .map_err(spawn_err)?;
        writers.push(handle);
    }
    for w in writers {
        if w.join().is_err() {
            tally.mismatch("a writer thread panicked".into());
        }
    }
    stop.store(true, Ordering::Relaxed);
    for h in helpers {
        let _ = h.join();
    }
    let (s, z) = (rt.stats(), rt.swap_stats());
    let first_mismatches = tally.first.lock().clone();
    drop(region);
    Ok(SoakRound {
        compressor: alg.to_string(),
        folio_pages: folio,
        seconds: start.elapsed().as_secs_f64(),
        pages_written: tally.written.load(Ordering::Relaxed),
        pages_verified: tally.verified.load(Ordering::Relaxed),
        mismatches: tally.mismatches.load(Ordering::Relaxed),
        first_mismatches,
        faults: plan.injected(),
        evicted_pages: s.evicted_pages,
        swapin_faults: s.swapin_faults,
        zswpout: z.zswpout,
        pswpout: z.pswpout,
        pswpin: z.pswpin,
        writeback_errors: z.writeback_errors,
        evict_failures: s.evict_failures,
        wp_faults: s.wp_faults,
        compacted_pages: compacted.load(Ordering::Relaxed),
    })
}

/// Runs every compressor × folio size in turn for `params.duration` in all.
pub fn soak(params: &SoakParams, progress: &Progress) -> Result<SoakReport, BenchError> {
    let configs: Vec<(Algorithm, usize)> = params
        .compressors
        .iter()
        .flat_map(|&a| params.folios.iter().map(move |&f| (a, f)))
        .collect();
    if configs.is_empty() || params.threads == 0 || params.pages_per_thread == 0 {
        return Err(BenchError::Params("nothing to soak".into()));
    }
    let per_round = (params.duration / configs.len() as u32).max(Duration::from_secs(1));
    let mut report = SoakReport::default();
    for (n, &(alg, folio)) in configs.iter().enumerate() {
        let r = round(
            params,
            alg,
            folio,
            per_round,
            params.seed.wrapping_add(n as u64),
        )?;
        progress.step(&format!(
            "{alg} {}K: {} verified, {} faults injected, {} mismatches",
            folio * 4,
            r.pages_verified,
            r.faults.total(),
            r.mismatches
        ));
        report.rounds.push(r);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_soak_verifies_pages_and_injects_faults() {
        let p = SoakParams {
            duration: Duration::from_secs(2),
            threads: 2,
            pages_per_thread: 512,
            limit_pages: 128,
            compressors: vec![Algorithm::Lz4],
            folios: vec![16],
            ..SoakParams::default()
        };
        let r = soak(&p, &Progress::hidden()).unwrap();
        let round = &r.rounds[0];
        assert_eq!(r.mismatches(), 0, "{:?}", round.first_mismatches);
        assert!(round.pages_verified > 1000, "{round:?}");
        assert!(round.evicted_pages > 1000, "{round:?}");
        assert!(round.faults.total() > 0 && round.pswpout > 0, "{round:?}");
    }

    #[test]
    fn fill_is_deterministic_and_versions_differ() {
        let (mut a, mut b) = (vec![0u8; PAGE_SIZE], vec![0u8; PAGE_SIZE]);
        for v in 1..20 {
            fill(&mut a, 3, v, 9);
            fill(&mut b, 3, v, 9);
            assert_eq!(a, b);
            fill(&mut b, 3, v + 1, 9);
            assert_ne!(a, b, "version {v}");
        }
    }
}
