//! Issue 10's second bug, in a process of its own (other tests' regions
//! would take the address): a region dropped, and a smaller one made at
//! the same address, must not meet the old one's LRU records.

use runtime::Runtime;

mod common;
use common::{config, fill, PAGE};

/// Issue 10's second bug: a region dropped and a smaller one made at the
/// same address must not meet the old one's LRU records.
#[test]
fn a_smaller_region_at_a_dropped_regions_address_is_paged_safely() {
    let rt = Runtime::new(config(4096)).unwrap();
    let big = rt.alloc(7 << 20).unwrap();
    // SAFETY: one thread uses the region.
    unsafe { big.as_mut_slice() }.fill(1);
    let base = big.as_ptr() as usize;
    assert!(rt.lru_records(base).0 > 0);
    drop(big);
    assert_eq!(rt.lru_records(base).0, 0, "no live LRU record names it");
    // 1 MiB regions until one lands at the same address.
    let mut small = Vec::new();
    let same = loop {
        let r = rt.alloc(1 << 20).unwrap();
        if r.as_ptr() as usize == base {
            break r;
        }
        assert!(small.len() < 64, "no region reused the address");
        small.push(r);
    };
    // Now 64 MiB under a 16 MiB limit, through the reused address too.
    let rt_pages = 16384;
    let regions: Vec<_> = (0..64).map(|_| rt.alloc(1 << 20).unwrap()).collect();
    let all: Vec<&runtime::Region> = std::iter::once(&same).chain(&regions).collect();
    for (r, region) in all.iter().enumerate() {
        // SAFETY: one thread uses the regions.
        let mem = unsafe { region.as_mut_slice() };
        for i in 0..256 {
            fill(&mut mem[i * PAGE..(i + 1) * PAGE], r * 256 + i, 9);
        }
    }
    let mut expect = vec![0u8; PAGE];
    for (r, region) in all.iter().enumerate() {
        // SAFETY: as above.
        let mem = unsafe { region.as_mut_slice() };
        for i in 0..256 {
            fill(&mut expect, r * 256 + i, 9);
            assert!(
                mem[i * PAGE..(i + 1) * PAGE] == expect[..],
                "region {r} page {i}"
            );
        }
    }
    let s = rt.stats();
    assert!(s.evicted_pages as usize > rt_pages / 2, "{s:?}");
    // Dead records are compacted: never many more than live ones.
    let (_, records) = rt.lru_records(base);
    assert!(
        records <= 2 * s.resident_pages as usize + 4096 + 1,
        "{records} records"
    );
}
