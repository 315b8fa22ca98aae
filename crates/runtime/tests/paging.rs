//! Programs' memory paged through uzswap for real: far more data than the
//! resident limit, written and read back byte for byte, with threads
//! writing while the reclaimer evicts.

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use runtime::{Runtime, RuntimeConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod common;
use common::{config, fill, PAGE};

#[test]
fn eight_times_the_limit_reads_back_byte_for_byte() {
    let rt = Runtime::new(config(512)).unwrap();
    let npages = 4096;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        match i % 8 {
            0 => {}                                     // never touched
            1 => mem[i * PAGE..(i + 1) * PAGE].fill(0), // written, but zero
            _ => fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1),
        }
    }
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        let page = &mem[i * PAGE..(i + 1) * PAGE];
        if i % 8 < 2 {
            assert!(page.iter().all(|&b| b == 0), "page {i} should read zero");
        } else {
            fill(&mut expect, i, 1);
            assert!(page == &expect[..], "page {i} differs");
        }
    }
    let s = rt.stats();
    let z = rt.swap_stats();
    // Direct reclaim keeps residency under the limit and a quarter (a
    // quarter is under the 16 MiB headroom here) plus one
    // reclaim batch, plus the pages one fault maps (a 16-page run).
    assert!(
        s.resident_pages <= 512 + 128 + 32 + 16,
        "resident stays bounded: {s:?}"
    );
    assert!(s.evicted_pages > 3000, "{s:?}");
    assert!(s.swapin_faults > 0 && s.zero_faults > 0, "{s:?}");
    // Which tier serves the reads depends on the shrinker's timing.
    assert!(z.zswpout > 0 && z.zswpin + z.pswpin > 0, "{z}");
    assert!(z.swpout_zero > 0, "zero pages take no pool memory: {z}");
    assert!(
        z.written_back_pages > 0 || z.pswpout > 0,
        "part went to the swap file: {z}"
    );
}

#[test]
fn threads_write_while_the_reclaimer_evicts() {
    // Random writes make one-page runs: unmapped one by one, in pairs (the
    // default) and in groups of 16 (writers wait for the whole group).
    for group in [1, 2, 16] {
        threads_write_while_the_reclaimer_evicts_unmapping_in_groups_of(group);
    }
}

fn threads_write_while_the_reclaimer_evicts_unmapping_in_groups_of(group: usize) {
    let mut cfg = config(256);
    cfg.unmap_group_pages = group;
    let per_thread = 768;
    let threads = 4;
    let race = Race::new(cfg, threads * per_thread, 16);
    let region = &race.region;
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let region = region.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t as u64);
                let first = t * per_thread;
                let mut version = vec![0u64; per_thread];
                let mut expect = vec![0u8; PAGE];
                for _ in 0..6000 {
                    let k = rng.gen_range(0..per_thread);
                    let i = first + k;
                    // SAFETY: each thread touches only its own pages.
                    let page = unsafe { page_mut(&region, i) };
                    if rng.gen_bool(0.5) {
                        version[k] += 1;
                        fill(page, i, version[k]);
                    } else if version[k] == 0 {
                        assert!(page.iter().all(|&b| b == 0), "untouched page {i}");
                    } else {
                        fill(&mut expect, i, version[k]);
                        assert!(
                            page == &expect[..],
                            "thread {t} page {i} version {}",
                            version[k]
                        );
                    }
                }
                version
            })
        })
        .collect();
    let versions: Vec<Vec<u64>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let (rt, region) = race.finish();
    let mut expect = vec![0u8; PAGE];
    for (t, vs) in versions.iter().enumerate() {
        for (k, &v) in vs.iter().enumerate() {
            let i = t * per_thread + k;
            // SAFETY: the workers are done.
            let page = unsafe { std::slice::from_raw_parts(region.as_ptr().add(i * PAGE), PAGE) };
            if v == 0 {
                assert!(page.iter().all(|&b| b == 0));
            } else {
                fill(&mut expect, i, v);
                assert!(page == &expect[..], "final check: page {i}");
            }
        }
    }
    let s = rt.stats();
    assert!(s.evicted_pages > 1000 && s.swapin_faults > 100, "{s:?}");
}

/// Page `i` of `region`, to write.
///
/// # Safety
/// No other thread uses page `i` while the slice lives.
#[allow(clippy::mut_from_ref)]
unsafe fn page_mut(region: &runtime::Region, i: usize) -> &mut [u8] {
    // SAFETY: the page lies in the region's mapping; the caller keeps
    // other threads off it.
    unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(i * PAGE), PAGE) }
}

/// Threads racing the reclaimer: a runtime, a region of `pages` pages,
/// and a thread that asks for evictions of `push` pages over and over
/// (pressure from outside the reclaimer) until [`Race::finish`].
struct Race {
    rt: Arc<Runtime>,
    region: Arc<runtime::Region>,
    stop: Arc<AtomicBool>,
    pusher: std::thread::JoinHandle<()>,
}

impl Race {
    fn new(cfg: RuntimeConfig, pages: usize, push: usize) -> Self {
        let rt = Arc::new(Runtime::new(cfg).unwrap());
        let region = Arc::new(rt.alloc(pages * PAGE).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let pusher = {
            let (rt, stop) = (rt.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rt.reclaim(push);
                    std::thread::yield_now();
                }
            })
        };
        Self {
            rt,
            region,
            stop,
            pusher,
        }
    }

    /// Stops the pushing thread.
    fn finish(self) -> (Arc<Runtime>, Arc<runtime::Region>) {
        self.stop.store(true, Ordering::Relaxed);
        self.pusher.join().unwrap();
        (self.rt, self.region)
    }
}

