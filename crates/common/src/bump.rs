//! A bump arena of `N` bytes that needs nothing to exist: usable as a
//! `static` before any allocator is (the LD_PRELOAD library serves the
//! blocks asked for while it looks the program's allocator up from one).
//!
//! Blocks are carved out in order by one compare-and-swap on the offset of
//! the first free byte, each behind a 16-byte header holding its size, and
//! are never freed or reused: their bytes are zero when handed out. A
//! request that does not fit gets `None`, never a partial block.
//!
//! Under `--cfg loom` the offset is loom's atomic and the model test below
//! checks every interleaving of two threads carving blocks.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::cell::UnsafeCell;
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes before each block: its size.
pub const HEADER: usize = 16;

/// `N` bytes handed out in order, never reused.
pub struct BumpArena<const N: usize> {
    bytes: UnsafeCell<[u8; N]>,
    /// Offset of the first free byte.
    next: AtomicUsize,
}

// SAFETY: `alloc` gives each caller bytes no other caller gets (the
// compare-and-swap of `next` below), and the arena never touches a block's
// bytes after handing it out: sharing the arena shares no bytes.
unsafe impl<const N: usize> Sync for BumpArena<N> {}

impl<const N: usize> BumpArena<N> {
    /// An empty arena, in a `static` if wanted.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        BumpArena {
            bytes: UnsafeCell::new([0; N]),
            next: AtomicUsize::new(0),
        }
    }

    /// An empty arena (loom's atomics cannot be made in a `const fn`).
    #[cfg(loom)]
    pub fn new() -> Self {
        BumpArena {
            bytes: UnsafeCell::new([0; N]),
            next: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> usize {
        self.bytes.get() as usize
    }

    /// Whether `ptr` points into the arena.
    pub fn owns(&self, ptr: *const u8) -> bool {
        (self.base()..self.base() + N).contains(&(ptr as usize))
    }

    /// `size` zeroed bytes (at least one) aligned to `align` (a power of
    /// two; at least 16), or `None` if they do not fit.
    pub fn alloc(&self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let align = align.max(HEADER);
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let start = (self.base() + cur + HEADER)
                .checked_next_multiple_of(align)?
                .checked_sub(self.base())?;
            let end = start.checked_add(size.max(1)).filter(|&e| e <= N)?;
            match self
                .next
                .compare_exchange(cur, end, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    let p = (self.base() + start) as *mut u8;
                    // SAFETY: `start - HEADER .. end` lies in the arena and is
                    // this caller's alone (the exchange above moved `next`
                    // past it); the header is 8-aligned (`start` is 16-aligned).
                    unsafe { (p.sub(HEADER) as *mut usize).write(size) };
                    return NonNull::new(p);
                }
                Err(now) => cur = now,
            }
        }
    }

    /// The size a block was asked with.
    ///
    /// # Safety
    /// `ptr` is a block of this arena (from [`BumpArena::alloc`]).
    pub unsafe fn size_of(&self, ptr: *const u8) -> usize {
        // SAFETY: `alloc` wrote the size in the header before the block.
        unsafe { (ptr.sub(HEADER) as *const usize).read() }
    }

    /// Bytes carved out so far (headers and padding included).
    pub fn used(&self) -> usize {
        self.next.load(Ordering::Acquire)
    }
}

