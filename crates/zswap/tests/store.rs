//! zswap and the swap layer: seed 000's store rules, the pool limit,
//! writeback, readahead policies, I/O faults, and a model-based test.

use compress::corpus::Corpus;
use compress::Algorithm;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use swapfile::{FaultPlan, FaultyIo, FileIo, SwapError, SwapFile};
use zswap::{Config, Readahead, Reject, Source, Swap, ZswapError, PAGE_SIZE};

fn cfg() -> Config {
    Config {
        shrinker_enabled: false,
        swapfile_pages: 4096,
        ..Config::default()
    }
}

fn text_page(tag: u64) -> Vec<u8> {
    let mut p = Corpus::synthetic_page("text", tag).unwrap();
    p[..8].copy_from_slice(&tag.to_le_bytes());
    p
}

fn random_page(tag: u64) -> Vec<u8> {
    Corpus::synthetic_page("random", tag).unwrap()
}

fn out(swap: &Swap, pages: &[Vec<u8>]) -> Vec<u64> {
    let slots = swap.alloc_slots(pages.len()).unwrap();
    let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
    swap.swap_out(&refs, &slots).unwrap();
    slots
}

fn swap_in(swap: &Swap, slot: u64) -> (Vec<u8>, Source) {
    let mut page = vec![0u8; PAGE_SIZE];
    let src = swap.swap_in(slot, &mut page).unwrap();
    (page, src)
}

#[test]
fn a_store_prepared_then_dropped_frees_its_pool_objects() {
    // `swap_out` compresses into the pool before it takes the slot locks
    // (`Zswap::prepare`), then publishes (`Zswap::commit`); a preparation
    // never committed must leave nothing behind.
    let swap = Swap::new(cfg()).unwrap();
    let z = swap.zswap();
    let pages: Vec<Vec<u8>> = (0..40).map(text_page).collect();
    let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
    let prepared = z.prepare(&refs).unwrap();
    assert_eq!(prepared.len(), 40);
    assert!(z.pool_pages() > 0);
    drop(prepared);
    assert_eq!(z.pool_pages(), 0, "every object freed");
    assert_eq!(z.stored_pages(), 0);
    assert_eq!(swap.stats().zswpout, 0);
    // Committed, the same pages read back; the stores count once each.
    let slots = swap.alloc_slots(40).unwrap();
    let prepared = z.prepare(&refs).unwrap();
    z.commit(prepared, &slots);
    assert_eq!(z.stored_pages(), 40);
    assert_eq!(swap.stats().zswpout, 40);
    for (i, &s) in slots.iter().enumerate() {
        assert_eq!(swap_in(&swap, s), (pages[i].clone(), Source::Zswap));
    }
}

#[test]
fn incompressible_pages_are_stored_raw_with_writeback_on() {
    let swap = Swap::new(cfg()).unwrap();
    let page = random_page(1);
    let slots = out(&swap, std::slice::from_ref(&page));
    let s = swap.stats();
    assert_eq!(
        (s.zswpout, s.reject_compress_poor, s.stored_pages),
        (1, 0, 1)
    );
    assert_eq!(swap_in(&swap, slots[0]), (page, Source::Zswap));
}

#[test]
fn incompressible_page_rejects_the_whole_folio_with_writeback_off() {
    let swap = Swap::new(Config {
        writeback: false,
        ..cfg()
    })
    .unwrap();
    let folio = [text_page(1), random_page(2), text_page(3)];
    let slots = swap.alloc_slots(3).unwrap();
    let refs: Vec<&[u8]> = folio.iter().map(Vec::as_slice).collect();
    let err = swap.swap_out(&refs, &slots).unwrap_err();
    assert!(
        matches!(err, ZswapError::Rejected(Reject::CompressPoor)),
        "{err}"
    );
    let s = swap.stats();
    assert_eq!(
        (s.reject_compress_poor, s.zswpout, s.stored_pages, s.pswpout),
        (1, 0, 0, 0)
    );
    assert_eq!(
        s.pool_total_size, 0,
        "the folio's compressed pages were freed again"
    );
    let mut page = vec![0u8; PAGE_SIZE];
    assert!(matches!(
        swap.swap_in(slots[0], &mut page),
        Err(ZswapError::NotStored(_))
    ));
}

