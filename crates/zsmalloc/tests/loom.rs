//! loom models of the races seed 001 reasons about, run on the real pool
//! code (its locks and atomics are loom's under `--cfg loom`):
//!
//! * `free` on the lockless path racing compaction that migrates the very
//!   object being freed (the re-read-under-class-lock protocol);
//! * the same race on the mainline pool-lock path;
//! * a reader racing the `free` that empties its zspage (deferred release);
//! * an in-place reader (`read_with`, what decompression uses) racing
//!   compaction that migrates its object and releases the emptied page.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p zsmalloc --test loom --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use zsmalloc::{Config, Error, FreePath, Handle, PageRelease, Pool};

const SIZE: usize = 2048; // two objects per one-page zspage

fn pool(free_path: FreePath, page_release: PageRelease) -> Pool {
    let cfg = Config {
        arena_bytes: 8 * 4096,
        max_handles: 8,
        free_path,
        page_release,
        ..Config::seed001()
    };
    Pool::new(cfg).unwrap()
}

fn store(pool: &Pool, byte: u8) -> Handle {
    let h = pool.malloc(SIZE).unwrap();
    pool.write(h, &[byte; 16]).unwrap();
    h
}

fn read16(pool: &Pool, h: Handle) -> Result<[u8; 16], Error> {
    let mut buf = [0u8; 16];
    pool.read(h, &mut buf).map(|()| buf)
}

/// Four objects in two zspages, the second and fourth freed: two
/// half-full zspages, so compaction moves one object into the other
/// zspage. Returns the pool, the four handles and the compacting thread,
/// started.
fn compaction_of_two_half_full_zspages(
    free_path: FreePath,
    page_release: PageRelease,
) -> (
    Arc<Pool>,
    Vec<Handle>,
    thread::JoinHandle<zsmalloc::CompactStats>,
) {
    let pool = Arc::new(pool(free_path, page_release));
    let h: Vec<Handle> = (0..4).map(|i| store(&pool, i as u8 + 1)).collect();
    pool.free(h[1]).unwrap();
    pool.free(h[3]).unwrap();
    let class = pool.class_index(h[0]).unwrap();
    let compactor = {
        let pool = pool.clone();
        thread::spawn(move || pool.compact_class(class).unwrap())
    };
    (pool, h, compactor)
}

/// Compaction of two half-full zspages; a second thread frees both
/// survivors meanwhile.
fn free_races_compaction(free_path: FreePath, page_release: PageRelease) {
    loom::model(move || {
        let (pool, h, compactor) = compaction_of_two_half_full_zspages(free_path, page_release);
        // Whichever object compaction moves, free must find it.
        pool.free(h[0]).unwrap();
        let moved = compactor.join().unwrap();

        assert_eq!(read16(&pool, h[2]).unwrap(), [3; 16], "survivor intact");
        assert!(moved.objs_migrated <= 1);
        pool.free(h[2]).unwrap();
        pool.free_deferred();
        let stats = pool.stats();
        assert_eq!(stats.objs_inuse, 0);
        assert_eq!(stats.pages_allocated, 0);
    });
}

#[test]
fn lockless_free_races_compaction() {
    free_races_compaction(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock);
}

#[test]
fn pool_lock_free_races_compaction() {
    free_races_compaction(FreePath::PoolLock, PageRelease::UnderClassLock);
}

#[test]
fn reader_races_the_free_that_empties_its_zspage() {
    loom::model(|| {
        let pool = Arc::new(pool(FreePath::ClassLockOnly, PageRelease::AfterClassUnlock));
        let h = store(&pool, 7);
        let reader = {
            let pool = pool.clone();
            thread::spawn(move || read16(&pool, h))
        };
        pool.free(h).unwrap();
        // Either the read saw the object whole, or the handle was already gone.
        match reader.join().unwrap() {
            Ok(bytes) => assert_eq!(bytes, [7; 16]),
            Err(Error::InvalidHandle(_)) => {}
            Err(e) => panic!("unexpected {e}"),
        }
        // A new object may reuse the pages; it must read back its own bytes.
        let h2 = store(&pool, 9);
        assert_eq!(read16(&pool, h2).unwrap(), [9; 16]);
        pool.free(h2).unwrap();
        pool.free_deferred();
        assert_eq!(pool.stats().pages_allocated, 0);
    });
}

#[test]
fn in_place_reader_races_compaction() {
    loom::model(|| {
        let (pool, h, compactor) = compaction_of_two_half_full_zspages(
            FreePath::ClassLockOnly,
            PageRelease::AfterClassUnlock,
        );
        // The bytes lent in place stay the object's whole for the call,
        // wherever compaction moves it before or after.
        for (i, x) in [(0u8, h[0]), (2, h[2])] {
            let whole = pool
                .read_with(x, 16, |b| b == [i + 1; 16].as_slice())
                .unwrap();
            assert!(whole, "object {i} read in place");
        }
        compactor.join().unwrap();
        assert_eq!(read16(&pool, h[0]).unwrap(), [1; 16]);
        assert_eq!(read16(&pool, h[2]).unwrap(), [3; 16]);
        pool.free(h[0]).unwrap();
        pool.free(h[2]).unwrap();
        pool.free_deferred();
        assert_eq!(pool.stats().pages_allocated, 0);
    });
}
