//! Pool density: what each stored object costs beyond its own bytes, after
//! filling, after freeing half the objects at random (fragmentation), and
//! after compaction.

use crate::sizes::SizeMix;
use crate::{BenchError, Progress};
use comfy_table::{presets::UTF8_FULL, Cell, CellAlignment, Table};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use zsmalloc::{Config, Handle, Pool, PoolStats};

/// Parameters: how many bytes of objects to store.
#[derive(Debug, Clone)]
pub struct DensityParams {
    pub bytes: usize,
}

impl Default for DensityParams {
    fn default() -> Self {
        Self { bytes: 256 << 20 }
    }
}

/// The pool's footprint at one moment.
#[derive(Debug, Clone)]
pub struct DensityRow {
    pub phase: &'static str,
    pub objects: usize,
    pub payload_bytes: usize,
    pub pool_total_size: usize,
    pub metadata_bytes: usize,
}

impl DensityRow {
    fn new(phase: &'static str, live: &[(Handle, usize)], stats: &PoolStats) -> Self {
        Self {
            phase,
            objects: live.len(),
            payload_bytes: live.iter().map(|l| l.1).sum(),
            pool_total_size: stats.pool_total_size,
            metadata_bytes: stats.metadata_bytes,
        }
    }

    /// Pool pages plus metadata, minus payload, per object.
    pub fn overhead_per_object(&self) -> f64 {
        let footprint = (self.pool_total_size + self.metadata_bytes) as f64;
        (footprint - self.payload_bytes as f64) / self.objects.max(1) as f64
    }

    /// Payload as a share of pool pages.
    pub fn efficiency(&self) -> f64 {
        self.payload_bytes as f64 / self.pool_total_size.max(1) as f64
    }
}

/// Runs fill → free half → compact and reports each phase.
pub fn run(params: &DensityParams, progress: &Progress) -> Result<Vec<DensityRow>, BenchError> {
    let pool = Pool::new(Config::seed001().with_arena_bytes((params.bytes * 2).max(64 << 20)))?;
    let mut live = Vec::new();
    let mut stored = 0;
    for size in SizeMix::typical().sampler(7) {
        if stored >= params.bytes {
            break;
        }
        live.push((pool.malloc(size)?, size));
        stored += size;
    }
    let mut rows = vec![DensityRow::new("filled", &live, &pool.stats())];
    progress.step("filled");
    let mut rng = SmallRng::seed_from_u64(11);
    let mut kept = Vec::with_capacity(live.len() / 2);
    for (h, size) in live {
        if rng.gen_bool(0.5) {
            pool.free(h)?;
        } else {
            kept.push((h, size));
        }
    }
    rows.push(DensityRow::new("half freed", &kept, &pool.stats()));
    progress.step("half freed");
    pool.compact();
    rows.push(DensityRow::new("compacted", &kept, &pool.stats()));
    progress.step("compacted");
    Ok(rows)
}

/// The density table.
pub fn table(rows: &[DensityRow]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL);
    t.set_header(vec![
        "phase",
        "objects",
        "payload MiB",
        "pool_total_size MiB",
        "metadata MiB",
        "overhead B/object",
        "efficiency",
    ]);
    let mib = |b: usize| format!("{:.1}", b as f64 / f64::from(1 << 20));
    for r in rows {
        t.add_row(vec![
            Cell::new(r.phase),
            Cell::new(r.objects).set_alignment(CellAlignment::Right),
            Cell::new(mib(r.payload_bytes)).set_alignment(CellAlignment::Right),
            Cell::new(mib(r.pool_total_size)).set_alignment(CellAlignment::Right),
            Cell::new(mib(r.metadata_bytes)).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.0}", r.overhead_per_object()))
                .set_alignment(CellAlignment::Right),
            Cell::new(format!("{:.1}%", r.efficiency() * 100.0))
                .set_alignment(CellAlignment::Right),
        ]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_recovers_density_lost_to_fragmentation() {
        let rows = run(&DensityParams { bytes: 8 << 20 }, &Progress::hidden()).unwrap();
        let [filled, half, compacted] = [&rows[0], &rows[1], &rows[2]];
        assert!(
            filled.efficiency() > 0.85,
            "size classes keep a fresh pool dense: {filled:?}"
        );
        assert!(half.efficiency() < filled.efficiency());
        assert!(
            compacted.efficiency() > half.efficiency() + 0.2,
            "{half:?} -> {compacted:?}"
        );
        assert_eq!(half.objects, compacted.objects);
        assert!(table(&rows).to_string().contains("compacted"));
    }
}
