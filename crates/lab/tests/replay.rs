//! The lab's replays on synthetic traces: reference policies against
//! known answers, Belady's optimum as a bound, the runtime's protocol
//! replayed deterministically, regions forgotten with their pages.

use lab::{replay_one, simulate, Limit, ProtocolConfig, Workload};
use proptest::prelude::*;
use trace::{Event, ProcessTrace, Record};

const BASE: u64 = 0x7f00_0000_0000;
const PAGE: u64 = 4096;

/// A trace of one process: a region of `pages` pages, then `accesses`
/// (page index, write) in order, one microsecond apart.
fn trace(pages: u32, accesses: &[(u64, bool)]) -> Vec<ProcessTrace> {
    let mut records = vec![Record {
        time_ns: 1,
        event: Event::Map { addr: BASE, pages },
    }];
    let mut seen = std::collections::HashSet::new();
    for (i, &(p, write)) in accesses.iter().enumerate() {
        records.push(Record {
            time_ns: 1000 * (i as u64 + 2),
            event: Event::Fault {
                addr: BASE + p * PAGE,
                write,
                first_touch: seen.insert(p),
                kept_clean: false,
                tid: 1,
                service_ns: 1000,
            },
        });
    }
    vec![ProcessTrace {
        pid: 1,
        records,
        ..ProcessTrace::default()
    }]
}

fn workload(pages: u32, pattern: &[u64]) -> Workload {
    let accesses: Vec<(u64, bool)> = pattern.iter().map(|&p| (p, false)).collect();
    Workload::from_trace(&trace(pages, &accesses))
}

fn uncharged() -> ProtocolConfig {
    ProtocolConfig {
        charge_pool: false,
        ..ProtocolConfig::default()
    }
}

fn swapins(w: &Workload, policy: &str, limit: u64) -> u64 {
    replay_one(w, policy, Limit::Fixed(limit), &uncharged())
        .unwrap()
        .swapin_faults
}

#[test]
fn reference_policies_give_the_textbook_answers() {
    // Three pages of room: a b c a d a b.
    // LRU: d evicts b (a was just used); a hits; b misses.
    // FIFO: d evicts a (first in); a misses (evicting b), b misses.
    // OPT: d evicts c (never used again); a and b hit.
    let w = workload(8, &[0, 1, 2, 0, 3, 0, 1]);
    assert_eq!(swapins(&w, "lru", 3), 1);
    assert_eq!(swapins(&w, "fifo", 3), 2);
    assert_eq!(swapins(&w, "opt", 3), 0);
    // CLOCK: a's hit set its bit; d passes over a, evicts b; a hits; b
    // misses.
    assert_eq!(swapins(&w, "clock", 3), 1);
    // Room for all: nothing leaves.
    for p in ["lru", "fifo", "clock", "opt"] {
        assert_eq!(swapins(&w, p, 4), 0, "{p}");
    }
}

#[test]
fn an_unmapped_region_is_forgotten_with_its_pages() {
    let before = trace(4, &[(0, true), (1, true), (2, true), (3, true)]);
    let mut after = before.clone();
    let r = &mut after[0].records;
    r.push(Record {
        time_ns: 10_000,
        event: Event::Unmap { addr: BASE },
    });
    r.push(Record {
        time_ns: 10_001,
        event: Event::Map {
            addr: BASE,
            pages: 4,
        },
    });
    r.push(Record {
        time_ns: 10_002,
        event: Event::Fault {
            addr: BASE,
            write: false,
            first_touch: true,
            kept_clean: false,
            tid: 1,
            service_ns: 1,
        },
    });
    let (before, after) = (Workload::from_trace(&before), Workload::from_trace(&after));
    for p in ["uzswap", "lru", "opt"] {
        let b = replay_one(&before, p, Limit::Fixed(2), &uncharged()).unwrap();
        let a = replay_one(&after, p, Limit::Fixed(2), &uncharged()).unwrap();
        // The page evicted with the old region is no swap-in in the new.
        assert_eq!(a.swapin_faults, b.swapin_faults, "{p}");
        assert_eq!(a.first_touches, b.first_touches + 1, "{p}");
        assert_eq!(a.unplaced, 0);
    }
}

