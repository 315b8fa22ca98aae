//! The lockless `zs_free` experiment (docs/seeds.md): concurrent `zs_free`
//! with and without the pool lock.
//!
//! Each of N threads stores `bytes_per_thread` worth of typical compressed
//! objects into one shared pool (the threads run at once, so their objects
//! share zspages, like processes swapping out together); then all threads
//! free their own objects at once (the concurrent munmap). The free phase's
//! wall time is measured for the mainline pool and the seed-001 pool, rep by
//! rep, interleaved.

use crate::sizes::SizeMix;
use crate::{median, BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use zsmalloc::{Config, Handle, Pool};

/// Parameters of the run.
#[derive(Debug, Clone)]
pub struct ZsFreeParams {
    pub bytes_per_thread: usize,
    pub threads: Vec<usize>,
    pub reps: usize,
    /// Keep freed pages resident (no `MADV_DONTNEED` in the timed phase), to
    /// time the allocator's locking without the OS's page-release cost.
    pub keep_resident: bool,
}

impl Default for ZsFreeParams {
    fn default() -> Self {
        Self {
            bytes_per_thread: 256 << 20,
            threads: vec![1, 2, 4],
            reps: 5,
            keep_resident: false,
        }
    }
}

/// One row: `threads` freeing at once.
#[derive(Debug, Clone)]
pub struct ZsFreeRow {
    pub threads: usize,
    pub objects: usize,
    pub base: Duration,
    pub patched: Duration,
}

impl ZsFreeRow {
    pub fn speedup(&self) -> f64 {
        self.base.as_secs_f64() / self.patched.as_secs_f64()
    }
}

/// The lockless `zs_free` post's x86 table (i7-12700, docs/seeds.md):
/// (label, base ms, patched ms, speedup).
pub const SEED_X86: [(&str, f64, f64, f64); 3] = [
    ("single", 11.7, 9.8, 1.19),
    ("multi 2p", 24.1, 17.2, 1.40),
    ("multi 4p", 63.0, 45.3, 1.39),
];

/// The whole report.
#[derive(Debug, Clone)]
pub struct ZsFreeReport {
    pub params: ZsFreeParams,
    pub rows: Vec<ZsFreeRow>,
}

/// Runs the experiment.
pub fn run(params: &ZsFreeParams, progress: &Progress) -> Result<ZsFreeReport, BenchError> {
    if params.reps == 0 || params.threads.is_empty() || params.threads.contains(&0) {
        return Err(BenchError::Params(
            "need reps >= 1 and thread counts >= 1".into(),
        ));
    }
    let mix = SizeMix::typical();
    let mut rows = Vec::new();
    for &threads in &params.threads {
        let (mut base, mut patched, mut objects) = (Vec::new(), Vec::new(), 0);
        for rep in 0..params.reps {
            // Alternate which variant goes first, so drift hits both.
            let order = if rep % 2 == 0 {
                [false, true]
            } else {
                [true, false]
            };
            for is_patched in order {
                let mut cfg = if is_patched {
                    Config::seed001()
                } else {
                    Config::baseline()
                };
                if params.keep_resident {
                    cfg.free_page_cache = None;
                }
                let (t, n) = one_run(cfg, threads, params.bytes_per_thread, &mix, rep as u64)?;
                objects = n;
                if is_patched {
                    patched.push(t)
                } else {
                    base.push(t)
                };
                let label = if is_patched { "patched" } else { "base" };
                progress.step(&format!("{threads} threads, rep {}, {label}", rep + 1));
            }
        }
        rows.push(ZsFreeRow {
            threads,
            objects,
            base: Duration::from_secs_f64(median(base)),
            patched: Duration::from_secs_f64(median(patched)),
        });
    }
    Ok(ZsFreeReport {
        params: params.clone(),
        rows,
    })
}

/// Fills a fresh pool from `threads` threads, then times their concurrent frees.
fn one_run(
    cfg: Config,
    threads: usize,
    bytes: usize,
    mix: &SizeMix,
    seed: u64,
) -> Result<(f64, usize), BenchError> {
    let arena = (threads * bytes).saturating_mul(2).max(64 << 20);
    let pool = Arc::new(Pool::new(cfg.with_arena_bytes(arena))?);
    let barrier = Arc::new(Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (pool, barrier, mix) = (pool.clone(), barrier.clone(), mix.clone());
            std::thread::spawn(
                move || -> Result<(Instant, Instant, usize), zsmalloc::Error> {
                    let handles = fill(&pool, bytes, &mix, seed * 1000 + t as u64)?;
                    barrier.wait();
                    let start = Instant::now();
                    for &h in &handles {
                        pool.free(h)?;
                    }
                    Ok((start, Instant::now(), handles.len()))
                },
            )
        })
        .collect();
    let mut spans = Vec::new();
    for w in workers {
        spans.push(w.join().expect("bench worker panicked")?);
    }
    let start = spans
        .iter()
        .map(|s| s.0)
        .min()
        .expect("at least one thread");
    let end = spans
        .iter()
        .map(|s| s.1)
        .max()
        .expect("at least one thread");
    let stats = pool.stats();
    debug_assert_eq!(stats.objs_inuse, 0);
    Ok(((end - start).as_secs_f64(), spans.iter().map(|s| s.2).sum()))
}

