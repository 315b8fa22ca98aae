//! One zspage: a chain of 1..=8 pages cut into equal objects, and the
//! per-class bookkeeping that groups zspages by fullness.
//!
//! Object metadata is kept out of band: `objs[i]` is either
//! `OBJ_ALLOCATED | slot` (the owning handle slot, which migration needs to
//! find the handle from the object, like the kernel's in-object handle word)
//! or the index of the next free object. Nothing is stored inside the pages,
//! so a caller's bytes can never corrupt the allocator.

use crate::class::{ClassSpec, PAGE_SIZE};

const OBJ_ALLOCATED: u32 = 1 << 31;
const FREE_END: u32 = u32::MAX >> 1;

/// Fullness groups as in the kernel: 0 (empty), 10%, 20% … 99%, 100%.
pub(crate) const NR_FULLNESS_GROUPS: usize = 12;
pub(crate) const GROUP_EMPTY: usize = 0;
pub(crate) const GROUP_FULL: usize = NR_FULLNESS_GROUPS - 1;

/// Group of a zspage with `inuse` of `capacity` objects in use.
pub(crate) fn fullness_group(inuse: usize, capacity: usize) -> usize {
    if inuse == 0 {
        GROUP_EMPTY
    } else if inuse == capacity {
        GROUP_FULL
    } else {
        inuse * 100 / capacity / 10 + 1
    }
}

/// Where an object's bytes are: page `page` of the chain, at `offset`, of
/// which `first_len` bytes lie in that page and the rest in the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ObjSpan {
    pub(crate) page: usize,
    pub(crate) offset: usize,
    pub(crate) first_len: usize,
}

pub(crate) fn obj_span(obj_idx: usize, size: usize) -> ObjSpan {
    let start = obj_idx * size;
    let offset = start % PAGE_SIZE;
    ObjSpan {
        page: start / PAGE_SIZE,
        offset,
        first_len: size.min(PAGE_SIZE - offset),
    }
}

#[derive(Debug)]
pub(crate) struct ZsPage {
    pub(crate) pages: Vec<u32>,
    objs: Box<[u32]>,
    free_head: u32,
    pub(crate) inuse: usize,
    pub(crate) group: usize,
    pub(crate) group_pos: usize,
}

impl ZsPage {
    pub(crate) fn new(pages: Vec<u32>, spec: &ClassSpec) -> Self {
        let n = spec.objs_per_zspage as u32;
        let objs = (0..n)
            .map(|i| if i + 1 < n { i + 1 } else { FREE_END })
            .collect();
        Self {
            pages,
            objs,
            free_head: 0,
            inuse: 0,
            group: GROUP_EMPTY,
            group_pos: 0,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.objs.len()
    }

    pub(crate) fn is_full(&self) -> bool {
        self.free_head == FREE_END
    }

    /// Takes a free object for handle slot `slot`; `None` when full.
    pub(crate) fn alloc_obj(&mut self, slot: u32) -> Option<usize> {
        if self.is_full() {
            return None;
        }
        let idx = self.free_head as usize;
        self.free_head = self.objs[idx];
        self.objs[idx] = OBJ_ALLOCATED | slot;
        self.inuse += 1;
        Some(idx)
    }

    /// The handle slot owning object `idx`, if it is allocated.
    pub(crate) fn owner(&self, idx: usize) -> Option<u32> {
        let v = *self.objs.get(idx)?;
        (v & OBJ_ALLOCATED != 0).then_some(v & !OBJ_ALLOCATED)
    }

    /// Frees object `idx` if slot `slot` owns it; false otherwise.
    pub(crate) fn free_obj(&mut self, idx: usize, slot: u32) -> bool {
        if self.owner(idx) != Some(slot) {
            return false;
        }
        self.objs[idx] = self.free_head;
        self.free_head = idx as u32;
        self.inuse -= 1;
        true
    }

    /// Indices of allocated objects.
    pub(crate) fn allocated(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.objs.len()).filter(|&i| self.objs[i] & OBJ_ALLOCATED != 0)
    }

    /// The pfn holding the first byte of object `idx`.
    pub(crate) fn obj_pfn(&self, idx: usize, size: usize) -> u32 {
        self.pages[obj_span(idx, size).page]
    }

    /// The pfn after `pfn` in the chain.
    pub(crate) fn next_pfn(&self, page: usize) -> Option<u32> {
        self.pages.get(page + 1).copied()
    }

    pub(crate) fn metadata_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.objs.len() * 4 + self.pages.capacity() * 4
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::class::ClassTable;

    #[test]
    fn fullness_groups_match_kernel_ratios() {
        assert_eq!(fullness_group(0, 100), 0);
        assert_eq!(fullness_group(1, 100), 1);
        assert_eq!(fullness_group(9, 100), 1);
        assert_eq!(fullness_group(10, 100), 2);
        assert_eq!(fullness_group(99, 100), 10);
        assert_eq!(fullness_group(100, 100), 11);
        assert_eq!(fullness_group(1, 2), 6);
    }

    #[test]
    fn spans_straddle_page_boundaries() {
        // 3 x 1360 B = 4080: object 3 starts 16 B before the page end.
        let s = obj_span(3, 1360);
        assert_eq!(
            s,
            ObjSpan {
                page: 0,
                offset: 4080,
                first_len: 16
            }
        );
        let s = obj_span(4, 1360);
        assert_eq!(
            s,
            ObjSpan {
                page: 1,
                offset: 1344,
                first_len: 1360
            }
        );
    }

    #[test]
    fn free_list_hands_out_every_object_once() {
        let t = ClassTable::build();
        let spec = *t.for_size(100);
        let mut z = ZsPage::new(vec![0; spec.pages_per_zspage], &spec);
        let mut seen = std::collections::HashSet::new();
        for s in 0..spec.objs_per_zspage as u32 {
            assert!(seen.insert(z.alloc_obj(s).unwrap()));
        }
        assert!(z.is_full() && z.alloc_obj(0).is_none());
        assert!(!z.free_obj(0, 12345), "wrong owner must not free");
        let owner = z.owner(5).unwrap();
        assert!(z.free_obj(5, owner));
        assert!(!z.free_obj(5, owner), "double free refused");
        assert_eq!(z.alloc_obj(7), Some(5));
        assert_eq!(z.allocated().count(), spec.objs_per_zspage);
    }
}