#[test]
fn the_protocols_replay_is_deterministic_and_pages_under_its_limit() {
    let mut s = 7u64;
    let pattern: Vec<u64> = (0..20_000)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) % 2048
        })
        .collect();
    let w = workload(2048, &pattern);
    let a = replay_one(&w, "uzswap", Limit::Fixed(512), &uncharged()).unwrap();
    let b = replay_one(&w, "uzswap", Limit::Fixed(512), &uncharged()).unwrap();
    assert_eq!(
        (a.swapin_faults, a.evicted_pages),
        (b.swapin_faults, b.evicted_pages)
    );
    assert!(a.swapin_faults > 0 && a.evicted_pages >= a.swapin_faults);
    assert!(a.peak_charged_pages <= 512 + 16, "{}", a.peak_charged_pages);
    let all = replay_one(&w, "uzswap", Limit::Fixed(4096), &uncharged()).unwrap();
    assert_eq!(all.evicted_pages, 0);
    // The pool counted in the limit leaves less room for pages.
    let charged = replay_one(&w, "uzswap", Limit::Fixed(512), &ProtocolConfig::default()).unwrap();
    assert!(charged.swapin_faults >= a.swapin_faults);
}

#[test]
fn a_sweep_runs_every_policy_at_every_limit() {
    let w = workload(64, &[0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 0, 1]);
    let names: Vec<String> = ["uzswap", "lru", "opt"].map(String::from).to_vec();
    let limits = [Limit::Fixed(2), Limit::Fixed(4), Limit::Fixed(8)];
    let out = lab::sweep(&w, &names, &limits, &uncharged(), 3, &|_| {}).unwrap();
    assert_eq!(out.len(), 9);
    assert_eq!(out[4].policy, "lru");
    assert_eq!(out[4].limit, Limit::Fixed(4));
    assert!(lab::sweep(&w, &["mru".into()], &limits, &uncharged(), 1, &|_| {}).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Belady's optimum bounds every reference policy on the same
    /// accesses, and more room never costs LRU or OPT swap-ins (both are
    /// stack algorithms).
    #[test]
    fn opt_bounds_every_policy(
        pattern in prop::collection::vec(0u64..64, 1..400),
        limit in 1u64..64,
    ) {
        let w = workload(64, &pattern);
        let opt = swapins(&w, "opt", limit);
        for p in ["lru", "fifo", "clock"] {
            prop_assert!(opt <= swapins(&w, p, limit), "{} beat opt", p);
        }
        prop_assert!(swapins(&w, "lru", limit + 1) <= swapins(&w, "lru", limit));
        prop_assert!(swapins(&w, "opt", limit + 1) <= opt);
    }

    /// Every reference policy's evictions are its swap-ins plus what is
    /// still stored, and it never holds more than its limit.
    #[test]
    fn reference_policies_keep_their_books(
        pattern in prop::collection::vec(0u64..32, 1..300),
        limit in 1u64..32,
    ) {
        let w = workload(32, &pattern);
        for p in lab::policies::NAMES {
            let mut policy = lab::policies::by_name(p).unwrap();
            let o = simulate(&w, Limit::Fixed(limit), false, policy.as_mut()).unwrap();
            prop_assert!(o.evicted_pages >= o.swapin_faults);
            prop_assert!(o.peak_charged_pages as u64 <= limit);
            prop_assert_eq!(o.accesses, pattern.len() as u64);
        }
    }
}

/// Two processes at the same addresses: their pages are their own, and
/// they share one limit (each evicts its own pages when together they
/// pass it).
#[test]
fn processes_share_the_limit_but_not_their_pages() {
    let pattern: Vec<(u64, bool)> = (0..64).map(|p| (p, true)).collect();
    let one = trace(64, &pattern).remove(0);
    let mut two = one.clone();
    two.pid = 2;
    let alone = Workload::from_trace(std::slice::from_ref(&one));
    let both = Workload::from_trace(&[one, two]);
    assert_eq!(
        both.pages,
        2 * alone.pages,
        "the same addresses, two processes' pages"
    );
    for p in ["uzswap", "lru", "opt"] {
        let a = replay_one(&alone, p, Limit::Fixed(64), &uncharged()).unwrap();
        let b = replay_one(&both, p, Limit::Fixed(64), &uncharged()).unwrap();
        assert_eq!(a.evicted_pages, 0, "{p}: one process fits");
        assert!(
            b.evicted_pages >= 64 - 16,
            "{p}: two do not: {}",
            b.evicted_pages
        );
        assert!(
            b.peak_charged_pages <= 64 + 16,
            "{p}: {}",
            b.peak_charged_pages
        );
    }
}

/// A page of text: words drawn from a small vocabulary by `seed` (about
/// 2–3x compressible, like a heap of strings).
fn text_page(seed: u64) -> Vec<u8> {
    const WORDS: [&str; 12] = [
        "page ",
        "swap ",
        "zsmalloc ",
        "folio ",
        "reclaim ",
        "fault ",
        "pool ",
        "limit ",
        "evict ",
        "shadow ",
        "cluster ",
        "batch ",
    ];
    let mut s = seed | 1;
    let mut out = Vec::with_capacity(PAGE as usize + 16);
    while out.len() < PAGE as usize {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        out.extend_from_slice(WORDS[(s % 12) as usize].as_bytes());
        out.extend_from_slice(format!("{} ", s % 1000).as_bytes());
    }
    out.truncate(PAGE as usize);
    out
}

#[test]
fn compressors_are_compared_on_the_runs_own_pages() {
    let mut s = 11u64;
    let pattern: Vec<u64> = (0..6_000)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) % 1024
        })
        .collect();
    let plain = workload(1024, &pattern);
    // No samples: nothing to compare on, said so.
    assert!(matches!(
        replay_one(&plain, "uzswap/zstd:3", Limit::Fixed(256), &uncharged()),
        Err(lab::LabError::Replay(lab::ReplayError::NoSamples))
    ));
    assert!(lab::check_policies(&["uzswap/nonesuch".into()]).is_err());
    let lz4 = compress::new_compressor(compress::Algorithm::Lz4, &compress::Backend::Sequential);
    let mut dst = vec![0u8; 2 * PAGE as usize];
    let mut w = plain.clone();
    w.samples = (0..64u64)
        .map(|i| {
            let data = text_page(i + 1);
            let len = lz4.compress_page(&data, &mut dst).unwrap() as u16;
            trace::PageSample {
                addr: BASE + i * PAGE,
                compressed_len: len,
                data: data.into(),
            }
        })
        .collect();
    w.samples.sort_by_key(|s| s.compressed_len);
    // Every page read back is checked against the sample it was given.
    let by = |policy: &str| replay_one(&w, policy, Limit::Fixed(256), &uncharged()).unwrap();
    let (l, d, z) = (
        by("uzswap/lz4"),
        by("uzswap/deflate:6"),
        by("uzswap/zstd:3"),
    );
    assert_eq!(d.policy, "uzswap/deflate:6");
    // The same traffic (the pool is not charged), less stored by the
    // stronger compressors.
    assert_eq!(
        (l.swapin_faults, l.evicted_pages),
        (d.swapin_faults, d.evicted_pages)
    );
    assert!(l.evicted_pages > 0);
    assert!(
        d.stored_bytes < l.stored_bytes,
        "deflate {} lz4 {}",
        d.stored_bytes,
        l.stored_bytes
    );
    assert!(
        z.stored_bytes < l.stored_bytes,
        "zstd {} lz4 {}",
        z.stored_bytes,
        l.stored_bytes
    );
    let rows = lab::compressors::compare(
        &w,
        &[compress::Algorithm::Lz4, compress::Algorithm::Deflate(6)],
    );
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r.samples == 64 && r.ratio > 0.0 && r.ratio < 1.0));
    assert!(rows[1].ratio < rows[0].ratio);
    assert!(lab::compressors::compare(&plain, &[compress::Algorithm::Lz4]).is_empty());
}