#[test]
fn refused_evictions_keep_pages_resident() {
    // Writeback off and a tiny pool: the store soon refuses; pages must stay.
    let mut cfg = config(64);
    cfg.swap.writeback = false;
    cfg.swap.total_ram_bytes = 1 << 20;
    cfg.swap.max_pool_percent = 5;
    let rt = Runtime::new(cfg).unwrap();
    let npages = 512;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 7);
    }
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        fill(&mut expect, i, 7);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    let s = rt.stats();
    assert!(s.evict_failures > 0, "{s:?}");
    assert!(
        s.resident_pages > 64,
        "refused pages stayed resident: {s:?}"
    );
}

#[test]
fn a_region_outliving_its_runtime_keeps_every_byte() {
    let rt = Runtime::new(config(64)).unwrap();
    let npages = 1024;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 3);
    }
    assert!(rt.stats().evicted_pages > 500, "most pages are swapped out");
    drop(rt);
    // No runtime, no handler: the pages must already be back.
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        fill(&mut expect, i, 3);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
}

/// Kernel version as (major, minor) from `uname -r`.
fn kernel_version() -> (u32, u32) {
    let r = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut it = r.trim().split(|c: char| !c.is_ascii_digit());
    let major = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    let minor = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    (major, minor)
}

/// Hot pages written every round, cold pages streamed past them: swap-in
/// faults on the hot set, with write tracking on or off.
fn hot_set_refaults(track_writes: bool) -> (u64, runtime::RuntimeStats) {
    // Aging runs when the test says (once a round), not on a timer: the
    // outcome must not depend on scheduling.
    let cfg = RuntimeConfig {
        track_writes,
        aging_interval: std::time::Duration::from_secs(3600),
        // 1024 pages: the pool (up to 400 pages) counts in the limit, and
        // the rest must hold the 128-page hot set with room to spare.
        ..config(1024)
    };
    let rt = Runtime::new(cfg).unwrap();
    let npages = 4096;
    let hot = 128;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    let mut version = vec![0u64; npages];
    let mut hot_faults = 0;
    let mut cold = hot;
    for round in 1..=24u64 {
        // The hot set: every page written each round.
        let before = rt.stats().swapin_faults;
        for i in 0..hot {
            version[i] = round;
            fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, round);
        }
        hot_faults += rt.stats().swapin_faults - before;
        rt.age_now();
        // A stream of cold pages, each written once in a while.
        for _ in 0..512 {
            version[cold] = round;
            fill(&mut mem[cold * PAGE..(cold + 1) * PAGE], cold, round);
            cold = if cold + 1 == npages { hot } else { cold + 1 };
        }
    }
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        if version[i] > 0 {
            fill(&mut expect, i, version[i]);
            assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        }
    }
    (hot_faults, rt.stats())
}

#[test]
fn write_tracking_keeps_the_hot_set_resident() {
    let (tracked, s) = hot_set_refaults(true);
    if !s.write_tracking {
        // Only kernels without PAGEMAP_SCAN (before 6.7) may lack it.
        assert!(
            kernel_version() < (6, 7),
            "PAGEMAP_SCAN should work here: {s:?}"
        );
        return;
    }
    let (untracked, u) = hot_set_refaults(false);
    eprintln!("hot-set swap-in faults: tracked {tracked}, untracked {untracked}; {s:?}");
    assert!(!u.write_tracking && u.aging_scans == 0 && u.wp_faults == 0);
    assert!(s.aging_scans > 0 && s.pages_written > 0, "{s:?}");
    assert!(s.wp_faults > 0 && s.written_reprieved > 0, "{s:?}");
    assert!(
        tracked * 2 < untracked,
        "write tracking should at least halve the hot set's refaults: {tracked} vs {untracked}"
    );
}

/// Random writes over eight times the limit: every eviction order misses
/// as often, so write tracking only adds write-protect faults, and the
/// governor (`aging.rs`) leaves aging passes out. Every page still reads
/// back as last written.
#[test]
fn aging_turns_itself_off_where_it_only_adds_faults() {
    let rt = Runtime::new(RuntimeConfig {
        aging_interval: std::time::Duration::from_millis(5),
        ..config(256)
    })
    .unwrap();
    if !rt.stats().write_tracking {
        assert!(kernel_version() < (6, 7), "PAGEMAP_SCAN should work here");
        return;
    }
    let npages = 2048;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    let mut version = vec![0u64; npages];
    let mut rng = SmallRng::seed_from_u64(7);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rt.stats().aging_skipped == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "aging never left out: {:?}",
            rt.stats()
        );
        for _ in 0..2000 {
            let i = rng.gen_range(0..npages);
            version[i] += 1;
            fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, version[i]);
        }
    }
    let s = rt.stats();
    assert!(s.aging_scans > 0 && s.evicted_pages > 0, "{s:?}");
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        if version[i] == 0 {
            assert!(
                mem[i * PAGE..(i + 1) * PAGE].iter().all(|&b| b == 0),
                "page {i}"
            );
        } else {
            fill(&mut expect, i, version[i]);
            assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        }
    }
}

