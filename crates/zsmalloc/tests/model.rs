//! Model-based test: every sequence of pool operations behaves like a
//! `HashMap<Handle, Vec<u8>>`, for both free paths, through compaction.
#![cfg(not(loom))]

use proptest::prelude::*;
use std::collections::HashMap;
use zsmalloc::{Config, Error, FreePath, Handle, PageRelease, Pool};

#[derive(Debug, Clone)]
enum Op {
    Malloc { size: usize, seed: u8 },
    Free(usize),
    Write { idx: usize, seed: u8 },
    Read(usize),
    FreeStale(usize),
    Compact,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1usize..=4096, any::<u8>()).prop_map(|(size, seed)| Op::Malloc { size, seed }),
        // Bias towards sizes that straddle pages and the huge class.
        2 => (prop_oneof![Just(1360usize), Just(3264), Just(4096), 2000usize..2100], any::<u8>())
            .prop_map(|(size, seed)| Op::Malloc { size, seed }),
        4 => any::<usize>().prop_map(Op::Free),
        2 => (any::<usize>(), any::<u8>()).prop_map(|(idx, seed)| Op::Write { idx, seed }),
        3 => any::<usize>().prop_map(Op::Read),
        1 => any::<usize>().prop_map(Op::FreeStale),
        1 => Just(Op::Compact),
    ]
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn small_pool(free_path: FreePath, page_release: PageRelease) -> Pool {
    let cfg = Config {
        free_path,
        page_release,
        ..Config::baseline().with_arena_bytes(64 << 20)
    };
    Pool::new(cfg).expect("pool")
}

fn check_contents(pool: &Pool, live: &[(Handle, Vec<u8>)]) {
    for (h, data) in live {
        let mut buf = vec![0; data.len()];
        pool.read(*h, &mut buf).expect("live handle reads");
        assert_eq!(&buf, data, "{h:?}");
        let same = pool.read_with(*h, data.len(), |b| b == &data[..]);
        assert!(same.expect("live handle reads in place"), "{h:?}");
    }
}

