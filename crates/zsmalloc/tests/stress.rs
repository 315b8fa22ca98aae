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
                            // In place, while compaction may move it.
                            let same = pool.read_with(h, size, |b| b == &buf[..]).unwrap();
                            assert!(same, "thread {t} op {i}: read_with");
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

/// Readers read handles that other threads free at the same moment: every
/// read returns the object's own bytes or `InvalidHandle`, never another
/// object's bytes, and emptied zspages a reader holds are released later.
#[test]
fn readers_racing_frees_of_the_same_objects() {
    use common::sync::Mutex;
    use zsmalloc::Error;

    let pool = Arc::new(Pool::new(Config::seed001().with_arena_bytes(64 << 20)).unwrap());
    let published: Arc<Mutex<Vec<(Handle, u64, usize)>>> = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (pool, published, stop) = (pool.clone(), published.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + r);
                let (mut ok, mut gone) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let pick = {
                        let list = published.lock();
                        (!list.is_empty()).then(|| list[rng.gen_range(0..list.len())])
                    };
                    let Some((h, tag, size)) = pick else { continue };
                    let mut buf = vec![0; size];
                    match pool.read(h, &mut buf) {
                        Ok(()) => {
                            assert_eq!(
                                buf,
                                fill(size, tag),
                                "a read returned another object's bytes"
                            );
                            ok += 1;
                        }
                        Err(Error::InvalidHandle(_)) => gone += 1,
                        Err(e) => panic!("unexpected error {e}"),
                    }
                }
                (ok, gone)
            })
        })
        .collect();
    let writers: Vec<_> = (0..2u64)
        .map(|t| {
            let (pool, published) = (pool.clone(), published.clone());
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t);
                for i in 0..30_000u64 {
                    let size = rng.gen_range(1000..=4096);
                    let tag = (t << 32) | i;
                    let h = pool.malloc(size).unwrap();
                    pool.write(h, &fill(size, tag)).unwrap();
                    let victim = {
                        let mut list = published.lock();
                        list.push((h, tag, size));
                        let n = list.len();
                        (n > 64).then(|| list.swap_remove(rng.gen_range(0..n)))
                    };
                    if let Some((v, _, _)) = victim {
                        // Readers may still hold v's handle: their reads must fail cleanly.
                        pool.free(v).unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let (mut ok, mut gone) = (0, 0);
    for r in readers {
        let (o, g) = r.join().unwrap();
        ok += o;
        gone += g;
    }
    assert!(ok > 0, "readers saw live objects");
    for (h, _, _) in published.lock().drain(..) {
        pool.free(h).unwrap();
    }
    pool.free_deferred();
    let stats = pool.stats();
    assert_eq!(
        (stats.objs_inuse, stats.pages_allocated),
        (0, 0),
        "{stats:?}"
    );
    eprintln!(
        "reads: {ok} whole, {gone} of freed handles; deferred frees: {}",
        stats.deferred_frees
    );
}
