//! Size classes, computed the way mm/zsmalloc.c computes them for 4 KiB pages.
//!
//! * Class `i` holds objects of `ZS_MIN_ALLOC_SIZE + i * ZS_SIZE_CLASS_DELTA`
//!   bytes (32, 48, 64, …, 4096): 255 classes.
//! * A zspage of class `i` chains `pages_per_zspage` pages (1..=8), chosen to
//!   waste the smallest fraction of the zspage; objects straddle page ends.
//! * Neighbouring classes with the same `(pages_per_zspage, objs_per_zspage)`
//!   are merged into the larger one, which is what the handle encodes.
//! * A class with one object in a one-page zspage is *huge* (stored raw).

/// Bytes in one backing page: [`common::PAGE_SIZE`], re-exported.
pub use common::PAGE_SIZE;
/// Smallest object the pool stores; smaller requests round up to it.
pub const ZS_MIN_ALLOC_SIZE: usize = 32;
/// Largest object the pool stores (one page).
pub const ZS_MAX_ALLOC_SIZE: usize = PAGE_SIZE;
/// Step between consecutive size classes (`PAGE_SIZE >> CLASS_BITS`).
pub const ZS_SIZE_CLASS_DELTA: usize = PAGE_SIZE >> 8;
/// Number of size-class indices (before merging).
pub const ZS_SIZE_CLASSES: usize =
    (ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) + 1;
/// Longest zspage chain (`CONFIG_ZSMALLOC_CHAIN_SIZE`).
pub const ZS_MAX_PAGES_PER_ZSPAGE: usize = 8;
/// Most objects one zspage can hold (smallest class, longest chain).
pub const ZS_MAX_OBJS_PER_ZSPAGE: usize = ZS_MAX_PAGES_PER_ZSPAGE * PAGE_SIZE / ZS_MIN_ALLOC_SIZE;

/// Shape of one (possibly merged) size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassSpec {
    /// The index encoded in object locations (the largest merged index).
    pub index: usize,
    /// Object size in bytes.
    pub size: usize,
    /// Pages chained into one zspage.
    pub pages_per_zspage: usize,
    /// Objects one zspage holds.
    pub objs_per_zspage: usize,
}

impl ClassSpec {
    /// True for the class whose zspages hold a single page-sized object.
    pub fn is_huge(&self) -> bool {
        self.pages_per_zspage == 1 && self.objs_per_zspage == 1
    }
}

/// Size of the class with unmerged index `index`.
pub fn class_size(index: usize) -> usize {
    (ZS_MIN_ALLOC_SIZE + index * ZS_SIZE_CLASS_DELTA).min(ZS_MAX_ALLOC_SIZE)
}

/// Unmerged class index for an allocation of `size` bytes (`size <= PAGE_SIZE`).
pub fn size_to_index(size: usize) -> usize {
    let idx = size
        .saturating_sub(ZS_MIN_ALLOC_SIZE)
        .div_ceil(ZS_SIZE_CLASS_DELTA);
    idx.min(ZS_SIZE_CLASSES - 1)
}

/// Pages per zspage for objects of `size`: the chain length (1..=8) with
/// the highest used percentage; the shortest wins a tie.
pub fn pages_per_zspage(size: usize) -> usize {
    let mut best = (0usize, 1usize);
    for pages in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let zspage = pages * PAGE_SIZE;
        let used_pct = (zspage - zspage % size) * 100 / zspage;
        if used_pct > best.0 {
            best = (used_pct, pages);
        }
    }
    best.1
}

/// The class table: `map[i]` is the merged class serving unmerged index `i`,
/// as an index into `specs` (ordered by ascending size).
#[derive(Debug, Clone)]
pub struct ClassTable {
    pub specs: Vec<ClassSpec>,
    pub map: Vec<usize>,
}