#[test]
fn zero_pages_take_no_pool_memory() {
    let swap = Swap::new(cfg()).unwrap();
    let slots = out(
        &swap,
        &[vec![0u8; PAGE_SIZE], text_page(4), vec![0u8; PAGE_SIZE]],
    );
    let s = swap.stats();
    assert_eq!((s.swpout_zero, s.zswpout, s.stored_pages), (2, 1, 1));
    assert_eq!(
        swap_in(&swap, slots[0]),
        (vec![0u8; PAGE_SIZE], Source::Zero)
    );
    assert_eq!(swap_in(&swap, slots[1]).0, text_page(4));
    assert_eq!(swap.stats().swpin_zero, 1);
}

#[test]
fn a_store_over_a_slot_replaces_what_it_held_wherever_that_was() {
    let swap = Swap::new(cfg()).unwrap();
    let zero = vec![0u8; PAGE_SIZE];
    let [a, b, c] = <[u64; 3]>::try_from(swap.alloc_slots(3).unwrap()).unwrap();
    // a: zero, then a pooled page; b: pooled, then zero; c: pooled, then
    // another pooled page.
    swap.swap_out(&[&zero[..], &text_page(1), &text_page(2)], &[a, b, c])
        .unwrap();
    swap.swap_out(&[&text_page(3), &zero[..], &text_page(4)], &[a, b, c])
        .unwrap();
    assert_eq!(swap.zswap().stored_pages(), 2, "b's old entry went");
    assert_eq!(swap_in(&swap, a), (text_page(3), Source::Zswap));
    assert_eq!(swap_in(&swap, b), (zero.clone(), Source::Zero));
    assert_eq!(swap_in(&swap, c), (text_page(4), Source::Zswap));
    assert_eq!(swap.zswap().stored_pages(), 0);
    // The loads' objects wait for the reclaimer's free_loaded.
    assert_eq!(swap.zswap().objects_in_use(), 2);
    assert_eq!(swap.zswap().free_loaded(), 2);
    assert_eq!(swap.zswap().pool_pages(), 0, "no object left behind");
    // A page written back to the file, then stored over: the pool's copy
    // is read, not the file's.
    let d = out(&swap, &[text_page(5)])[0];
    assert_eq!(swap.writeback(1).unwrap(), 1);
    swap.swap_out(&[&text_page(6)], &[d]).unwrap();
    assert_eq!(swap_in(&swap, d), (text_page(6), Source::Zswap));
}

#[test]
fn a_store_past_the_pool_goes_to_the_file_and_replaces_what_the_slots_held() {
    let swap = Swap::new(cfg()).unwrap();
    let zero = vec![0u8; PAGE_SIZE];
    let [a, b, c] = <[u64; 3]>::try_from(swap.alloc_slots(3).unwrap()).unwrap();
    // a held a pooled page, b one written back, c nothing.
    swap.swap_out(&[&text_page(1), &text_page(2)], &[a, b])
        .unwrap();
    assert_eq!(swap.writeback(1).unwrap(), 1);
    let report = swap
        .swap_out_to_file(&[&text_page(3), &zero[..], &text_page(5)], &[a, b, c])
        .unwrap();
    assert_eq!((report.zswap, report.disk, report.zero), (0, 2, 1));
    let s = swap.stats();
    assert_eq!((s.pool_bypassed, s.zswpout, s.stored_pages), (2, 2, 0));
    assert_eq!(
        swap.zswap().pool_pages(),
        0,
        "the pooled page's object went"
    );
    assert_eq!(swap_in(&swap, a), (text_page(3), Source::Disk));
    assert_eq!(swap_in(&swap, b), (zero, Source::Zero));
    // (Read ahead with a, or read now.)
    let (page, source) = swap_in(&swap, c);
    assert_eq!(page, text_page(5));
    assert!(
        matches!(source, Source::Disk | Source::SwapCache),
        "{source:?}"
    );
    // With writeback off there is no file: the pages go to the pool.
    let pooled = Swap::new(Config {
        writeback: false,
        ..cfg()
    })
    .unwrap();
    let d = pooled.alloc_slots(1).unwrap();
    let report = pooled.swap_out_to_file(&[&text_page(6)], &d).unwrap();
    assert_eq!((report.zswap, report.disk), (1, 0));
    assert_eq!(pooled.stats().pool_bypassed, 0);
    assert_eq!(swap_in(&pooled, d[0]), (text_page(6), Source::Zswap));
}

