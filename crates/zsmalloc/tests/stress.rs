//! Multi-thread stress: writers, readers, frees and compaction at once;
//! every byte read back must be the byte written.
#![cfg(not(loom))]

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use zsmalloc::{Config, FreePath, Handle, PageRelease, Pool};

fn fill(size: usize, tag: u64) -> Vec<u8> {
    let bytes = tag.to_le_bytes();
    (0..size).map(|i| bytes[i % 8] ^ (i as u8)).collect()
}

fn stress(free_path: FreePath, page_release: PageRelease) {
    let cfg = Config {
        free_path,
        page_release,
        ..Config::baseline().with_arena_bytes(256 << 20)
    };
    let pool = Arc::new(Pool::new(cfg).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let (pool, stop) = (pool.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut passes = 0;
            while !stop.load(Ordering::Relaxed) {
                pool.compact();
                passes += 1;
            }
            passes
        })
    };
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                let mut live: Vec<(Handle, u64, usize)> = Vec::new();
                for i in 0..20_000u64 {
                    let tag = (t << 32) | i;
                    match rng.gen_range(0..10) {
                        0..=4 => {
                            let size = rng.gen_range(1..=4096);
                            let h = pool.malloc(size).unwrap();
                            pool.write(h, &fill(size, tag)).unwrap();
                            live.push((h, tag, size));
                        }
                        5..=7 if !live.is_empty() => {
                            let (h, tag, size) = live[rng.gen_range(0..live.len())];
                            let mut buf = vec![0; size];
                            pool.read(h, &mut buf).unwrap();
                            assert_eq!(buf, fill(size, tag), "thread {t} op {i}");
                        }
                        _ if !live.is_empty() => {
                            let (h, tag, size) = live.swap_remove(rng.gen_range(0..live.len()));
                            let mut buf = vec![0; size];
                            pool.read(h, &mut buf).unwrap();
                            assert_eq!(buf, fill(size, tag));
                            pool.free(h).unwrap();
                            assert!(pool.free(h).is_err());
                        }
                        _ => {}
                    }
                }
                for (h, tag, size) in live {
                    let mut buf = vec![0; size];
                    pool.read(h, &mut buf).unwrap();
                    assert_eq!(buf, fill(size, tag));
                    pool.free(h).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(compactor.join().unwrap() > 0);
    pool.free_deferred();
    let stats = pool.stats();
    assert_eq!(stats.objs_inuse, 0);
    assert_eq!(stats.pages_allocated, 0);
}

#[test]
fn stress_lockless_free_with_compaction() {
    stress(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
}

#[test]
fn stress_pool_lock_free_with_compaction() {
    stress(FreePath::PoolLock, PageRelease::UnderClassLock);
}