#[test]
fn two_runtimes_share_one_limit() {
    let path = std::env::temp_dir().join(format!("uzswap-shared-test-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let a = Runtime::new(RuntimeConfig {
        shared_limit_file: Some(path.clone()),
        ..config(256)
    })
    .unwrap();
    // B cannot evict (no writeback, a pool too small for anything): only
    // A's reclaim can bring the pair under the shared limit, so A must
    // give up pages for B's — whatever the scheduling.
    let mut cb = RuntimeConfig {
        shared_limit_file: Some(path.clone()),
        ..config(256)
    };
    cb.swap.writeback = false;
    cb.swap.total_ram_bytes = 1 << 20;
    cb.swap.max_pool_percent = 1;
    let b = Runtime::new(cb).unwrap();
    let ra = a.alloc(512 * PAGE).unwrap();
    let rb = b.alloc(192 * PAGE).unwrap();
    // SAFETY: one thread uses each region here.
    let (ma, mb) = unsafe { (ra.as_mut_slice(), rb.as_mut_slice()) };
    for i in 0..512 {
        fill(&mut ma[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    // The limit counts what each process charges: resident pages, its
    // pool and entries, its page tables.
    wait_until("A alone under the limit", || a.stats().charged_pages <= 256);
    let a_alone = a.stats().charged_pages;
    for i in 0..192 {
        // Random bytes: no store takes them; B keeps all 192 resident.
        let mut rng = SmallRng::seed_from_u64(i as u64);
        rng.fill(&mut mb[i * PAGE..(i + 1) * PAGE]);
    }
    wait_until("A and B together under the shared limit", || {
        a.stats().charged_pages + b.stats().charged_pages <= 256
    });
    let (sa, sb) = (a.stats(), b.stats());
    assert!(sb.resident_pages >= 128, "B's pages stayed: {sb:?}");
    assert!(
        sa.charged_pages + 128 <= a_alone + 32,
        "A gave up memory for B's: {a_alone} then {sa:?}"
    );
    let mut expect = vec![0u8; PAGE];
    for i in 0..512 {
        fill(&mut expect, i, 1);
        assert!(ma[i * PAGE..(i + 1) * PAGE] == expect[..], "a page {i}");
    }
    for i in 0..192 {
        let mut rng = SmallRng::seed_from_u64(i as u64);
        rng.fill(&mut expect[..]);
        assert!(mb[i * PAGE..(i + 1) * PAGE] == expect[..], "b page {i}");
    }
    drop((ra, rb, a, b));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn cold_pages_leave_before_pressure_and_hot_ones_come_back() {
    let path = std::env::temp_dir().join(format!("uzswap-cold-test-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let control = runtime::LimitControl::open(&path).unwrap();
    // A limit far above the program: nothing is evicted for pressure.
    let rt = Runtime::new(RuntimeConfig {
        shared_limit_file: Some(path.clone()),
        ..config(1 << 14)
    })
    .unwrap();
    let region = rt.alloc(512 * PAGE).unwrap();
    // SAFETY: this thread alone uses the region.
    let m = unsafe { region.as_mut_slice() };
    for i in 0..512 {
        fill(&mut m[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    // Untouched for over a second: all of it is cold memory by age, and
    // none of it left.
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let s = rt.stats();
    assert_eq!(s.cold_1s_bytes, (512 * PAGE) as u64, "{s:?}");
    assert_eq!(s.cold_10s_bytes, 0);
    assert_eq!(s.evicted_pages, 0);
    // Pages untouched for 100 ms leave now, while the program writes
    // its 16 hot pages.
    control.set_cold_age_ms(100);
    let mut version = 1;
    wait_until("the cold pages leave", || {
        version += 1;
        for i in 0..16 {
            fill(&mut m[i * PAGE..(i + 1) * PAGE], i, version);
        }
        rt.stats().resident_pages <= 32
    });
    let s = rt.stats();
    assert!(s.pgsteal_proactive >= 480, "{s:?}");
    assert_eq!(s.pgsteal_proactive, s.evicted_pages, "no pressure: {s:?}");
    control.set_cold_age_ms(0);
    let mut expect = vec![0u8; PAGE];
    for i in 0..512 {
        fill(&mut expect, i, if i < 16 { version } else { 1 });
        assert!(m[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    drop((region, rt));
    let _ = std::fs::remove_file(&path);
}

/// Waits up to 20 s for `cond`, polling; panics naming `what` if it never
/// holds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn pinned_buffers_take_kernel_writes_in_user_mode_only_mode() {
    let rt = Runtime::new(RuntimeConfig {
        user_mode_only: true,
        ..config(256)
    })
    .unwrap();
    let region = rt.alloc(1 << 20).unwrap();
    let f = std::fs::File::open("/proc/self/exe").unwrap();
    use std::os::fd::AsRawFd;
    // Unpinned: the kernel cannot fault the page in.
    // SAFETY: reading into our region.
    let n = unsafe { libc::read(f.as_raw_fd(), region.as_ptr().cast(), 1 << 20) };
    assert_eq!(n, -1, "user-mode only: EFAULT without a pin");
    let pin = rt.pin(region.as_ptr() as usize, 1 << 20, true);
    // SAFETY: as above.
    let n = unsafe { libc::pread(f.as_raw_fd(), region.as_ptr().cast(), 1 << 20, 0) };
    drop(pin);
    assert_eq!(n, 1 << 20, "{}", std::io::Error::last_os_error());
}

/// A program's madvise (or mlock) can split a region's mapping: one
/// first-touch fill or swap-in cannot span two mappings, and the runtime
/// maps page by page across the boundary. (numpy's MADV_HUGEPAGE on parts
/// of its arrays found this.)
#[test]
fn a_region_split_into_several_mappings_is_paged_as_one() {
    let rt = Runtime::new(config(256)).unwrap();
    let npages = 2048;
    let region = rt.alloc(npages * PAGE).unwrap();
    let base = region.as_ptr() as usize;
    // SAFETY: advice that splits the mapping at 2 MiB boundaries inside
    // the region (a flag change, no data change).
    let r = unsafe {
        libc::madvise(
            (base + (1 << 20) + 12 * PAGE) as *mut libc::c_void,
            2 << 20,
            libc::MADV_HUGEPAGE,
        )
    };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: one thread uses the region.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 4);
    }
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        fill(&mut expect, i, 4);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    assert!(rt.stats().evicted_pages > 1000, "{:?}", rt.stats());
}

/// `realloc` in place: a region grows where it is, its pages (resident or
/// swapped out) keep their bytes and address, the new ones read as zeros;
/// into its reserved room whatever is carved after it, and beyond only if
/// the arena room behind is free.
#[test]
fn a_region_grows_in_place_keeping_its_pages() {
    let rt = Runtime::new(config(64)).unwrap();
    let grain = 64 << 10;
    let mut r = rt.alloc_with_room(grain, 4 * grain).unwrap();
    let base = r.as_ptr() as usize;
    let pages = grain / PAGE;
    {
        // SAFETY: one thread uses the region here.
        let mem = unsafe { r.as_mut_slice() };
        for i in 0..pages {
            fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
        }
    }
    // Something carved meanwhile must not take the reserved room.
    let other = rt.alloc(grain).unwrap();
    assert!(other.as_ptr() as usize >= base + 4 * grain || (other.as_ptr() as usize) < base);
    // The fault handler may still be finishing the last fill (its pages in
    // flight, not evictable yet): evict until some pages have gone.
    wait_until("some pages swapped out before growing", || {
        rt.reclaim(pages) > 0
    });
    let before = rt.stats();
    assert!(rt.grow(&mut r, 3 * grain).unwrap(), "inside its room");
    assert_eq!(r.as_ptr() as usize, base, "same address");
    assert_eq!(r.len(), 3 * grain);
    // Growing brought nothing back in.
    assert_eq!(rt.stats().swapin_faults, before.swapin_faults);
    let mut expect = vec![0u8; PAGE];
    {
        // SAFETY: as above.
        let mem = unsafe { r.as_mut_slice() };
        for i in 0..pages {
            fill(&mut expect, i, 1);
            assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "old page {i}");
        }
        assert!(mem[grain..].iter().all(|&b| b == 0), "new pages are zeros");
        // The new pages are paged like the rest.
        for i in pages..3 * pages {
            fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 2);
        }
    }
    rt.reclaim(3 * pages);
    {
        // SAFETY: as above.
        let mem = unsafe { r.as_mut_slice() };
        for i in 0..3 * pages {
            fill(&mut expect, i, if i < pages { 1 } else { 2 });
            assert!(
                mem[i * PAGE..(i + 1) * PAGE] == expect[..],
                "page {i} after eviction"
            );
        }
    }
    // Past its room: in place only if the arena room behind is free.
    let grown = rt.grow(&mut r, 8 * grain).unwrap();
    assert_eq!(r.as_ptr() as usize, base);
    assert_eq!(r.len(), if grown { 8 * grain } else { 3 * grain });
    let blocker_at = base + r.len().max(4 * grain);
    let blocked = other.as_ptr() as usize == blocker_at;
    if blocked {
        assert!(!grown, "the room behind was taken");
    }
    drop((r, other));
}

/// Swap-ins free objects all over the pool's zspages; while the charge is
/// over the limit the reclaimer compacts the pool (zsmalloc's shrinker), so
/// a fragmented pool does not take room from resident pages.
#[test]
fn the_reclaimer_compacts_a_fragmented_pool() {
    let rt = Runtime::new(config(256)).unwrap();
    let npages = 2048;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    wait_until("under the limit", || rt.stats().charged_pages <= 256);
    // Every other page back in: half the pool's objects freed, scattered.
    let mut expect = vec![0u8; PAGE];
    for i in (0..npages).step_by(2) {
        fill(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    // Compaction runs while the charge is over the limit, at most every
    // 100 ms: keep it over (reading the odd pages back in, which evicts
    // others) until one has run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut i = 1;
    while rt.swap_stats().pages_compacted == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: the pool compacted"
        );
        fill(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        i = (i + 2) % npages;
    }
    for i in 0..npages {
        fill(&mut expect, i, 1);
        assert!(
            mem[i * PAGE..(i + 1) * PAGE] == expect[..],
            "page {i} after"
        );
    }
}

/// Page `i` at version `v`, half random bytes: about 2:1 compressed.
fn fill_half_random(page: &mut [u8], i: usize, v: u64) {
    fill(page, i, v);
    SmallRng::seed_from_u64(i as u64 ^ (v << 32)).fill(&mut page[PAGE / 2..]);
}

#[test]
fn a_fragmented_pool_is_compacted_under_the_limit_too() {
    let path = std::env::temp_dir().join(format!("uzswap-compact-test-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let control = runtime::LimitControl::open(&path).unwrap();
    let mut cfg = RuntimeConfig {
        shared_limit_file: Some(path.clone()),
        ..config(1 << 14)
    };
    cfg.swap.max_pool_percent = 100; // a 16 MiB pool: room for all of it
    cfg.charge_pool = false; // and all of it goes there, none to the file
    let rt = Runtime::new(cfg).unwrap();
    // A controller's limit of 256 pages sends the data to the pool.
    control.set_limit(256);
    let npages = 4096;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill_half_random(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    wait_until("under the limit", || rt.stats().charged_pages <= 256);
    let compacted = rt.swap_stats().pages_compacted;
    // The limit raised far above the charge (the controller backing off),
    // then every other page read back: half the pool's objects freed,
    // scattered over its zspages, and no pressure to compact it.
    control.set_limit(1 << 14);
    let mut expect = vec![0u8; PAGE];
    for i in (0..npages).step_by(2) {
        fill_half_random(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    let s = rt.stats();
    assert!(
        s.charged_pages < (1 << 14) / 2,
        "far under the limit: {s:?}"
    );
    wait_until("the pool compacted", || {
        rt.swap_stats().pages_compacted > compacted
    });
    for i in 0..npages {
        fill_half_random(&mut expect, i, 1);
        assert!(
            mem[i * PAGE..(i + 1) * PAGE] == expect[..],
            "page {i} after"
        );
    }
    drop((region, rt));
    let _ = std::fs::remove_file(&path);
}

/// `charge_pool: false` (cgroup v1's rule, `--uncharged-pool`): the limit
/// counts resident pages only; the pool grows past it, bounded by its own
/// limit alone, and nothing is written back to meet the limit.
#[test]
fn an_uncharged_pool_leaves_the_limit_to_resident_pages() {
    let mut cfg = config(256);
    cfg.charge_pool = false;
    cfg.swap.max_pool_percent = 100; // a 16 MiB pool: room for all of it
    let rt = Runtime::new(cfg).unwrap();
    let npages = 2048;
    let region = filled_down_to_256_resident(&rt, npages);
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    let s = rt.stats();
    let z = rt.swap_stats();
    assert_eq!(s.charged_pages, s.resident_pages, "the pool is not charged");
    let pool_pages = z.pool_total_size / PAGE as u64;
    assert!(
        s.resident_pages + pool_pages > 256,
        "resident and pool together exceed the limit: {s:?} {z}"
    );
    assert_eq!(
        z.written_back_pages, 0,
        "no writeback to meet the limit: {z}"
    );
    let mut expect = vec![0u8; PAGE];
    for i in 0..npages {
        fill(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
}

/// A region of `npages` pages, each filled (version 1), once the runtime
/// has evicted it down to 256 resident pages (the tests' limit).
fn filled_down_to_256_resident(rt: &Runtime, npages: usize) -> runtime::Region {
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    wait_until("resident under the limit", || {
        rt.stats().resident_pages <= 256
    });
    region
}

/// Writes `npages` under a 256-page limit with a pool that holds them all,
/// then reads every page back in `order` and checks it; returns the
/// runtime's counters after the read-back.
fn read_back_in_order(folio_swapin: bool, order: &[usize]) -> runtime::RuntimeStats {
    let mut cfg = config(256);
    cfg.charge_pool = false;
    cfg.swap.max_pool_percent = 100;
    cfg.swap.shrinker_enabled = false;
    cfg.folio_swapin = folio_swapin;
    let rt = Runtime::new(cfg).unwrap();
    let npages = order.len();
    let region = filled_down_to_256_resident(&rt, npages);
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    let before = rt.stats();
    let mut expect = vec![0u8; PAGE];
    for &i in order {
        fill(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    let s = rt.stats();
    assert_eq!(rt.swap_stats().pswpin, 0, "everything came from the pool");
    runtime::RuntimeStats {
        swapin_faults: s.swapin_faults - before.swapin_faults,
        around_pages: s.around_pages - before.around_pages,
        folio_swapins: s.folio_swapins - before.folio_swapins,
        ..s
    }
}

/// Folio swap-in: a stream reading its memory back takes one fault per
/// folio, not per page; a random reader takes its one page per fault
/// (seed 002's rule for pooled pages), and so does a stream with folio
/// swap-in off.
#[test]
fn a_stream_swaps_in_whole_folios_and_random_faults_one_page() {
    let npages = 4096;
    let seq: Vec<usize> = (0..npages).collect();
    let s = read_back_in_order(true, &seq);
    let brought = s.swapin_faults + s.around_pages;
    assert!(brought > 3000, "most pages were swapped in: {s:?}");
    assert!(
        s.swapin_faults * 8 < brought,
        "a fault per folio, not per page: {s:?}"
    );
    assert!(s.folio_swapins > 0, "{s:?}");

    let s = read_back_in_order(false, &seq);
    assert_eq!(s.folio_swapins, 0, "{s:?}");
    assert!(
        s.swapin_faults > 3000 && s.around_pages == 0,
        "off: a fault per page: {s:?}"
    );

    let mut random = seq.clone();
    random.shuffle(&mut SmallRng::seed_from_u64(7));
    let s = read_back_in_order(true, &random);
    assert!(s.swapin_faults > 2000, "{s:?}");
    assert!(
        s.folio_swapins * 4 < s.swapin_faults,
        "random faults rarely land near a recent one: {s:?}"
    );
}

/// Random faults on pages in the swap file read about the pages they use:
/// what readahead brings beside a fault that does not stream waits in the
/// swap cache for a fault of its own (a hit), and nothing is mapped around
/// it. Mapped around at once, every read-ahead page looked used, the
/// window stayed at the whole cluster once two neighbouring faults had
/// opened it, and each random fault read and mapped a cluster.
#[test]
fn random_faults_on_the_swap_file_read_the_pages_they_use() {
    let mut cfg = config(256);
    cfg.charge_pool = false;
    cfg.swap.enabled = false; // every page goes to the swap file
    cfg.swap.page_cluster = 3;
    cfg.swap.adaptive_readahead = true;
    let rt = Runtime::new(cfg).unwrap();
    let npages = 4096;
    let region = filled_down_to_256_resident(&rt, npages);
    // SAFETY: one thread uses the region here.
    let mem = unsafe { region.as_mut_slice() };
    let (before, swap_before) = (rt.stats(), rt.swap_stats());
    // Two neighbouring faults first (they open the window: the second
    // reads two pages), then every other page of the oldest half in a
    // random order: no fault next to the one before.
    let mut order: Vec<usize> = (2..npages / 2).step_by(2).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(11));
    let mut expect = vec![0u8; PAGE];
    for i in [0, 1].into_iter().chain(order) {
        fill(&mut expect, i, 1);
        assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
    }
    let (s, swap) = (rt.stats(), rt.swap_stats());
    let faults = s.swapin_faults - before.swapin_faults;
    let read = swap.pswpin - swap_before.pswpin;
    assert!(
        faults > 900,
        "the pages were on the swap file: {faults} faults"
    );
    assert_eq!(s.around_pages, before.around_pages, "nothing mapped around");
    assert!(
        read <= faults + faults / 8,
        "{read} pages read from the swap file for {faults} faults"
    );
}

/// Permissions of the mapping holding `addr`, from `/proc/self/maps`
/// (`"rw-p"`, `"---p"`, …).
fn perms_at(addr: usize) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (range, perms) = (f.next().unwrap(), f.next().unwrap());
        let (lo, hi) = range.split_once('-').unwrap();
        let lo = usize::from_str_radix(lo, 16).unwrap();
        let hi = usize::from_str_radix(hi, 16).unwrap();
        if (lo..hi).contains(&addr) {
            return perms.to_string();
        }
    }
    panic!("{addr:#x} is not mapped");
}

/// A `PROT_NONE` reservation whose parts are committed as regions (the
/// JVM's and V8's heaps): a commit at an odd page offset is paged, grows
/// page by page behind itself, keeps every byte through eviction, and
/// dropping it leaves the room reserved and inaccessible.
#[test]
fn commits_inside_a_reservation_are_paged_and_decommit_to_prot_none() {
    let rt = Runtime::new(config(64)).unwrap();
    let arena = runtime::arena::global().unwrap();
    let room = 16 << 20;
    let res = arena.reserve_room(room).unwrap();
    assert_eq!(perms_at(res), "---p", "a reservation is inaccessible");
    // A commit that is not grain aligned, then grown three times by 5 pages.
    let start = res + 3 * PAGE;
    let mut r = rt.commit(start, 40 * PAGE).unwrap();
    assert_eq!(r.as_ptr() as usize, start);
    for _ in 0..3 {
        rt.commit_behind(&mut r, 5 * PAGE).unwrap();
    }
    let pages = 55;
    assert_eq!(r.len(), pages * PAGE);
    assert_eq!(
        perms_at(start - PAGE),
        "---p",
        "the page below stays reserved"
    );
    assert_eq!(perms_at(start + pages * PAGE), "---p", "and the one above");
    // A second commit further on, with the 8 pages between left reserved.
    let other = rt.commit(start + (pages + 8) * PAGE, 300 * PAGE).unwrap();
    {
        // SAFETY: one thread uses the regions here.
        let (a, b) = unsafe { (r.as_mut_slice(), other.as_mut_slice()) };
        assert!(a.iter().all(|&x| x == 0), "a commit starts zeroed");
        for i in 0..pages {
            fill(&mut a[i * PAGE..(i + 1) * PAGE], i, 3);
        }
        for i in 0..300 {
            fill(&mut b[i * PAGE..(i + 1) * PAGE], i, 4);
        }
    }
    // Each poll pushes reclaim along; the condition is on what was
    // evicted in all, by it or by the background reclaimer. (It used to
    // also need this poll's own reclaim to evict something: once an
    // earlier poll had evicted every resident page, that never held again,
    // 2 failures in 40.)
    wait_until("commits swapped out", || {
        rt.reclaim(400);
        rt.stats().evicted_pages >= 100
    });
    let mut expect = vec![0u8; PAGE];
    {
        // SAFETY: as above.
        let (a, b) = unsafe { (r.as_mut_slice(), other.as_mut_slice()) };
        for i in 0..pages {
            fill(&mut expect, i, 3);
            assert!(a[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        }
        for i in 0..300 {
            fill(&mut expect, i, 4);
            assert!(b[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        }
    }
    assert!(rt.stats().swapin_faults > 0, "{:?}", rt.stats());
    // Growing a region that is not a commit this way is refused.
    let mut plain = rt.alloc(64 << 10).unwrap();
    assert!(rt.commit_behind(&mut plain, PAGE).is_err());
    // So is a commit outside the arena, and one over a region's pages
    // (never two regions over one page), by commit or by growth.
    assert!(rt.commit(0x10000, PAGE).is_err());
    assert!(rt.commit(start + 10 * PAGE, PAGE).is_err());
    assert!(rt.commit(start - PAGE, 2 * PAGE).is_err());
    assert!(
        rt.commit_behind(&mut r, 9 * PAGE).is_err(),
        "would reach `other`"
    );
    assert_eq!(
        r.len(),
        pages * PAGE,
        "a refused growth leaves the region as it was"
    );
    rt.commit_behind(&mut r, 8 * PAGE).unwrap();
    assert_eq!(perms_at(start + pages * PAGE), "rw-p");
    let pages = pages + 8;
    drop(r);
    assert_eq!(perms_at(start), "---p", "decommitted, still reserved");
    // The room can be committed again: zeros, not the old bytes.
    let again = rt.commit(start, pages * PAGE).unwrap();
    // SAFETY: as above.
    assert!(unsafe { again.as_mut_slice() }.iter().all(|&x| x == 0));
    let (base, len) = other.into_plain();
    // SAFETY: the plain mapping is ours now; one thread reads it.
    let b = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
    fill(&mut expect, 299, 4);
    assert!(b[299 * PAGE..] == expect[..], "into_plain keeps the bytes");
    drop(again);
}

/// A runtime of `cfg`, if this kernel lets it keep clean pages' slots
/// (`PAGEMAP_SCAN`, as write tracking).
fn runtime_keeping_clean_pages(cfg: RuntimeConfig) -> Option<Runtime> {
    let rt = Runtime::new(cfg).unwrap();
    if !rt.stats().write_tracking {
        eprintln!("no PAGEMAP_SCAN on this kernel: clean pages keep no slot");
        return None;
    }
    Some(rt)
}

/// Pages read back from the swap file keep their slots while unwritten
/// (`Clean`, the kernel's clean swap-cache pages): evicted again, they are
/// only unmapped. A written page, and one the program discards behind the
/// runtime's back (a raw `MADV_DONTNEED`), lose the slot: every page still
/// reads what the program last left there.
#[test]
fn clean_pages_go_back_to_their_slots_without_a_store() {
    let mut cfg = config(64);
    cfg.swap.max_pool_percent = 1; // a 160 KiB pool: nearly all goes to the file
    let Some(rt) = runtime_keeping_clean_pages(cfg) else {
        return;
    };
    let npages = 1024;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region (the discards below are its own).
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    let expect_page = |i: usize, version: &dyn Fn(usize) -> Option<u64>| {
        let mut e = vec![0u8; PAGE];
        if let Some(v) = version(i) {
            fill(&mut e, i, v);
        }
        e
    };
    let check = |mem: &[u8], version: &dyn Fn(usize) -> Option<u64>| {
        for i in 0..npages {
            let got = &mem[i * PAGE..(i + 1) * PAGE];
            assert!(got == &expect_page(i, version)[..], "page {i} differs");
        }
    };
    // Two read passes: the first swaps in from the file (slots kept), the
    // second evicts those clean pages again to make room.
    check(mem, &|_| Some(1));
    check(mem, &|_| Some(1));
    let s = rt.stats();
    assert!(s.kept_clean > 500, "{s:?}");
    assert!(s.evicted_clean > 500, "{s:?}");
    // Now write every 4th page, discard every 4th + 1 behind the
    // runtime's back, and read everything back twice.
    for i in (0..npages).step_by(4) {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 2);
    }
    for i in (1..npages).step_by(4) {
        let addr = mem[i * PAGE..].as_mut_ptr();
        // Pinned, the page is brought in (a read: `Clean`) and stays: the
        // kernel's discard then unmaps it (a raw discard of a page swapped
        // out is not seen by the runtime, which the preload library's
        // `madvise` covers).
        let pinned = rt.pin(addr as usize, PAGE, false);
        // SAFETY: a page of our own region; it reads as zeros from now on.
        let r = unsafe { libc::madvise(addr.cast(), PAGE, libc::MADV_DONTNEED) };
        assert_eq!(r, 0);
        drop(pinned);
    }
    let now = |i: usize| match i % 4 {
        0 => Some(2),
        1 => None,
        _ => Some(1),
    };
    check(mem, &now);
    check(mem, &now);
    let z = rt.swap_stats();
    let s = rt.stats();
    // Clean evictions wrote nothing: the file took no more pages (its
    // writes, pool writeback included) than were evicted not clean.
    assert!(s.external_discards > 0, "{s:?}");
    assert!(z.pswpout <= s.evicted_pages - s.evicted_clean, "{s:?} {z}");
    // Read once more (clean pages again), then end the runtime: every page
    // comes back as plain memory, clean ones write-protected no more.
    check(mem, &now);
    drop(rt);
    for i in 0..npages {
        fill(&mut mem[i * PAGE..(i + 1) * PAGE], i, 3);
    }
    check(mem, &|_| Some(3));
}

/// Page `i` at version `v` a quarter text, the rest zeros: about 8:1 in
/// the pool with its entry.
fn fill_quarter(page: &mut [u8], i: usize, v: u64) {
    fill(&mut page[..PAGE / 4], i, v);
    page[PAGE / 4..].fill(0);
}

/// Under the budget split, a page the swap file gives back that the
/// largest pool the split allows would have held (loops over data that
/// fits in the limit compressed) keeps no slot: its next eviction
/// compresses it into the pool, and reading it again costs no device
/// read. Kept clean, each loop read every page past the pool from the
/// file again.
#[test]
fn pages_read_again_soon_are_stored_not_kept_clean() {
    let mut cfg = RuntimeConfig {
        adaptive_pool: true,
        ..config(256)
    };
    // On a disk: a file in memory keeps its clean pages' slots (a read
    // from it is a copy).
    cfg.swap.swapfile_dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&cfg.swap.swapfile_dir).unwrap();
    let Some(rt) = runtime_keeping_clean_pages(cfg) else {
        return;
    };
    // 1200 pages at about 6:1 (with their entries): less than the largest
    // pool holds (224 pages: about 1350). Written first, then as many
    // pages more, which the pool cannot hold with them: it writes the
    // oldest, these, to the file. The others are then discarded.
    let npages = 1200;
    let region = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region.
    let mem = unsafe { region.as_mut_slice() };
    for i in 0..npages {
        fill_quarter(&mut mem[i * PAGE..(i + 1) * PAGE], i, 1);
    }
    let extra = rt.alloc(npages * PAGE).unwrap();
    // SAFETY: one thread uses the region.
    let more = unsafe { extra.as_mut_slice() };
    for i in 0..npages {
        fill_quarter(&mut more[i * PAGE..(i + 1) * PAGE], npages + i, 1);
    }
    rt.discard(extra.as_ptr() as usize, extra.len());
    // Loops in one random order: single-page faults (no streams), each
    // page refaulting a loop after it left.
    let mut order: Vec<usize> = (0..npages).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(5));
    let mut expect = vec![0u8; PAGE];
    let mut read_from_file = Vec::new();
    for _ in 0..8 {
        for &i in &order {
            fill_quarter(&mut expect, i, 1);
            assert!(mem[i * PAGE..(i + 1) * PAGE] == expect[..], "page {i}");
        }
        read_from_file.push(rt.swap_stats().pswpin);
    }
    let (s, z) = (rt.stats(), rt.swap_stats());
    // The first loop reads what the pool wrote back; the last four read
    // little (measured: none; with the slots kept, about 1,050 a loop,
    // 4,200 in all).
    assert!(read_from_file[0] > 0, "{s:?} {z}");
    let last_four = read_from_file[7] - read_from_file[3];
    assert!(last_four < npages as u64 / 2, "{last_four}: {s:?} {z}");
}

/// How a racing worker discards its pages.
#[derive(Clone, Copy, PartialEq)]
enum Discard {
    /// A raw `MADV_DONTNEED` behind the runtime's back, as a program's own
    /// allocator may make: a discard of a page swapped out is not seen by
    /// the runtime (the preload library's `madvise` is), so the page may
    /// read its last version instead of zeros.
    Raw,
    /// `Runtime::discard` (the preload library's `madvise`): the page
    /// reads zeros until written again.
    ThroughRuntime,
}

/// Two threads write, read and discard (`how`) their own pages at random
/// while another thread evicts and the handler swaps in from the file (a
/// 1% pool: under slot locks). Every read checks the page: the version
/// written last, or zeros after a discard. A worker that has not finished
/// within 120 s is a deadlock. Returns the runtime and the region, the
/// race over.
fn race_discards(how: Discard, seed: u64) -> (Arc<Runtime>, Arc<runtime::Region>) {
    let mut cfg = config(128);
    cfg.swap.max_pool_percent = 1;
    let per_thread = 512;
    let threads = 2;
    let race = Race::new(cfg, threads * per_thread, 8);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    for t in 0..threads {
        let (region, rt, done_tx) = (race.region.clone(), race.rt.clone(), done_tx.clone());
        std::thread::spawn(move || {
            let mut rng = SmallRng::seed_from_u64(seed + t as u64);
            let first = t * per_thread;
            // (last version written, whether discarded since)
            let mut pages = vec![(0u64, false); per_thread];
            let mut expect = vec![0u8; PAGE];
            let mut discards = 0;
            for _ in 0..8000 {
                let k = rng.gen_range(0..per_thread);
                let i = first + k;
                // SAFETY: each thread touches only its own pages.
                let page = unsafe { page_mut(&region, i) };
                match rng.gen_range(0..4) {
                    0 | 1 => {
                        pages[k] = (pages[k].0 + 1, false);
                        fill(page, i, pages[k].0);
                    }
                    2 => {
                        match how {
                            Discard::ThroughRuntime => rt.discard(page.as_ptr() as usize, PAGE),
                            Discard::Raw => {
                                // SAFETY: a page of this thread's own region.
                                let r = unsafe {
                                    libc::madvise(
                                        page.as_mut_ptr().cast(),
                                        PAGE,
                                        libc::MADV_DONTNEED,
                                    )
                                };
                                assert_eq!(r, 0);
                            }
                        }
                        pages[k].1 = true;
                        discards += 1;
                    }
                    _ => {
                        let (v, discarded) = pages[k];
                        let zero = page.iter().all(|&b| b == 0);
                        let zeros_owed = discarded && (how == Discard::ThroughRuntime || zero);
                        if v == 0 || zeros_owed {
                            assert!(zero, "page {i}: never written, or discarded");
                        } else {
                            fill(&mut expect, i, v);
                            assert!(page == &expect[..], "page {i} version {v}");
                        }
                    }
                }
            }
            let _ = done_tx.send(discards);
        });
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for _ in 0..threads {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let discards = done_rx
            .recv_timeout(left)
            .expect("a worker finished within 120 s (no deadlock) and found its pages intact");
        assert!(discards > 1000);
    }
    let (rt, region) = race.finish();
    let s = rt.stats();
    assert!(s.evicted_pages > 1000 && s.swapin_faults > 100, "{s:?}");
    (rt, region)
}

/// Raw discards racing the evictor: it faults on its own victim, and must
/// not do it while holding a slot lock the handler waits for. Nothing
/// hangs, and every page reads what was written last, or zeros.
///
/// A discard landing while the evictor reads the run (it compresses the
/// program's pages where they lie) would leave a stored copy half old
/// bytes, half zeros: each such fault refuses the store it happened in,
/// so faults served mean stores refused. (Not one refusal per fault: the
/// same page may be discarded, and fault, twice during one read.)
#[test]
fn raw_discards_racing_the_evictor_neither_hang_nor_corrupt() {
    let (rt, _region) = race_discards(Discard::Raw, 100);
    let s = rt.stats();
    eprintln!(
        "external_discards {} evict_failures {}",
        s.external_discards, s.evict_failures
    );
    assert!(s.external_discards == 0 || s.evict_failures > 0, "{s:?}");
}

/// The program's own discards through the runtime (`Runtime::discard`, the
/// preload library's `madvise(MADV_DONTNEED)`), racing the reclaimer and
/// swap-ins from the file: a discarded page reads zeros until written
/// again, every other page what was written last, and the discards free
/// the slots they drop (nothing leaks into the pool or the file).
#[test]
fn discards_through_the_runtime_read_zero_while_the_reclaimer_evicts() {
    let (rt, region) = race_discards(Discard::ThroughRuntime, 200);
    // Discard everything: every slot the region held goes back.
    rt.discard(region.as_ptr() as usize, region.len());
    let z = rt.swap_stats();
    let s = rt.stats();
    assert_eq!(s.resident_pages, 0, "{s:?}");
    assert_eq!(z.stored_pages, 0, "{z}");
    // SAFETY: the race is over; nothing else uses the region.
    let mem = unsafe { std::slice::from_raw_parts(region.as_ptr(), region.len()) };
    for (i, page) in mem.chunks_exact(PAGE).enumerate() {
        assert!(
            page.iter().all(|&b| b == 0),
            "page {i} reads zero after the last discard"
        );
    }
}
