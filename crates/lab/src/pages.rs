//! Page contents a replay stores in the real swap store: a page that
//! compresses (with the replay store's lz4) to about the length the run's
//! own compressor gave it: random bytes, then zeros. Deterministic per page
//! id, so that every page read back can be checked.

use crate::workload::{Workload, PAGE};
use trace::{SIZE_NONE, SIZE_ZERO};

/// What lz4 adds to a run of incompressible bytes followed by zeros
/// (measured by the test below: within this of the length asked for).
const LZ4_OVERHEAD: usize = 24;

/// The contents of page `id` of `w` into `out` (a page).
pub fn synthesize(w: &Workload, id: u32, out: &mut [u8]) {
    let random = match w.sizes[id as usize] {
        SIZE_ZERO => 0,
        SIZE_NONE => usize::from(w.mean_size),
        s => usize::from(s),
    };
    fill(
        id,
        random
            .saturating_sub(LZ4_OVERHEAD)
            .clamp(usize::from(random > 0), PAGE),
        out,
    );
}

/// `random` pseudo-random bytes from `id`'s seed (the first never zero),
/// then zeros.
fn fill(id: u32, random: usize, out: &mut [u8]) {
    let mut s = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for chunk in out[..random].chunks_mut(8) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let b = s.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    if random > 0 {
        out[0] |= 1;
    }
    out[random..].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthesized_page_compresses_near_its_recorded_length() {
        let c = compress::new_compressor(compress::Algorithm::Lz4, &compress::Backend::Sequential);
        let (mut page, mut dst) = (vec![0u8; PAGE], vec![0u8; 2 * PAGE]);
        for want in [40usize, 300, 1000, 2048, 3000, 3900] {
            fill(7, want - LZ4_OVERHEAD, &mut page);
            let got = c.compress_page(&page, &mut dst).unwrap();
            assert!(
                got.abs_diff(want) <= LZ4_OVERHEAD,
                "asked {want}, got {got}"
            );
        }
    }
}
