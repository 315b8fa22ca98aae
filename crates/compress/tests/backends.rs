//! Every backend on every corpus class: round trips, the kernel's
//! incompressible rule, corrupt input, and the parallel backend's paths.

use compress::corpus::Corpus;
use compress::{
    new_compressor, Algorithm, Backend, Batch, CompressError, Compressor, Op, ParallelConfig,
    DST_BUF_SIZE, PAGE_SIZE,
};
use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;

fn backends() -> Vec<Box<dyn Compressor>> {
    let parallel = ParallelConfig {
        workers: 2,
        ..ParallelConfig::default()
    };
    Algorithm::ALL
        .into_iter()
        .flat_map(|a| {
            [
                new_compressor(a, &Backend::Sequential),
                new_compressor(a, &Backend::Parallel(parallel.clone())),
            ]
        })
        .collect()
}

/// Compresses and decompresses `pages` through batches of `batch` pages.
fn round_trip(c: &dyn Compressor, pages: &[&[u8]], label: &str) -> (usize, usize) {
    let (mut stored, mut raw) = (0, 0);
    for chunk in pages.chunks(8) {
        let mut batch = Batch::new(Op::Compress);
        for p in chunk {
            batch.push_page(p);
        }
        let batch = c.submit(batch).wait();
        let mut back = Batch::new(Op::Decompress);
        let mut expect = Vec::new();
        for (i, page) in chunk.iter().enumerate() {
            match batch.output(i) {
                Ok(out) => {
                    assert!(out.len() < PAGE_SIZE, "{}: {label}", c.name());
                    back.push_compressed(out, PAGE_SIZE);
                    expect.push(*page);
                    stored += out.len();
                }
                Err(CompressError::Incompressible(n)) => {
                    assert!(n >= PAGE_SIZE, "{}: {label}", c.name());
                    raw += 1;
                }
                Err(e) => panic!("{}: {label}: {e}", c.name()),
            }
        }
        c.run(&mut back);
        for (i, page) in expect.iter().enumerate() {
            assert_eq!(
                back.output(i).unwrap(),
                *page,
                "{}: {label} page {i}",
                c.name()
            );
        }
    }
    (stored, raw)
}

#[test]
fn every_backend_round_trips_every_corpus_class() {
    let corpus = Corpus::sample().unwrap();
    for c in backends() {
        for group in &corpus.groups {
            let pages: Vec<&[u8]> = group.pages().collect();
            let (stored, raw) = round_trip(c.as_ref(), &pages, &group.label);
            match group.label.as_str() {
                "zero" => assert!(
                    stored < pages.len() * 100,
                    "{}: zero pages shrink to almost nothing",
                    c.name()
                ),
                "random" => assert_eq!(
                    raw,
                    pages.len(),
                    "{}: random pages are incompressible",
                    c.name()
                ),
                "text" | "pointers" => {
                    assert_eq!(raw, 0, "{}: {} compresses", c.name(), group.label)
                }
                _ => {}
            }
        }
    }
}

#[test]
fn sequential_and_parallel_produce_identical_bytes() {
    let corpus = Corpus::synthetic(8, 5);
    for a in Algorithm::ALL {
        let seq = new_compressor(a, &Backend::Sequential);
        let par = new_compressor(a, &Backend::Parallel(ParallelConfig::default()));
        let mut b1 = Batch::new(Op::Compress);
        let mut b2 = Batch::new(Op::Compress);
        for p in corpus.pages() {
            b1.push_page(p);
            b2.push_page(p);
        }
        seq.run(&mut b1);
        par.run(&mut b2);
        for i in 0..b1.len() {
            assert_eq!(b1.output(i), b2.output(i), "{a} item {i}");
        }
    }
}

#[test]
fn compress_batch_gives_the_bytes_of_a_batch_of_pushed_pages() {
    // `compress_batch` of a sequential backend reads the caller's pages in
    // place; every backend must give what `run` gives on pushed copies,
    // an oversize page's error included.
    let corpus = Corpus::synthetic(8, 5);
    let big = vec![1u8; PAGE_SIZE + 1];
    let mut pages: Vec<&[u8]> = corpus.pages().collect();
    pages.insert(3, &big);
    for c in backends() {
        let mut pushed = Batch::new(Op::Compress);
        for p in &pages {
            pushed.push_page(p);
        }
        c.run(&mut pushed);
        let mut in_place = Batch::new(Op::Compress);
        // Twice: a reused batch must not keep the first call's results.
        for _ in 0..2 {
            c.compress_batch(&pages, &mut in_place);
            assert_eq!(in_place.len(), pages.len(), "{}", c.name());
            for i in 0..pages.len() {
                assert_eq!(
                    in_place.output(i),
                    pushed.output(i),
                    "{} item {i}",
                    c.name()
                );
            }
        }
        assert_eq!(
            in_place.output(3),
            Err(CompressError::TooLarge(PAGE_SIZE + 1)),
            "{}",
            c.name()
        );
    }
}

#[test]
fn single_page_calls_match_batches() {
    for c in backends() {
        let page = Corpus::synthetic_page("text", 2).unwrap();
        let mut dst = vec![0; DST_BUF_SIZE];
        let n = c.compress_page(&page, &mut dst).unwrap();
        let mut out = vec![0; PAGE_SIZE];
        assert_eq!(
            c.decompress_page(&dst[..n], &mut out, PAGE_SIZE),
            Ok(PAGE_SIZE)
        );
        assert_eq!(out, page);
        // A wrong expected length is an error, not a short page.
        assert!(
            c.decompress_page(&dst[..n], &mut out, PAGE_SIZE - 1)
                .is_err(),
            "{}",
            c.name()
        );
    }
}

