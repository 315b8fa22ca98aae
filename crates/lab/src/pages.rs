//! Page contents a replay stores in the real swap store, deterministic per
//! page id so that every page read back can be checked:
//!
//! * **synthesized** ([`synthesize`]): a page that compresses (with the
//!   replay store's lz4) to about the length the run's own compressor gave
//!   it: random bytes, then zeros. Every compressor makes about the same
//!   of such a page, so this reproduces the run's pool, not a comparison;
//! * **sampled** ([`sampled`]): one of the run's own pages sampled at
//!   eviction (`trace::samples`), the one whose recorded length is nearest
//!   the page's (ties spread over the equals by id): real data, which each
//!   compressor of a comparison compresses as it would.

use crate::workload::{Workload, PAGE};
use trace::{SIZE_NONE, SIZE_ZERO};

/// What lz4 adds to a run of incompressible bytes followed by zeros
/// (measured by the test below: within this of the length asked for).
const LZ4_OVERHEAD: usize = 24;

/// The contents of page `id` of `w` into `out` (a page): sampled where
/// `sampled` and `w` has samples, synthesized otherwise.
pub fn contents(w: &Workload, id: u32, sampled_pages: bool, out: &mut [u8]) {
    match sampled_pages {
        true => sampled(w, id, out),
        false => synthesize(w, id, out),
    }
}

/// The sampled page standing in for page `id` of `w` into `out`; zeros
/// for a zero-filled page (synthesized if `w` has no samples).
pub fn sampled(w: &Workload, id: u32, out: &mut [u8]) {
    let want = match w.sizes[id as usize] {
        SIZE_ZERO => return out.fill(0),
        SIZE_NONE => w.mean_size,
        s => s,
    };
    match nearest_sample(w, want, id) {
        Some(s) => out.copy_from_slice(&s.data[..PAGE]),
        None => synthesize(w, id, out),
    }
}

/// The sample of `w` (sorted by length) whose length is nearest `want`;
/// among several of that length, one chosen by `id`.
fn nearest_sample(w: &Workload, want: u16, id: u32) -> Option<&trace::PageSample> {
    let s = &w.samples;
    let at = s.partition_point(|x| x.compressed_len < want);
    let pick = match (at.checked_sub(1).map(|i| &s[i]), s.get(at)) {
        (Some(below), Some(above)) if want - below.compressed_len < above.compressed_len - want => {
            below.compressed_len
        }
        (_, Some(above)) => above.compressed_len,
        (Some(below), None) => below.compressed_len,
        (None, None) => return None,
    };
    let lo = s.partition_point(|x| x.compressed_len < pick);
    let hi = s.partition_point(|x| x.compressed_len <= pick);
    let spread = u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    Some(&s[lo + (spread as usize) % (hi - lo)])
}

/// The contents of page `id` of `w` into `out` (a page), synthesized.
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

    fn sample(len: u16, fill: u8) -> trace::PageSample {
        trace::PageSample {
            addr: 0,
            compressed_len: len,
            data: vec![fill; PAGE].into(),
        }
    }

    #[test]
    fn a_page_gets_the_sample_nearest_its_length() {
        let mut w = Workload {
            samples: vec![
                sample(100, 1),
                sample(900, 2),
                sample(900, 3),
                sample(3000, 4),
            ],
            sizes: vec![120, 2000, 5000, 950, SIZE_ZERO],
            mean_size: 3100,
            ..Workload::default()
        };
        let mut page = vec![9u8; PAGE];
        let mut first = |id: u32, w: &Workload| {
            sampled(w, id, &mut page);
            assert!(page.iter().all(|&b| b == page[0]));
            page[0]
        };
        assert_eq!(first(0, &w), 1);
        // 2000 is nearer 3000 than 900.
        assert_eq!(first(1, &w), 4);
        assert_eq!(first(2, &w), 4);
        assert!([2, 3].contains(&first(3, &w)));
        assert_eq!(first(4, &w), 0);
        // Same id, same page: what a read-back check relies on.
        let again = first(3, &w);
        assert_eq!(first(3, &w), again);
        // The pages of one length are spread over its samples.
        w.sizes = vec![900; 64];
        let picked: std::collections::HashSet<u8> = (0..64).map(|id| first(id, &w)).collect();
        assert_eq!(picked, [2, 3].into_iter().collect());
        w.samples.clear();
        let mut synth = vec![0u8; PAGE];
        synthesize(&w, 5, &mut synth);
        sampled(&w, 5, &mut page);
        assert_eq!(page, synth);
    }

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
