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

    /// Whether every page of `[start, end)` is mapped (present, or in the
    /// kernel's own swap) and write-protected.
    pub(crate) fn all_protected(&self, start: usize, end: usize) -> std::io::Result<bool> {
        let mut vec = [PageRegion::default(); 16];
        let mut from = start as u64;
        while from < end as u64 {
            let mut arg = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                start: from,
                end: end as u64,
                vec: vec.as_mut_ptr() as u64,
                vec_len: vec.len() as u64,
                return_mask: PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
                ..PmScanArg::default()
            };
            // SAFETY: as in `written`.
            let n = unsafe { libc::ioctl(self.file.as_raw_fd(), PAGEMAP_SCAN, &mut arg) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let regions = &vec[..n as usize];
            // Pages with no category at all (not mapped) are left out of
            // the answer: the regions must cover the range without a gap.
            let mut at = from;
            for r in regions {
                let mapped = r.categories & (PAGE_IS_PRESENT | PAGE_IS_SWAPPED) != 0;
                if r.start != at || !mapped || r.categories & PAGE_IS_WRITTEN != 0 {
                    return Ok(false);
                }
                at = r.end;
            }
            if arg.walk_end <= from || at != arg.walk_end {
                return Ok(at >= end as u64);
            }
            from = arg.walk_end;
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
        let mut from = start as u64;
        while from < end as u64 {
            let mut arg = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                start: from,
                end: end as u64,
                vec: vec.as_mut_ptr() as u64,
                vec_len: vec.len() as u64,
                category_mask: PAGE_IS_WRITTEN | PAGE_IS_PRESENT,
                return_mask: PAGE_IS_WRITTEN | PAGE_IS_PRESENT,
                ..PmScanArg::default()
            };
            // SAFETY: PAGEMAP_SCAN reads `arg` and writes at most `vec_len`
            // page_region entries into `vec`, which outlives the call.
            let n = unsafe { libc::ioctl(self.file.as_raw_fd(), PAGEMAP_SCAN, &mut arg) };
            if n < 0 {
                return Err(std::io::Error::last_os_error());
            }
            out.extend(
                vec[..n as usize]
                    .iter()
                    .map(|r| (r.start as usize, r.end as usize)),
            );
            if arg.walk_end <= from {
                break;
            }
            from = arg.walk_end;
        }
        Ok(())
    }
}