#[test]
fn oversize_input_is_rejected_per_item() {
    let c = new_compressor(Algorithm::Lz4, &Backend::Sequential);
    let mut b = Batch::new(Op::Compress);
    b.push_page(&[0u8; PAGE_SIZE + 1]);
    b.push_page(&[0u8; PAGE_SIZE]);
    c.run(&mut b);
    assert_eq!(b.output(0), Err(CompressError::TooLarge(PAGE_SIZE + 1)));
    assert!(b.output(1).is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random bytes, truncations and bit flips of real output never panic
    /// and never yield a page of the wrong length.
    #[test]
    fn corrupt_input_is_an_error_never_a_panic(
        garbage in prop::collection::vec(any::<u8>(), 0..600),
        cut in 0usize..4096,
        flip in 0usize..(1 << 15),
    ) {
        let page = Corpus::synthetic_page("mixed", 4).unwrap();
        for a in Algorithm::ALL {
            let c = new_compressor(a, &Backend::Sequential);
            let mut out = vec![0u8; PAGE_SIZE];
            if let Ok(n) = c.decompress_page(&garbage, &mut out, PAGE_SIZE) {
                prop_assert_eq!(n, PAGE_SIZE);
            }
            let mut dst = vec![0; DST_BUF_SIZE];
            let n = c.compress_page(&page, &mut dst).unwrap();
            let good = &dst[..n];
            let truncated = &good[..cut.min(n.saturating_sub(1))];
            prop_assert!(c.decompress_page(truncated, &mut out, PAGE_SIZE).is_err(), "{}: truncated input decoded", a);
            let mut flipped = good.to_vec();
            let bit = flip % (n * 8);
            flipped[bit / 8] ^= 1 << (bit % 8);
            match c.decompress_page(&flipped, &mut out, PAGE_SIZE) {
                Ok(len) => prop_assert_eq!(len, PAGE_SIZE), // a flip may still decode; never short
                Err(CompressError::Corrupt { .. } | CompressError::WrongLength { .. }) => {}
                Err(e) => prop_assert!(false, "{}: unexpected {}", a, e),
            }
        }
    }
}

#[test]
fn full_queue_falls_back_to_the_caller() {
    let cfg = ParallelConfig {
        workers: 1,
        queue_depth: 0,
        ..ParallelConfig::default()
    };
    let c = new_compressor(Algorithm::Lz4, &Backend::Parallel(cfg));
    let corpus = Corpus::synthetic(8, 6);
    let pages: Vec<&[u8]> = corpus.group("text").unwrap().pages().collect();
    round_trip(c.as_ref(), &pages, "text");
    let s = c.stats();
    assert!(s.fallback_queue_full > 0, "{s:?}");
    assert_eq!(s.pages, 16, "8 compressed + 8 decompressed");
}

#[test]
fn deadline_takes_pages_back_from_stalled_workers() {
    // No workers: nothing runs until the caller takes the pages back.
    let cfg = ParallelConfig {
        workers: 0,
        deadline: Duration::from_millis(5),
        caller_helps: false,
        ..ParallelConfig::default()
    };
    let c = new_compressor(Algorithm::Zstd(3), &Backend::Parallel(cfg));
    let mut b = Batch::new(Op::Compress);
    let corpus = Corpus::synthetic(8, 7);
    for p in corpus.group("pointers").unwrap().pages() {
        b.push_page(p);
    }
    let mut pending = c.submit(b);
    assert!(pending.poll().is_none(), "not done before the deadline");
    let b = pending.wait();
    assert!((0..8).all(|i| b.output(i).is_ok()));
    assert_eq!(c.stats().fallback_deadline, 8);
}

#[test]
fn waiting_caller_compresses_unstarted_pages() {
    // No workers and a far deadline: only the helping caller can finish.
    let cfg = ParallelConfig {
        workers: 0,
        deadline: Duration::from_secs(60),
        ..ParallelConfig::default()
    };
    let c = new_compressor(Algorithm::Lz4, &Backend::Parallel(cfg));
    let corpus = Corpus::synthetic(8, 11);
    let pages: Vec<&[u8]> = corpus.group("text").unwrap().pages().collect();
    round_trip(c.as_ref(), &pages, "text");
    let s = c.stats();
    assert_eq!(s.caller_helped, 16, "{s:?}");
    assert_eq!(s.fallback_deadline, 0);
}

#[test]
fn verify_after_compress_passes_for_good_output() {
    let cfg = ParallelConfig {
        verify: true,
        ..ParallelConfig::default()
    };
    let c = new_compressor(Algorithm::Deflate(6), &Backend::Parallel(cfg));
    let corpus = Corpus::synthetic(4, 8);
    let pages: Vec<&[u8]> = corpus.pages().collect();
    round_trip(c.as_ref(), &pages, "all");
    assert_eq!(c.stats().verify_failures, 0);
}

#[test]
fn many_threads_share_one_parallel_compressor() {
    let c: Arc<dyn Compressor> = Arc::from(new_compressor(
        Algorithm::Lz4,
        &Backend::Parallel(ParallelConfig::default()),
    ));
    let corpus = Arc::new(Corpus::synthetic(16, 10));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (c, corpus) = (c.clone(), corpus.clone());
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let pages: Vec<&[u8]> = corpus.pages().collect();
                    round_trip(c.as_ref(), &pages, "stress");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = c.stats();
    // 80 pages compressed per round; the 16 random ones are incompressible,
    // so 64 come back through decompression.
    assert_eq!(s.pages, 4 * 20 * (80 + 64));
}