impl ClassTable {
    /// Builds the 4 KiB-page table, merging from the largest class down.
    pub fn build() -> Self {
        let mut desc: Vec<ClassSpec> = Vec::new();
        let mut map_desc = vec![0usize; ZS_SIZE_CLASSES];
        for index in (0..ZS_SIZE_CLASSES).rev() {
            let size = class_size(index);
            let ppz = pages_per_zspage(size);
            let opz = ppz * PAGE_SIZE / size;
            let mergeable = desc
                .last()
                .is_some_and(|prev| prev.pages_per_zspage == ppz && prev.objs_per_zspage == opz);
            if !mergeable {
                desc.push(ClassSpec {
                    index,
                    size,
                    pages_per_zspage: ppz,
                    objs_per_zspage: opz,
                });
            }
            map_desc[index] = desc.len() - 1;
        }
        let n = desc.len();
        let specs: Vec<ClassSpec> = desc.into_iter().rev().collect();
        let map = map_desc.into_iter().map(|d| n - 1 - d).collect();
        Self { specs, map }
    }

    /// The merged class that serves allocations of `size` bytes.
    pub fn for_size(&self, size: usize) -> &ClassSpec {
        &self.specs[self.map[size_to_index(size)]]
    }

    /// Position in `specs` of the class whose encoded index is `index`.
    pub fn position_of_index(&self, index: usize) -> Option<usize> {
        let pos = *self.map.get(index)?;
        (self.specs[pos].index == index).then_some(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_match_the_kernel_for_4k_pages() {
        assert_eq!(ZS_SIZE_CLASS_DELTA, 16);
        assert_eq!(ZS_SIZE_CLASSES, 255);
        assert_eq!(class_size(0), 32);
        assert_eq!(class_size(254), 4096);
        assert_eq!(ZS_MAX_OBJS_PER_ZSPAGE, 1024);
    }

    #[test]
    fn size_to_index_rounds_up() {
        assert_eq!(size_to_index(1), 0);
        assert_eq!(size_to_index(32), 0);
        assert_eq!(size_to_index(33), 1);
        assert_eq!(size_to_index(48), 1);
        assert_eq!(size_to_index(4096), 254);
    }

    #[test]
    fn pages_per_zspage_picks_least_waste() {
        // 32 B divides a page: one page, no waste.
        assert_eq!(pages_per_zspage(32), 1);
        // 3264 B: 1 page wastes 20%, 5 pages hold 6 objects wasting 4.4%.
        // Check against a brute-force search over the same rule.
        for size in (32..=4096).step_by(16) {
            let best = (1..=8)
                .max_by_key(|&p| {
                    let z = p * PAGE_SIZE;
                    // Higher used% wins; on a tie the shorter chain wins.
                    ((z - z % size) * 100 / z, std::cmp::Reverse(p))
                })
                .unwrap();
            assert_eq!(pages_per_zspage(size), best, "size {size}");
        }
        assert_eq!(pages_per_zspage(4096), 1);
    }

    #[test]
    fn merged_classes_share_shape_and_cover_every_index() {
        let t = ClassTable::build();
        assert!(t.specs.len() < ZS_SIZE_CLASSES, "some classes merge");
        for index in 0..ZS_SIZE_CLASSES {
            let spec = &t.specs[t.map[index]];
            assert!(
                spec.size >= class_size(index),
                "class too small for {index}"
            );
            assert_eq!(spec.pages_per_zspage, pages_per_zspage(class_size(index)));
            let opz = spec.pages_per_zspage * PAGE_SIZE / class_size(index);
            assert_eq!(spec.objs_per_zspage, opz);
            assert_eq!(t.position_of_index(spec.index), Some(t.map[index]));
        }
        for w in t.specs.windows(2) {
            assert!(w[0].size < w[1].size);
            let same = w[0].pages_per_zspage == w[1].pages_per_zspage
                && w[0].objs_per_zspage == w[1].objs_per_zspage;
            assert!(!same, "adjacent classes {w:?} should have merged");
        }
        let huge = t.for_size(4096);
        assert!(huge.is_huge());
        assert!(!t.for_size(3000).is_huge());
    }
}