#[test]
fn every_compressor_and_batching_path_round_trips() {
    let corpus = Corpus::sample().unwrap();
    let pages: Vec<Vec<u8>> = corpus.pages().step_by(7).map(<[u8]>::to_vec).collect();
    for algorithm in Algorithm::ALL {
        for store_batch in [1, 8] {
            let swap = Swap::new(Config {
                compressor: algorithm,
                store_batch,
                ..cfg()
            })
            .unwrap();
            let slots: Vec<u64> = pages.chunks(16).flat_map(|f| out(&swap, f)).collect();
            for (slot, page) in slots.iter().zip(&pages) {
                assert_eq!(
                    &swap_in(&swap, *slot).0,
                    page,
                    "{algorithm} batch {store_batch}"
                );
            }
            assert_eq!(swap.stats().stored_pages, 0);
        }
    }
}

#[test]
fn pool_limit_sends_pages_to_disk_until_below_the_accept_threshold() {
    // A 256 KiB pool: fills after ~100 text pages.
    let c = Config {
        total_ram_bytes: 1 << 20,
        max_pool_percent: 25,
        accept_threshold_percent: 50,
        ..cfg()
    };
    let swap = Swap::new(c).unwrap();
    let pages: Vec<Vec<u8>> = (0..400).map(text_page).collect();
    let slots: Vec<u64> = pages.chunks(4).flat_map(|f| out(&swap, f)).collect();
    let s = swap.stats();
    assert!(s.pool_limit_hit > 0 && s.pswpout > 0, "{s}");
    // The limit is checked before each folio (as the kernel does), so the
    // pool may overshoot by a folio and a zspage: well under 64 KiB here.
    assert!(s.pool_total_size <= (256 + 64) << 10, "{s}");
    // Hysteresis: still refused while above the accept threshold.
    let hits = s.pool_limit_hit;
    out(&swap, &[text_page(1000)]);
    assert_eq!(swap.stats().pool_limit_hit, hits + 1);
    // Write back until below it; stores are accepted again.
    swap.writeback(usize::MAX).unwrap();
    let before = swap.stats().zswpout;
    out(&swap, &[text_page(1001)]);
    assert_eq!(swap.stats().zswpout, before + 1);
    for (slot, page) in slots.iter().zip(&pages) {
        assert_eq!(&swap_in(&swap, *slot).0, page);
    }
}

#[test]
fn writeback_takes_the_coldest_entry_after_a_second_chance() {
    let swap = Swap::new(cfg()).unwrap();
    let a = out(&swap, &[text_page(1)])[0];
    let b = out(&swap, &[text_page(2)])[0];
    assert_eq!(swap.writeback(1).unwrap(), 1);
    assert!(
        !swap.zswap().present(a) && swap.device().is_written(a),
        "oldest goes first"
    );
    assert!(swap.zswap().present(b));
    let s = swap.stats();
    assert_eq!((s.written_back_pages, s.pswpout), (1, 1));
    assert_eq!(swap_in(&swap, a), (text_page(1), Source::Disk));
}

/// An aligned cluster of 8 pages, 0..4 on disk and 4..8 in zswap, in a
/// store whose readahead reads whole clusters (the policies of seed 002).
fn cluster_with_half_on_disk(policy: Readahead) -> (Arc<Swap>, Vec<u64>) {
    let swap = Swap::new(Config {
        readahead: policy,
        page_cluster: 3,
        adaptive_readahead: false,
        ..cfg()
    })
    .unwrap();
    let pages: Vec<Vec<u8>> = (0..8).map(text_page).collect();
    let slots = out(&swap, &pages);
    assert_eq!(slots, (0..8).collect::<Vec<u64>>(), "one aligned cluster");
    swap.writeback(4).unwrap(); // slots 0..4 now on disk, 4..8 in zswap
    (swap, slots)
}

