//! Compressed-object sizes for allocator experiments.
//!
//! Until the page corpus of the compress crate lands, sizes come from a
//! histogram shaped like lz4 output on anonymous memory (many 0.5–2.5 KiB
//! objects, a tail of nearly incompressible pages stored at 3.5–4 KiB).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Weighted buckets of object sizes (inclusive bounds).
#[derive(Debug, Clone)]
pub struct SizeMix {
    buckets: Vec<(u32, usize, usize)>,
    total_weight: u32,
}

impl SizeMix {
    /// The default "typical compressed page" mix.
    pub fn typical() -> Self {
        Self::from_buckets(vec![
            (15, 64, 511),
            (35, 512, 1535),
            (25, 1536, 2559),
            (15, 2560, 3583),
            (10, 3584, 4096),
        ])
    }

    /// Buckets of `(weight, min, max)`.
    pub fn from_buckets(buckets: Vec<(u32, usize, usize)>) -> Self {
        let total_weight = buckets.iter().map(|b| b.0).sum();
        Self {
            buckets,
            total_weight,
        }
    }

    /// Mean object size (bytes).
    pub fn mean(&self) -> f64 {
        let sum: f64 = self
            .buckets
            .iter()
            .map(|&(w, lo, hi)| f64::from(w) * (lo + hi) as f64 / 2.0)
            .sum();
        sum / f64::from(self.total_weight)
    }

    /// A deterministic stream of sizes.
    pub fn sampler(&self, seed: u64) -> impl Iterator<Item = usize> + '_ {
        let mut rng = SmallRng::seed_from_u64(seed);
        std::iter::repeat_with(move || {
            let mut pick = rng.gen_range(0..self.total_weight);
            for &(w, lo, hi) in &self.buckets {
                if pick < w {
                    return rng.gen_range(lo..=hi);
                }
                pick -= w;
            }
            unreachable!("pick < total weight")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_stay_in_bounds_and_follow_the_mean() {
        let mix = SizeMix::typical();
        let xs: Vec<usize> = mix.sampler(1).take(100_000).collect();
        assert!(xs.iter().all(|&s| (64..=4096).contains(&s)));
        let mean = xs.iter().sum::<usize>() as f64 / xs.len() as f64;
        assert!((mean - mix.mean()).abs() < 25.0, "{mean} vs {}", mix.mean());
        let again: Vec<usize> = mix.sampler(1).take(10).collect();
        assert_eq!(&xs[..10], &again[..], "deterministic");
    }
}