fn fill(
    pool: &Pool,
    bytes: usize,
    mix: &SizeMix,
    seed: u64,
) -> Result<Vec<Handle>, zsmalloc::Error> {
    let payload: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let mut handles = Vec::new();
    let mut stored = 0;
    for size in mix.sampler(seed) {
        if stored >= bytes {
            break;
        }
        let h = pool.malloc(size)?;
        pool.write(h, &payload[..size])?;
        handles.push(h);
        stored += size;
    }
    Ok(handles)
}

impl ZsFreeReport {
    /// The table in the lockless `zs_free` post's format, with its x86
    /// figures beside.
    pub fn table(&self) -> Table {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL);
        t.set_header(vec![
            "mode",
            "objects",
            "Base",
            "Patched",
            "Speedup",
            "seed x86 Base",
            "seed Patched",
            "seed Speedup",
        ]);
        for row in &self.rows {
            let label = match row.threads {
                1 => "single".to_string(),
                n => format!("multi {n}p"),
            };
            let seed = SEED_X86.iter().find(|s| s.0 == label);
            let ms = |d: Duration| format!("{:.1}ms", d.as_secs_f64() * 1e3);
            let mut cells = vec![
                Cell::new(&label),
                Cell::new(row.objects).set_alignment(CellAlignment::Right),
                Cell::new(ms(row.base)).set_alignment(CellAlignment::Right),
                Cell::new(ms(row.patched)).set_alignment(CellAlignment::Right),
                Cell::new(format!("{:.2}x", row.speedup())).set_alignment(CellAlignment::Right),
            ];
            match seed {
                Some(&(_, b, p, s)) => cells.extend([
                    Cell::new(format!("{b:.1}ms")),
                    Cell::new(format!("{p:.1}ms")),
                    Cell::new(format!("{s:.2}x")),
                ]),
                None => cells.extend([Cell::new("-"), Cell::new("-"), Cell::new("-")]),
            }
            t.add_row(cells);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_frees_every_object_in_both_modes() {
        let params = ZsFreeParams {
            bytes_per_thread: 1 << 20,
            threads: vec![1, 2],
            reps: 2,
            keep_resident: true,
        };
        let report = run(&params, &Progress::hidden()).unwrap();
        assert_eq!(report.rows.len(), 2);
        for row in &report.rows {
            // ~1 MiB of objects averaging ~1.9 KiB per thread.
            assert!(row.objects > 300 * row.threads, "{row:?}");
            assert!(row.base > Duration::ZERO && row.patched > Duration::ZERO);
        }
        let rendered = report.table().to_string();
        assert!(
            rendered.contains("multi 2p") && rendered.contains("1.40x"),
            "{rendered}"
        );
    }

    #[test]
    fn bad_params_are_rejected() {
        let params = ZsFreeParams {
            reps: 0,
            ..ZsFreeParams::default()
        };
        assert!(matches!(
            run(&params, &Progress::hidden()),
            Err(BenchError::Params(_))
        ));
    }
}