#[test]
fn readahead_policies_follow_seed_002() {
    // Faulting page in zswap.
    let (swap, _) = cluster_with_half_on_disk(Readahead::Always);
    assert_eq!(swap_in(&swap, 5).1, Source::Zswap);
    let s = swap.stats();
    assert_eq!(
        s.swap_ra, 7,
        "always: the whole cluster, zswap and disk: {s}"
    );
    assert_eq!(
        s.zswpin, 4,
        "the target plus three zswap neighbours decompressed"
    );

    let (swap, _) = cluster_with_half_on_disk(Readahead::BypassZswap);
    assert_eq!(swap_in(&swap, 5).1, Source::Zswap);
    assert_eq!(
        (swap.stats().swap_ra, swap.stats().zswpin),
        (0, 1),
        "bypass: no readahead from zswap"
    );

    // Faulting page on disk.
    let (swap, _) = cluster_with_half_on_disk(Readahead::BypassZswap);
    assert_eq!(swap_in(&swap, 1).1, Source::Disk);
    assert_eq!(
        swap.stats().swap_ra,
        7,
        "a disk fault still reads its cluster"
    );
    assert_eq!(swap_in(&swap, 2), (text_page(2), Source::SwapCache));
    assert_eq!(swap.stats().swap_ra_hit, 1);

    let (swap, _) = cluster_with_half_on_disk(Readahead::DiskOnly);
    assert_eq!(swap_in(&swap, 1).1, Source::Disk);
    let s = swap.stats();
    assert_eq!(
        (s.swap_ra, s.zswpin),
        (3, 0),
        "disk-only: just the disk neighbours"
    );
}

#[test]
fn adaptive_readahead_reads_what_random_faults_use_and_grows_for_streams() {
    let swap = Swap::new(Config {
        page_cluster: 3,
        ..cfg()
    })
    .unwrap();
    let pages: Vec<Vec<u8>> = (0..64).map(text_page).collect();
    let slots = out(&swap, &pages);
    assert_eq!(swap.writeback(64).unwrap(), 64, "every page on disk");
    // Scattered faults: each reads its own page, nothing ahead.
    for &n in &[41u64, 5, 60, 22, 33] {
        assert_eq!(
            swap_in(&swap, slots[n as usize]),
            (text_page(n), Source::Disk)
        );
    }
    let s = swap.stats();
    assert_eq!(
        (s.pswpin, s.swap_ra),
        (5, 0),
        "random faults read what they use: {s}"
    );
    // A stream from page 8 on: the window grows as its readahead is used.
    for n in 8..21u64 {
        let (data, _) = swap_in(&swap, slots[n as usize]);
        assert_eq!(data, text_page(n));
    }
    let s = swap.stats();
    assert!(s.swap_ra >= 8, "the stream read ahead: {s}");
    assert!(s.swap_ra_hit >= 8, "and used what it read: {s}");
    // Whole-cluster readahead reads far more for the same scattered faults.
    let fixed = Swap::new(Config {
        page_cluster: 3,
        adaptive_readahead: false,
        ..cfg()
    })
    .unwrap();
    let slots = out(&fixed, &pages);
    assert_eq!(fixed.writeback(64).unwrap(), 64);
    for &n in &[41u64, 5, 60, 22, 33] {
        assert_eq!(swap_in(&fixed, slots[n as usize]).0, text_page(n));
    }
    assert_eq!(fixed.stats().swap_ra, 35, "7 neighbours a fault");
}

#[test]
fn fault_around_hands_readahead_pages_to_the_caller() {
    let (swap, _) = cluster_with_half_on_disk(Readahead::DiskOnly);
    let mut page = vec![0u8; PAGE_SIZE];
    let mut around = Vec::new();
    // The caller maps pages 0, 2 and 4 around the fault (3 is not its own).
    let src = swap
        .swap_in_around(1, &mut page, &[0, 2, 4], &mut around)
        .unwrap();
    assert_eq!(src, Source::Disk);
    let mut got: Vec<u64> = around.iter().map(|a| a.0).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        vec![0, 2],
        "read-ahead neighbours the caller named; 4 was in zswap"
    );
    for (slot, data) in &around {
        assert_eq!(&data[..], &text_page(*slot)[..]);
    }
    let s = swap.stats();
    assert_eq!(
        (s.swap_ra_hit, s.swap_cache_pages),
        (2, 1),
        "page 3 stays cached for its owner"
    );
    assert_eq!(
        swap.device().free_slots(),
        4096 - 5,
        "handed-over slots are freed"
    );
    assert_eq!(swap_in(&swap, 3), (text_page(3), Source::SwapCache));
}

