//! # uzswap-bench — the seeds' experiments, reproduced
//!
//! Each experiment is a function that takes its parameters and a
//! [`Progress`] sink and returns a report that renders as a table in the
//! seed's format, with the seed's own figure beside ours. The CLI
//! (`uzswap bench …`) only parses flags and prints.
//!
//! Timing rules: every ratio is measured side by side in one run, with the
//! variants interleaved rep by rep, and the median of the reps is reported.

pub mod compression;
pub mod density;
pub mod kernel;
pub mod malloc;
pub mod peer;
pub mod plot;
pub mod progress;
pub mod readahead;
pub mod sizes;
pub mod soak;
pub mod store;
pub mod syscalls;
pub mod usemem;
pub mod usemem_threads;
pub mod zsfree;

pub use progress::Progress;

/// Errors of the experiments.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("zsmalloc: {0}")]
    Pool(#[from] zsmalloc::Error),
    #[error("corpus: {0}")]
    Corpus(#[from] compress::corpus::CorpusError),
    #[error("swap store: {0}")]
    Swap(#[from] zswap::ZswapError),
    #[error("runtime: {0}")]
    Runtime(#[from] runtime::RuntimeError),
    #[error("invalid parameters: {0}")]
    Params(String),
    #[error("kernel set-up: {0}")]
    Kernel(String),
    #[error("plot: {0}")]
    Plot(String),
}

/// Median of a non-empty sample.
pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
