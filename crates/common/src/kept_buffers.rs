//! Byte buffers kept for the next call instead of freed: the swap store
//! copies a folio out, and the swap file encrypts one, at each eviction
//! (in a faulting thread's signal handler), where allocating and freeing
//! 64 KiB each time cost more than the copy. At most `max_kept` buffers
//! are kept, each of at most `max_bytes` capacity (a larger one, a 2 MiB
//! folio's, is freed).

use crate::sync::Mutex;

/// A bounded stack of byte buffers for reuse.
pub struct KeptBuffers {
    kept: Mutex<Vec<Vec<u8>>>,
    max_kept: usize,
    max_bytes: usize,
}

impl KeptBuffers {
    /// Keeps at most `max_kept` buffers of at most `max_bytes` each.
    pub const fn new(max_kept: usize, max_bytes: usize) -> Self {
        Self {
            kept: Mutex::new(Vec::new()),
            max_kept,
            max_bytes,
        }
    }

    /// The bounds of a store's per-eviction folio copies: one buffer per
    /// thread that stores at once (8), of at most 32 pages (a default
    /// folio's twice over, a writeback batch's), so at most 1 MiB kept.
    pub const fn for_folio_copies() -> Self {
        Self::new(8, 32 * crate::PAGE_SIZE)
    }

    /// A kept buffer (its old contents still there), or a new empty one.
    pub fn take(&self) -> Vec<u8> {
        self.kept.lock().pop().unwrap_or_default()
    }

    /// Gives `buffer` back for a later [`KeptBuffers::take`], unless it is
    /// too large or enough are kept.
    pub fn give(&self, buffer: Vec<u8>) {
        if buffer.capacity() > self.max_bytes {
            return;
        }
        let mut kept = self.kept.lock();
        if kept.len() < self.max_kept {
            kept.push(buffer);
        }
    }
}

impl std::fmt::Debug for KeptBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptBuffers")
            .field("max_kept", &self.max_kept)
            .field("max_bytes", &self.max_bytes)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_up_to_the_count_and_the_size() {
        let kept = KeptBuffers::new(2, 64);
        let a = Vec::with_capacity(64);
        let (pa, big) = (a.as_ptr(), Vec::<u8>::with_capacity(65));
        kept.give(big);
        assert_eq!(kept.take().capacity(), 0, "a buffer over the size is freed");
        kept.give(a);
        kept.give(Vec::with_capacity(8));
        kept.give(Vec::with_capacity(16));
        assert_eq!(kept.take().capacity(), 8, "the third buffer was not kept");
        let back = kept.take();
        assert_eq!(back.as_ptr(), pa, "the first buffer back");
        assert_eq!(kept.take().capacity(), 0, "none left");
    }
}