#[test]
fn folio_swap_in_hands_over_every_neighbour_wherever_it_is() {
    // Slots 0..4 on disk, 4..8 in zswap; slot 8 a zero page.
    let (swap, _) = cluster_with_half_on_disk(Readahead::BypassZswap);
    let zero = out(&swap, &[vec![0u8; PAGE_SIZE]]);
    assert_eq!(zero, vec![8]);
    let before = swap.stats();
    let mut page = vec![0u8; PAGE_SIZE];
    let mut around = Vec::new();
    let src = swap
        .swap_in_folio(5, &mut page, &[0, 2, 3, 4, 6, 7, 8], &mut around)
        .unwrap();
    assert_eq!((src, &page[..]), (Source::Zswap, &text_page(5)[..]));
    let mut got: Vec<u64> = around.iter().map(|a| a.0).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        vec![0, 2, 3, 4, 6, 7, 8],
        "the pooled, zero and disk neighbours"
    );
    for (slot, data) in &around {
        let want = if *slot == 8 {
            vec![0u8; PAGE_SIZE]
        } else {
            text_page(*slot)
        };
        assert_eq!(&data[..], &want[..], "slot {slot}");
    }
    let s = swap.stats();
    assert_eq!(
        s.zswpin - before.zswpin,
        4,
        "the target and three neighbours"
    );
    assert_eq!(s.swpin_zero - before.swpin_zero, 1);
    assert_eq!(s.pswpin - before.pswpin, 3, "slots 0, 2 and 3 from disk");
    assert_eq!(
        swap.device().free_slots(),
        4096 - 9 + 8,
        "the target's and the handed-over slots are freed"
    );
    // The neighbour not named is still there for its own fault.
    assert_eq!(swap_in(&swap, 1), (text_page(1), Source::Disk));

    // The same fault without folio swap-in takes its page alone.
    let (swap, _) = cluster_with_half_on_disk(Readahead::BypassZswap);
    let mut around = Vec::new();
    swap.swap_in_around(5, &mut page, &[2, 4, 6, 7], &mut around)
        .unwrap();
    assert!(around.is_empty(), "seed 002: no pooled neighbours");
    assert_eq!(swap.stats().zswpin, 1);
    assert_eq!(swap.stats().pswpin, 0, "no disk neighbour either");
}

#[test]
fn a_folios_disk_neighbours_keep_their_slots_as_clean_pages() {
    let (swap, _) = cluster_with_half_on_disk(Readahead::BypassZswap);
    let mut page = vec![0u8; PAGE_SIZE];
    let (mut around, mut kept) = (Vec::new(), Vec::new());
    let src = swap
        .swap_in_keeping_clean(1, &mut page, &[0, 2, 5], true, &mut around, &mut kept)
        .unwrap();
    assert_eq!((src, &page[..]), (Source::Disk, &text_page(1)[..]));
    let mut got: Vec<u64> = around.iter().map(|a| a.0).collect();
    got.sort_unstable();
    assert_eq!(got, vec![0, 2, 5]);
    for (slot, data) in &around {
        assert_eq!(&data[..], &text_page(*slot)[..], "slot {slot}");
    }
    kept.sort_unstable();
    assert_eq!(
        kept,
        vec![0, 1, 2],
        "the pages read from disk keep their slots; the pooled one's goes"
    );
    assert_eq!(swap.device().free_slots(), 4096 - 8 + 1);
    for slot in [0, 1, 2] {
        assert!(
            swap.device().is_written(slot),
            "slot {slot} still holds its page"
        );
    }
}