impl<const N: usize> Default for BumpArena<N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn blocks_are_aligned_zeroed_sized_and_apart() {
        let arena = Box::new(BumpArena::<4096>::new());
        let a = arena.alloc(40, 16).unwrap().as_ptr();
        let b = arena.alloc(10, 256).unwrap().as_ptr();
        assert!(arena.owns(a) && arena.owns(b));
        assert_eq!(a as usize % 16, 0);
        assert_eq!(b as usize % 256, 0);
        // SAFETY: blocks of the arena.
        unsafe {
            assert_eq!(arena.size_of(a), 40);
            assert_eq!(arena.size_of(b), 10);
            assert!(std::slice::from_raw_parts(a, 40).iter().all(|&x| x == 0));
        }
        assert!(a as usize + 40 <= b as usize - HEADER);
        assert!(!arena.owns(&*Box::new(0u8)));
    }

    #[test]
    fn a_full_arena_answers_none_and_still_serves_what_fits() {
        let arena = Box::new(BumpArena::<4096>::new());
        assert!(arena.alloc(2048, 16).is_some());
        assert!(arena.alloc(2048, 16).is_none());
        assert!(arena.alloc(64, 16).is_some());
        // An alignment past the address space is refused, not wrapped.
        assert!(arena.alloc(16, 1 << 63).is_none());
        assert!(arena.used() <= 4096);
    }

    /// Eight threads carve 16-byte-to-1-KiB blocks until the arena is
    /// full: no two blocks (headers included) overlap, every header holds
    /// its block's size, and the arena is used up to what was handed out.
    #[test]
    fn threads_carving_at_once_never_share_a_byte() {
        const N: usize = 256 << 10;
        let arena = Arc::new(BumpArena::<N>::default());
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let arena = Arc::clone(&arena);
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    let mut i = 0usize;
                    while let Some(p) = arena.alloc(16 + (i * 37 + t * 101) % 1009, 16 << (i % 3)) {
                        // SAFETY: a block of the arena, of this size.
                        let size = unsafe { arena.size_of(p.as_ptr()) };
                        // SAFETY: the block's bytes are this thread's.
                        unsafe { std::ptr::write_bytes(p.as_ptr(), t as u8 + 1, size) };
                        mine.push((p.as_ptr() as usize, size));
                        i += 1;
                    }
                    mine
                })
            })
            .collect();
        let mut all: Vec<(usize, usize)> = Vec::new();
        for (t, h) in handles.into_iter().enumerate() {
            for (p, size) in h.join().unwrap() {
                // SAFETY: a live block of the arena, written by thread `t`.
                let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
                assert!(
                    bytes.iter().all(|&b| b == t as u8 + 1),
                    "thread {t}'s block"
                );
                // SAFETY: as above.
                assert_eq!(unsafe { arena.size_of(p as *const u8) }, size);
                all.push((p - HEADER, p + size));
            }
        }
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(w[0].1 <= w[1].0, "blocks overlap: {:?} {:?}", w[0], w[1]);
        }
        assert!(all.len() > 200, "{}", all.len());
        assert!(arena.used() > N - 2048);
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use loom::sync::Arc;

    /// Two threads carve two blocks each (64 and 48 bytes) from a 256-byte
    /// arena, room for some but not all: in every interleaving the blocks
    /// handed out lie in the arena, no two overlap (headers included) and
    /// each header holds its size.
    #[test]
    fn loom_model() {
        loom::model(|| {
            let arena = Arc::new(BumpArena::<256>::new());
            let worker = |arena: Arc<BumpArena<256>>, size: usize| {
                move || {
                    (0..2)
                        .filter_map(|_| arena.alloc(size, 16))
                        .map(|p| p.as_ptr() as usize)
                        .collect::<Vec<_>>()
                }
            };
            let other = loom::thread::spawn(worker(Arc::clone(&arena), 48));
            let mut got = worker(Arc::clone(&arena), 64)();
            got.extend(other.join().unwrap());
            let mut spans: Vec<(usize, usize)> = got
                .iter()
                // SAFETY: blocks of the arena.
                .map(|&p| (p - HEADER, p + unsafe { arena.size_of(p as *const u8) }))
                .collect();
            spans.sort_unstable();
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0);
            }
            assert!(spans
                .iter()
                .all(|&(a, b)| arena.owns(a as *const u8) && b <= arena.base() + 256));
            assert!(spans.len() >= 2 && spans.len() <= 4);
        });
    }
}
