//! Threads swapping out, in (with fault-around over their own pages) and
//! freeing at once, with the shrinker writing back under a small pool limit,
//! another thread forcing writeback and another freeing the objects of
//! loaded pages: every page comes back as written, every object is freed.

use compress::corpus::Corpus;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use zswap::{Config, Readahead, Swap, PAGE_SIZE};

fn page(kind: u32, tag: u64, text: &[u8]) -> Vec<u8> {
    match kind {
        0 => vec![0u8; PAGE_SIZE],
        1 => {
            let mut p = text.to_vec();
            p[..8].copy_from_slice(&tag.to_le_bytes());
            p
        }
        _ => {
            let mut rng = SmallRng::seed_from_u64(tag);
            (0..PAGE_SIZE).map(|_| rng.gen()).collect()
        }
    }
}

#[test]
fn concurrent_owners_shrinker_and_writeback() {
    for readahead in [
        Readahead::Always,
        Readahead::BypassZswap,
        Readahead::DiskOnly,
    ] {
        let cfg = Config {
            readahead,
            total_ram_bytes: 2 << 20, // 400 KiB pool: the shrinker runs often
            max_pool_percent: 20,
            swap_cache_pages: 32,
            swapfile_pages: 1 << 14,
            ..Config::default()
        };
        let swap = Swap::new(cfg).unwrap();
        let text = Corpus::synthetic_page("text", 3).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flusher = {
            let (swap, stop) = (swap.clone(), stop.clone());
            std::thread::spawn(move || {
                // Gentle, so the pool still reaches its limit and the
                // shrinker thread runs too.
                while !stop.load(Ordering::Relaxed) {
                    swap.writeback(4).unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            })
        };
        // The runtime's reclaim thread: frees the objects of loaded pages
        // while loads queue more.
        let reclaimer = {
            let (swap, stop) = (swap.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    swap.zswap().free_loaded();
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            })
        };
        let owners: Vec<_> = (0..4u64)
            .map(|t| {
                let (swap, text) = (swap.clone(), text.clone());
                std::thread::spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(t);
                    let mut mine: HashMap<u64, Vec<u8>> = HashMap::new();
                    for i in 0..1500u64 {
                        match rng.gen_range(0..10) {
                            0..=4 => {
                                let n = rng.gen_range(1..=8);
                                let pages: Vec<Vec<u8>> = (0..n)
                                    .map(|k| {
                                        page(rng.gen_range(0..3), (t << 40) | (i << 4) | k, &text)
                                    })
                                    .collect();
                                let slots = swap.alloc_slots(n as usize).unwrap();
                                let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
                                swap.swap_out(&refs, &slots).unwrap();
                                mine.extend(slots.into_iter().zip(pages));
                            }
                            5..=8 if !mine.is_empty() => {
                                let keys: Vec<u64> = mine.keys().copied().collect();
                                let slot = keys[rng.gen_range(0..keys.len())];
                                let mut got = vec![0u8; PAGE_SIZE];
                                let mut around = Vec::new();
                                if rng.gen_bool(0.5) {
                                    swap.swap_in_around(slot, &mut got, &keys, &mut around)
                                        .unwrap();
                                } else {
                                    // A folio: the owner's slots near this one, from the
                                    // pool, the zero map and the file (runs read unlocked).
                                    let near: Vec<u64> = keys
                                        .iter()
                                        .copied()
                                        .filter(|&k| k.abs_diff(slot) < 16)
                                        .collect();
                                    swap.swap_in_folio(slot, &mut got, &near, &mut around)
                                        .unwrap();
                                }
                                assert_eq!(
                                    got,
                                    mine.remove(&slot).unwrap(),
                                    "owner {t} slot {slot}"
                                );
                                for (s, data) in around {
                                    assert_eq!(
                                        &data[..],
                                        &mine.remove(&s).unwrap()[..],
                                        "around {s}"
                                    );
                                }
                            }
                            _ if !mine.is_empty() => {
                                let slot = *mine.keys().next().unwrap();
                                mine.remove(&slot);
                                swap.free(slot).unwrap();
                            }
                            _ => {}
                        }
                    }
                    for (slot, want) in mine {
                        let mut got = vec![0u8; PAGE_SIZE];
                        swap.swap_in(slot, &mut got).unwrap();
                        assert_eq!(got, want);
                    }
                })
            })
            .collect();
        for o in owners {
            o.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        flusher.join().unwrap();
        reclaimer.join().unwrap();
        // Every object freed once: none left in use once the last loads'
        // are (a double free would have failed its load or free).
        swap.zswap().free_loaded();
        assert_eq!(swap.zswap().objects_in_use(), 0, "{readahead:?}");
        let s = swap.stats();
        assert_eq!(s.stored_pages, 0, "{readahead:?}: {s}");
        assert_eq!(swap.device().free_slots(), 1 << 14, "every slot freed");
        assert!(
            s.written_back_pages > 0 && s.pool_limit_hit > 0,
            "{readahead:?}: writeback and the limit both ran: {s}"
        );
    }
}