fn faulty_swap(c: Config) -> (Arc<Swap>, FaultPlan) {
    let plan = FaultPlan::default();
    let io = FaultyIo::new(
        Box::new(FileIo::create_anonymous(&std::env::temp_dir()).unwrap()),
        plan.clone(),
    );
    let dev = SwapFile::new(Box::new(io), c.swapfile_pages).unwrap();
    (Swap::with_device(c, dev).unwrap(), plan)
}

#[test]
fn io_faults_are_clear_errors_and_lose_no_page() {
    let (swap, plan) = faulty_swap(cfg());
    let pages: Vec<Vec<u8>> = (0..4).map(text_page).collect();
    let slots = out(&swap, &pages);

    // EIO / ENOSPC during writeback: the entries stay in zswap.
    plan.fail_writes_of(slots[0]);
    assert!(matches!(
        swap.writeback(4),
        Err(ZswapError::Device(SwapError::Io { .. }))
    ));
    // The failed page stays in zswap; the healthy ones went to disk.
    assert!(swap.zswap().present(slots[0]));
    assert!(slots[1..]
        .iter()
        .all(|&s| !swap.zswap().present(s) && swap.device().is_written(s)));
    assert_eq!(swap.stats().stored_pages, 1);
    plan.clear();
    plan.fail_writes_after(0, libc::ENOSPC);
    assert!(swap.writeback(4).is_err());
    assert_eq!(swap.stats().stored_pages, 1);
    assert!(swap.stats().writeback_errors >= 2);
    plan.clear();
    assert_eq!(swap.writeback(4).unwrap(), 1);

    // A corrupt block or a read error is an error, never another page.
    plan.corrupt_reads_of(slots[1]);
    plan.fail_reads_of(slots[2]);
    let mut page = vec![0u8; PAGE_SIZE];
    let corrupt = swap.swap_in(slots[1], &mut page).unwrap_err();
    assert!(
        matches!(corrupt, ZswapError::Device(SwapError::Corrupt { .. })),
        "{corrupt}"
    );
    assert!(matches!(
        swap.swap_in(slots[2], &mut page),
        Err(ZswapError::Device(SwapError::Io { .. }))
    ));
    // The slots were kept: once the device recovers, the pages come back.
    plan.clear();
    for (slot, p) in slots.iter().zip(&pages) {
        assert_eq!(&swap_in(&swap, *slot).0, p);
    }

    // ENOSPC when zswap rejects and the folio must go to disk: clear error,
    // the caller keeps the folio.
    let (swap, plan) = faulty_swap(Config {
        enabled: false,
        ..cfg()
    });
    plan.fail_writes_after(0, libc::ENOSPC);
    let s = swap.alloc_slots(1).unwrap();
    assert!(matches!(
        swap.swap_out(&[&text_page(9)], &s),
        Err(ZswapError::Device(_))
    ));
}

#[test]
fn bad_arguments_are_errors() {
    let swap = Swap::new(cfg()).unwrap();
    let mut page = vec![0u8; PAGE_SIZE];
    assert!(matches!(
        swap.swap_in(1 << 40, &mut page),
        Err(ZswapError::BadOffset(_))
    ));
    assert!(matches!(
        swap.swap_out(&[&[0u8; 100]], &[0]),
        Err(ZswapError::BadFolio)
    ));
    assert!(matches!(swap.swap_out(&[], &[]), Err(ZswapError::BadFolio)));
    assert!(matches!(
        swap.free(5),
        Err(ZswapError::Device(SwapError::InvalidSlot(5)))
    ));
    let bad = Config {
        max_pool_percent: 0,
        ..cfg()
    };
    assert!(matches!(Swap::new(bad), Err(ZswapError::Config(_))));
}

