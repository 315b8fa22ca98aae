//! `PAGEMAP_SCAN` (Linux 6.7+) on `/proc/self/pagemap`: which pages of a
//! range are mapped and were written since they were last write-protected
//! (their userfaultfd write-protect bit is clear). One ioctl answers for a
//! whole region, as ranges.

use common::PAGE_SIZE;
use std::fs::File;
use std::os::fd::AsRawFd;

const PAGE_IS_WRITTEN: u64 = 1 << 1;
const PAGE_IS_PRESENT: u64 = 1 << 3;
const PAGE_IS_SWAPPED: u64 = 1 << 4;
/// `_IOWR('f', 16, struct pm_scan_arg)`.
const PAGEMAP_SCAN: libc::c_ulong = 0xc060_6610;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}

#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// This process's pagemap, opened for `PAGEMAP_SCAN`.
pub(crate) struct PagemapScan {
    file: File,
}

impl PagemapScan {
    /// Opens `/proc/self/pagemap` and checks that the kernel knows
    /// `PAGEMAP_SCAN`; `None` where it does not.
    pub(crate) fn open() -> Option<Self> {
        let scan = Self {
            file: File::open("/proc/self/pagemap").ok()?,
        };
        // Probe on a page that is surely mapped: the one holding `scan`.
        let page = &scan as *const Self as usize & !(PAGE_SIZE - 1);
        let mut out = Vec::new();
        scan.written(page, page + PAGE_SIZE, &mut out).ok()?;
        Some(scan)
    }

    /// One `PAGEMAP_SCAN` of `[from, end)`: the regions it found (those of
    /// `category_mask`, with their `return_mask` categories) fill the front
    /// of `vec`; returns how many, and where the walk ended.
    fn scan(
        &self,
        from: u64,
        end: u64,
        vec: &mut [PageRegion],
        category_mask: u64,
        return_mask: u64,
    ) -> std::io::Result<(usize, u64)> {
        let mut arg = PmScanArg {
            size: std::mem::size_of::<PmScanArg>() as u64,
            start: from,
            end,
            vec: vec.as_mut_ptr() as u64,
            vec_len: vec.len() as u64,
            category_mask,
            return_mask,
            ..PmScanArg::default()
        };
        // SAFETY: PAGEMAP_SCAN reads `arg` and writes at most `vec_len`
        // page_region entries into `vec`, which outlives the call.
        let n = unsafe { libc::ioctl(self.file.as_raw_fd(), PAGEMAP_SCAN, &mut arg) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((n as usize, arg.walk_end))
    }

    /// Whether every page of `[start, end)` is mapped (present, or in the
    /// kernel's own swap) and write-protected.
    pub(crate) fn all_protected(&self, start: usize, end: usize) -> std::io::Result<bool> {
        let mut vec = [PageRegion::default(); 16];
        let (mut from, end) = (start as u64, end as u64);
        let mask = PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
        while from < end {
            // Every page matches (no category mask); pages not mapped come
            // back with no category, or are left out: the regions must
            // cover the range without a gap.
            let (n, walk_end) = self.scan(from, end, &mut vec, 0, mask)?;
            let mut at = from;
            for r in &vec[..n] {
                let mapped = r.categories & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED) != 0;
                if r.start != at || !mapped || r.categories & PAGE_IS_WRITTEN != 0 {
                    return Ok(false);
                }
                at = r.end;
            }
            if walk_end <= from || at != walk_end {
                return Ok(at >= end);
            }
            from = walk_end;
        }
        Ok(true)
    }

    /// Appends to `out` the `[start, end)` ranges of `[start, end)` that are
    /// mapped and not write-protected.
    pub(crate) fn written(
        &self,
        start: usize,
        end: usize,
        out: &mut Vec<(usize, usize)>,
    ) -> std::io::Result<()> {
        let mut vec = [PageRegion::default(); 256];
        let (mut from, end) = (start as u64, end as u64);
        let mask = PAGE_IS_WRITTEN | PAGE_IS_PRESENT;
        while from < end {
            let (n, walk_end) = self.scan(from, end, &mut vec, mask, mask)?;
            out.extend(vec[..n].iter().map(|r| (r.start as usize, r.end as usize)));
            if walk_end <= from {
                break;
            }
            from = walk_end;
        }
        Ok(())
    }
}