fn run(ops: Vec<Op>, free_path: FreePath, page_release: PageRelease) {
    let pool = small_pool(free_path, page_release);
    let mut live: Vec<(Handle, Vec<u8>)> = Vec::new();
    let mut dead: Vec<Handle> = Vec::new();
    for op in ops {
        match op {
            Op::Malloc { size, seed } => {
                let h = pool.malloc(size).unwrap();
                assert!(pool.obj_capacity(h).unwrap() >= size);
                let data = pattern(size, seed);
                pool.write(h, &data).unwrap();
                live.push((h, data));
            }
            Op::Free(i) if !live.is_empty() => {
                let (h, _) = live.swap_remove(i % live.len());
                pool.free(h).unwrap();
                dead.push(h);
            }
            Op::Write { idx, seed } if !live.is_empty() => {
                let n = live.len();
                let (h, data) = &mut live[idx % n];
                *data = pattern(data.len(), seed);
                pool.write(*h, data).unwrap();
            }
            Op::Read(i) if !live.is_empty() => {
                let (h, data) = &live[i % live.len()];
                let mut buf = vec![0; data.len()];
                pool.read(*h, &mut buf).unwrap();
                assert_eq!(&buf, data);
                let whole = pool.read_to_vec(*h).unwrap();
                assert_eq!(&whole[..data.len()], &data[..]);
                // In place or copied (a straddling object): the same bytes,
                // and a prefix of them.
                assert!(pool.read_with(*h, data.len(), |b| b == &data[..]).unwrap());
                let half = data.len() / 2;
                assert!(pool.read_with(*h, half, |b| b == &data[..half]).unwrap());
                let cap = pool.obj_capacity(*h).unwrap();
                assert!(matches!(
                    pool.read_with(*h, cap + 1, |_| ()),
                    Err(Error::TooLong { .. })
                ));
            }
            Op::FreeStale(i) if !dead.is_empty() => {
                let h = dead[i % dead.len()];
                assert!(matches!(pool.free(h), Err(Error::InvalidHandle(_))));
                assert!(matches!(
                    pool.read(h, &mut [0; 1]),
                    Err(Error::InvalidHandle(_))
                ));
                assert!(matches!(pool.write(h, &[1]), Err(Error::InvalidHandle(_))));
                assert!(matches!(
                    pool.read_with(h, 1, |_| ()),
                    Err(Error::InvalidHandle(_))
                ));
            }
            Op::Compact => {
                let before = pool.stats().pages_allocated;
                let done = pool.compact();
                assert_eq!(pool.stats().pages_allocated, before - done.pages_freed);
                check_contents(&pool, &live);
            }
            _ => {}
        }
        let stats = pool.stats();
        assert_eq!(stats.objs_inuse, live.len());
        assert!(stats.objs_allocated >= stats.objs_inuse);
    }
    check_contents(&pool, &live);
    for (h, _) in live.drain(..) {
        pool.free(h).unwrap();
    }
    let stats = pool.stats();
    assert_eq!(stats.objs_inuse, 0);
    assert_eq!(
        stats.pages_allocated, 0,
        "every page returns once all objects are freed"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn pool_matches_hashmap_lockless_free(ops in prop::collection::vec(op(), 1..400)) {
        run(ops, FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
    }

    #[test]
    fn pool_matches_hashmap_pool_lock_free(ops in prop::collection::vec(op(), 1..400)) {
        run(ops, FreePath::PoolLock, PageRelease::UnderClassLock);
    }
}

#[test]
fn compaction_frees_pages_and_keeps_data() {
    let pool = small_pool(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
    let mut live = HashMap::new();
    for i in 0..4000u32 {
        let size = 200 + (i as usize * 37) % 1800;
        let h = pool.malloc(size).unwrap();
        let data = pattern(size, i as u8);
        pool.write(h, &data).unwrap();
        live.insert(h, data);
    }
    // Free three out of four: lots of sparse zspages.
    let handles: Vec<Handle> = live.keys().copied().collect();
    for (i, h) in handles.iter().enumerate() {
        if i % 4 != 0 {
            pool.free(*h).unwrap();
            live.remove(h);
        }
    }
    let before = pool.stats();
    let compactable = pool.compactable_pages();
    let done = pool.compact();
    let after = pool.stats();
    // The count is what compaction then frees (nothing ran between).
    assert_eq!(done.pages_freed, compactable);
    assert_eq!(pool.compactable_pages(), 0);
    assert!(done.objs_migrated > 0);
    assert!(done.pages_freed > 0);
    assert_eq!(
        after.pages_allocated,
        before.pages_allocated - done.pages_freed
    );
    assert_eq!(after.pages_compacted, done.pages_freed);
    assert!(
        after.pages_allocated * 2 < before.pages_allocated,
        "{before:?} -> {after:?}"
    );
    let pairs: Vec<_> = live.into_iter().collect();
    check_contents(&pool, &pairs);
    // A second pass finds nothing left to do.
    assert_eq!(pool.compact().pages_freed, 0);
}

#[test]
fn bad_handles_are_errors() {
    let pool = small_pool(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
    for raw in [0u64, 1, u64::MAX, 1 << 40, 0xdead_beef_0000_0001] {
        let h = Handle::from_raw(raw);
        assert!(
            matches!(pool.free(h), Err(Error::InvalidHandle(_))),
            "{raw:#x}"
        );
        assert!(matches!(
            pool.read(h, &mut [0; 4]),
            Err(Error::InvalidHandle(_))
        ));
        assert!(pool.class_index(h).is_err());
    }
    let h = pool.malloc(100).unwrap();
    // Same slot, wrong generation.
    let forged = Handle::from_raw(h.to_raw() ^ (1 << 32));
    assert!(matches!(pool.free(forged), Err(Error::InvalidHandle(_))));
    assert!(matches!(
        pool.write(h, &[0; 113]),
        Err(Error::TooLong {
            len: 113,
            capacity: 112
        })
    ));
    assert!(matches!(pool.malloc(0), Err(Error::InvalidSize(0))));
    assert!(matches!(pool.malloc(4097), Err(Error::InvalidSize(4097))));
    pool.free(h).unwrap();
    assert!(
        matches!(pool.free(h), Err(Error::InvalidHandle(_))),
        "double free"
    );
    assert_eq!(pool.stats().objs_inuse, 0);
}

#[test]
fn full_arena_is_an_error_not_a_crash() {
    let cfg = Config::seed001().with_arena_bytes(16 * 4096);
    let pool = Pool::new(cfg).unwrap();
    let mut n = 0;
    let err = loop {
        match pool.malloc(4096) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(n, 16);
    assert!(matches!(err, Error::OutOfMemory));
    assert!(matches!(
        Pool::new(Config::seed001().with_arena_bytes(0)),
        Err(Error::Config(_))
    ));
}

#[test]
fn freed_memory_goes_back_to_the_os_past_the_cache() {
    let cfg = Config {
        free_page_cache: Some(16),
        ..Config::seed001().with_arena_bytes(64 << 20)
    };
    let pool = Pool::new(cfg).unwrap();
    let handles: Vec<Handle> = (0..2000).map(|_| pool.malloc(3000).unwrap()).collect();
    let used = pool.stats().pages_allocated;
    assert!(used > 1000);
    for h in handles {
        pool.free(h).unwrap();
    }
    let stats = pool.stats();
    assert_eq!(stats.pages_allocated, 0);
    assert!(stats.free_pages_resident <= 16, "{stats:?}");
    assert_eq!(stats.pages_discarded + stats.free_pages_resident, used);
}

#[test]
fn class_index_is_encoded_in_the_location() {
    let pool = small_pool(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
    for size in [1, 32, 33, 100, 1000, 3000, 4096] {
        let h = pool.malloc(size).unwrap();
        let spec = pool.class_for_size(size).unwrap();
        assert_eq!(pool.class_index(h).unwrap(), spec.index);
        assert_eq!(pool.obj_capacity(h).unwrap(), spec.size);
    }
}