#[derive(Debug, Clone)]
enum Op {
    Out(Vec<u8>), // page kinds: 0 zero, 1 text, 2 random
    In(usize),
    Free(usize),
    Writeback(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(0u8..3, 1..9).prop_map(Op::Out),
        3 => any::<usize>().prop_map(Op::In),
        1 => any::<usize>().prop_map(Op::Free),
        1 => (1usize..20).prop_map(Op::Writeback),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every page swapped in equals the page swapped out, whatever
    /// happened in between (writeback, pool limit, readahead, frees).
    #[test]
    fn swap_matches_a_hashmap(
        ops in prop::collection::vec(op(), 1..80),
        policy in prop_oneof![Just(Readahead::Always), Just(Readahead::BypassZswap), Just(Readahead::DiskOnly)],
        fault_around: bool,
        writeback: bool,
    ) {
        let c = Config {
            readahead: policy, writeback,
            total_ram_bytes: 1 << 20, max_pool_percent: 10, swap_cache_pages: 4,
            swapfile_pages: 1024, ..cfg()
        };
        let swap = Swap::new(c).unwrap();
        let mut model: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut tag = 0u64;
        for op in ops {
            match op {
                Op::Out(kinds) => {
                    let pages: Vec<Vec<u8>> = kinds.iter().map(|k| { tag += 1; match k {
                        0 => vec![0u8; PAGE_SIZE], 1 => text_page(tag), _ => random_page(tag) } }).collect();
                    let slots = swap.alloc_slots(pages.len()).unwrap();
                    let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
                    match swap.swap_out(&refs, &slots) {
                        Ok(_) => model.extend(slots.into_iter().zip(pages)),
                        Err(ZswapError::Rejected(_)) => {
                            prop_assert!(!writeback);
                            for s in slots { swap.free(s).unwrap(); }
                        }
                        Err(e) => prop_assert!(false, "{}", e),
                    }
                }
                Op::In(i) if !model.is_empty() => {
                    let mut keys: Vec<u64> = model.keys().copied().collect();
                    keys.sort_unstable();
                    let slot = keys[i % keys.len()];
                    let mut page = vec![0u8; PAGE_SIZE];
                    let mut around = Vec::new();
                    let neighbours: Vec<u64> = if fault_around { keys.clone() } else { Vec::new() };
                    swap.swap_in_around(slot, &mut page, &neighbours, &mut around).unwrap();
                    prop_assert_eq!(&page, &model.remove(&slot).unwrap());
                    for (s, data) in around {
                        prop_assert_eq!(&data[..], &model.remove(&s).unwrap()[..]);
                    }
                }
                Op::Free(i) if !model.is_empty() => {
                    let slot = *model.keys().nth(i % model.len()).unwrap();
                    model.remove(&slot);
                    swap.free(slot).unwrap();
                }
                Op::Writeback(n) => { swap.writeback(n).unwrap(); }
                _ => {}
            }
            prop_assert_eq!(swap.device().free_slots(), 1024 - model.len());
        }
        // Drain: fault-around hands neighbours over with each swap-in.
        let mut keys: Vec<u64> = model.keys().copied().collect();
        keys.sort_unstable();
        for slot in keys {
            let Some(page) = model.remove(&slot) else { continue };
            let mut got = vec![0u8; PAGE_SIZE];
            let mut around = Vec::new();
            let neighbours: Vec<u64> = if fault_around { model.keys().copied().collect() } else { Vec::new() };
            swap.swap_in_around(slot, &mut got, &neighbours, &mut around).unwrap();
            prop_assert_eq!(&got, &page);
            for (s, data) in around {
                prop_assert_eq!(&data[..], &model.remove(&s).unwrap()[..]);
            }
        }
        prop_assert_eq!(swap.stats().stored_pages, 0);
    }
}

#[test]
fn loads_past_the_queue_free_their_objects_themselves() {
    // A 400 KiB pool: the queue's least length.
    let small = Config {
        total_ram_bytes: 2 << 20,
        max_pool_percent: 20,
        ..cfg()
    };
    let queue = zswap::loaded_queue_len(small.max_pool_bytes());
    assert_eq!(queue, 16);
    let swap = Swap::new(small).unwrap();
    let pages: Vec<Vec<u8>> = (0..queue as u64 + 10).map(text_page).collect();
    let slots = out(&swap, &pages);
    for (&slot, want) in slots.iter().zip(&pages) {
        assert_eq!(&swap_in(&swap, slot).0, want);
    }
    // The first `queue` loads' objects wait; the ten after freed theirs.
    assert_eq!(swap.zswap().objects_in_use(), queue);
    assert_eq!(swap.zswap().free_loaded(), queue);
    assert_eq!(swap.zswap().objects_in_use(), 0);
    assert_eq!(swap.zswap().free_loaded(), 0);
}
