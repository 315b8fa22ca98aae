//! Page corpora for tests and benchmarks: pages of real process memory plus
//! synthetic classes, in labelled groups.
//!
//! * [`Corpus::synthetic`]: `zero`, `text`, `pointers` (pointer-heavy heap
//!   words), `random` (incompressible) and `mixed` pages.
//! * [`Corpus::capture`]: resident anonymous pages of a running process,
//!   read through `/proc/PID/maps`, `/proc/PID/pagemap` and `/proc/PID/mem`
//!   (needs ptrace access to the process: same user or root).
//! * [`Corpus::sample`]: the synthetic classes plus the captured sample
//!   shipped in `crates/compress/corpus/sample.corpus.zst`.
//!
//! File format (zstd-compressed): `UZCORP01`, then groups of
//! `[label len: u8][label][page count: u32 LE][pages × 4096 bytes]`.

use crate::PAGE_SIZE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::fs::File;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const MAGIC: &[u8; 8] = b"UZCORP01";
const SAMPLE: &[u8] = include_bytes!("../corpus/sample.corpus.zst");

/// Errors reading, writing or capturing a corpus.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
    #[error("not a uzswap page corpus: {0}")]
    Format(String),
    #[error("cannot read process {pid}'s memory ({source}); run as the same user or root, with ptrace allowed")]
    Access { pid: u32, source: io::Error },
    #[error("process {0} has no resident anonymous pages")]
    Empty(u32),
}

fn io_err(path: &str) -> impl FnOnce(io::Error) -> CorpusError + '_ {
    move |source| CorpusError::Io {
        path: path.to_string(),
        source,
    }
}

/// Pages with one label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageGroup {
    pub label: String,
    data: Vec<u8>,
}

impl PageGroup {
    /// A group from whole pages; a partial page at the end is dropped.
    pub fn new(label: impl Into<String>, mut data: Vec<u8>) -> Self {
        data.truncate(data.len() / PAGE_SIZE * PAGE_SIZE);
        Self {
            label: label.into(),
            data,
        }
    }

    pub fn pages(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.data.chunks_exact(PAGE_SIZE)
    }

    pub fn len(&self) -> usize {
        self.data.len() / PAGE_SIZE
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// Labelled groups of pages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Corpus {
    pub groups: Vec<PageGroup>,
}

impl Corpus {
    /// `pages` pages of each synthetic class.
    pub fn synthetic(pages: usize, seed: u64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut gen = |label: &str, f: fn(&mut SmallRng, &mut [u8])| {
            let mut data = vec![0u8; pages * PAGE_SIZE];
            for page in data.chunks_exact_mut(PAGE_SIZE) {
                f(&mut rng, page);
            }
            PageGroup::new(label, data)
        };
        Self {
            groups: vec![
                gen("zero", |_, _| {}),
                gen("text", fill_text),
                gen("pointers", fill_pointers),
                gen("random", |rng, p| rng.fill(p)),
                gen("mixed", fill_mixed),
            ],
        }
    }

    /// One synthetic page of class `label` (`zero`, `text`, `pointers`,
    /// `random`, `mixed`), or `None` for an unknown class.
    pub fn synthetic_page(label: &str, seed: u64) -> Option<Vec<u8>> {
        Self::synthetic(1, seed)
            .group(label)
            .and_then(|g| g.pages().next())
            .map(<[u8]>::to_vec)
    }

    /// The synthetic classes (16 pages each) plus the shipped captured sample.
    pub fn sample() -> Result<Self, CorpusError> {
        let mut c = Self::synthetic(16, 1);
        c.groups.extend(Self::from_bytes(SAMPLE)?.groups);
        Ok(c)
    }

    /// All pages of all groups.
    pub fn pages(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.groups.iter().flat_map(PageGroup::pages)
    }

    pub fn page_count(&self) -> usize {
        self.groups.iter().map(PageGroup::len).sum()
    }

    /// The group called `label`.
    pub fn group(&self, label: &str) -> Option<&PageGroup> {
        self.groups.iter().find(|g| g.label == label)
    }

    /// The corpus file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, CorpusError> {
        let mut raw = MAGIC.to_vec();
        for g in &self.groups {
            let label = g.label.as_bytes();
            let len = u8::try_from(label.len())
                .map_err(|_| CorpusError::Format(format!("label {:?} too long", g.label)))?;
            raw.push(len);
            raw.extend_from_slice(label);
            raw.extend_from_slice(&(g.len() as u32).to_le_bytes());
            raw.extend_from_slice(&g.data);
        }
        zstd::bulk::compress(&raw, 19).map_err(io_err("corpus"))
    }

    /// Parses a corpus file's bytes; damaged input is an error.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CorpusError> {
        let mut raw = Vec::new();
        zstd::stream::read::Decoder::new(bytes)
            .and_then(|mut d| d.read_to_end(&mut raw))
            .map_err(|e| CorpusError::Format(format!("zstd: {e}")))?;
        let rest = raw
            .strip_prefix(MAGIC)
            .ok_or_else(|| CorpusError::Format("bad magic".into()))?;
        let mut groups = Vec::new();
        let mut rest = rest;
        while let Some((&len, tail)) = rest.split_first() {
            let short = || CorpusError::Format("truncated group".into());
            let (label, tail) = tail.split_at_checked(len as usize).ok_or_else(short)?;
            let (count, tail) = tail.split_at_checked(4).ok_or_else(short)?;
            let count = u32::from_le_bytes(count.try_into().expect("4 bytes")) as usize;
            let bytes = count.checked_mul(PAGE_SIZE).ok_or_else(short)?;
            let (data, tail) = tail.split_at_checked(bytes).ok_or_else(short)?;
            let label = String::from_utf8(label.to_vec())
                .map_err(|_| CorpusError::Format("label not UTF-8".into()))?;
            groups.push(PageGroup::new(label, data.to_vec()));
            rest = tail;
        }
        Ok(Self { groups })
    }

    pub fn save(&self, path: &Path) -> Result<(), CorpusError> {
        let name = path.display().to_string();
        let bytes = self.to_bytes()?;
        File::create(path)
            .and_then(|mut f| f.write_all(&bytes))
            .map_err(io_err(&name))
    }

    pub fn load(path: &Path) -> Result<Self, CorpusError> {
        let name = path.display().to_string();
        Self::from_bytes(&std::fs::read(path).map_err(io_err(&name))?)
    }

    /// Up to `max_pages` resident anonymous pages of process `pid`, spread
    /// evenly over all of them, as one group labelled `label`.
    pub fn capture(pid: u32, max_pages: usize, label: &str) -> Result<PageGroup, CorpusError> {
        let access = |source| CorpusError::Access { pid, source };
        let maps = File::open(format!("/proc/{pid}/maps")).map_err(access)?;
        let pagemap = File::open(format!("/proc/{pid}/pagemap")).map_err(access)?;
        let mem = File::open(format!("/proc/{pid}/mem")).map_err(access)?;
        let mut resident = Vec::new();
        for line in io::BufReader::new(maps).lines() {
            let line = line.map_err(access)?;
            if let Some((start, end)) = anonymous_rw_range(&line) {
                resident.extend(resident_pages(&pagemap, start, end));
            }
        }
        if resident.is_empty() {
            return Err(CorpusError::Empty(pid));
        }
        let step = resident.len().div_ceil(max_pages.max(1));
        let mut data = Vec::new();
        let mut page = vec![0u8; PAGE_SIZE];
        for &addr in resident.iter().step_by(step) {
            // Pages can vanish while we read; skip those.
            if mem.read_exact_at(&mut page, addr).is_ok() {
                data.extend_from_slice(&page);
            }
        }
        if data.is_empty() {
            let denied = mem
                .read_exact_at(&mut page, resident[0])
                .expect_err("no page could be read");
            return Err(access(denied));
        }
        Ok(PageGroup::new(label, data))
    }
}

/// `(start, end)` of a private, writable, anonymous mapping line of
/// `/proc/PID/maps` (heap, stack and unnamed or `[anon:…]` regions).
fn anonymous_rw_range(line: &str) -> Option<(u64, u64)> {
    let mut f = line.split_whitespace();
    let range = f.next()?;
    let perms = f.next()?;
    let (_offset, _dev, inode) = (f.next()?, f.next()?, f.next()?);
    let path = f.next().unwrap_or("");
    let anon = inode == "0"
        && (path.is_empty() || path == "[heap]" || path == "[stack]" || path.starts_with("[anon"));
    if !perms.starts_with("rw") || !perms.ends_with('p') || !anon {
        return None;
    }
    let (s, e) = range.split_once('-')?;
    Some((
        u64::from_str_radix(s, 16).ok()?,
        u64::from_str_radix(e, 16).ok()?,
    ))
}

/// Addresses in `[start, end)` whose pagemap entry says present (bit 63).
fn resident_pages(pagemap: &File, start: u64, end: u64) -> Vec<u64> {
    let npages = ((end - start) / PAGE_SIZE as u64) as usize;
    let mut entries = vec![0u8; npages * 8];
    if pagemap
        .read_exact_at(&mut entries, start / PAGE_SIZE as u64 * 8)
        .is_err()
    {
        return Vec::new();
    }
    entries
        .chunks_exact(8)
        .enumerate()
        .filter(|(_, e)| u64::from_le_bytes((*e).try_into().expect("8 bytes")) & (1 << 63) != 0)
        .map(|(i, _)| start + (i * PAGE_SIZE) as u64)
        .collect()
}

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "page",
    "memory",
    "swap",
    "compressed",
    "kernel",
    "process",
    "value",
    "return",
    "error",
    "struct",
    "int",
    "static",
    "void",
    "if",
    "else",
    "for",
    "while",
    "buffer",
    "size",
    "count",
    "index",
    "data",
    "pool",
    "class",
    "object",
    "handle",
    "free",
    "alloc",
    "zswap",
    "writeback",
    "folio",
    "entry",
    "offset",
];

fn fill_text(rng: &mut SmallRng, page: &mut [u8]) {
    let mut pos = 0;
    while pos < page.len() {
        let word = WORDS[rng.gen_range(0..WORDS.len())].as_bytes();
        let sep: &[u8] = if rng.gen_ratio(1, 12) { b"\n" } else { b" " };
        for &b in word.iter().chain(sep) {
            if pos == page.len() {
                return;
            }
            page[pos] = b;
            pos += 1;
        }
    }
}

fn fill_pointers(rng: &mut SmallRng, page: &mut [u8]) {
    let heap_base: u64 = 0x0000_7f3a_5c00_0000;
    for word in page.chunks_exact_mut(8) {
        let v = match rng.gen_range(0..20) {
            0..=11 => heap_base + (rng.gen_range(0..1u64 << 22) << 4),
            12..=16 => rng.gen_range(0..4096),
            _ => 0,
        };
        word.copy_from_slice(&v.to_le_bytes());
    }
}

fn fill_mixed(rng: &mut SmallRng, page: &mut [u8]) {
    for chunk in page.chunks_exact_mut(512) {
        match rng.gen_range(0..4) {
            0 => {}
            1 => fill_text(rng, chunk),
            2 => fill_pointers(rng, chunk),
            _ => rng.fill(chunk),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_classes_have_the_shape_they_claim() {
        let c = Corpus::synthetic(4, 9);
        assert_eq!(c.groups.len(), 5);
        assert!(c
            .group("zero")
            .unwrap()
            .pages()
            .all(|p| p.iter().all(|&b| b == 0)));
        assert!(c.group("text").unwrap().pages().all(|p| p
            .iter()
            .all(|b| b.is_ascii_lowercase() || b" \n".contains(b))));
        let random = c.group("random").unwrap();
        assert!(random
            .pages()
            .all(|p| p.iter().filter(|&&b| b == 0).count() < 64));
        assert_eq!(c.page_count(), 20);
    }

    #[test]
    fn single_synthetic_pages_by_class() {
        assert_eq!(
            Corpus::synthetic_page("zero", 1),
            Some(vec![0u8; PAGE_SIZE])
        );
        assert_ne!(
            Corpus::synthetic_page("text", 1),
            Corpus::synthetic_page("text", 2)
        );
        assert_eq!(Corpus::synthetic_page("nope", 1), None);
    }

    #[test]
    fn corpus_files_round_trip_and_damage_is_an_error() {
        let c = Corpus::synthetic(2, 3);
        let bytes = c.to_bytes().unwrap();
        assert_eq!(Corpus::from_bytes(&bytes).unwrap(), c);
        assert!(matches!(
            Corpus::from_bytes(b"not zstd"),
            Err(CorpusError::Format(_))
        ));
        let raw = zstd::bulk::compress(b"UZCORP01\x04zero\x05\x00\x00\x00short", 1).unwrap();
        assert!(matches!(
            Corpus::from_bytes(&raw),
            Err(CorpusError::Format(_))
        ));
    }

    #[test]
    fn capture_reads_this_process() {
        // resident, anonymous; black_box keeps release builds from eliding it
        let marker = std::hint::black_box(vec![0x5au8; 64 * PAGE_SIZE]);
        let g = Corpus::capture(std::process::id(), 100_000, "self").unwrap();
        assert!(g.len() > 16);
        assert!(
            g.pages().any(|p| p.iter().all(|&b| b == 0x5a)),
            "the marker pages were captured"
        );
        drop(marker);
    }

    #[test]
    fn capture_of_a_missing_process_is_a_clear_error() {
        let err = Corpus::capture(u32::MAX - 1, 10, "x").unwrap_err();
        assert!(matches!(err, CorpusError::Access { .. }), "{err}");
    }

    #[test]
    fn maps_lines_are_classified() {
        assert_eq!(
            anonymous_rw_range("7f00-7f10 rw-p 00000000 00:00 0 "),
            Some((0x7f00, 0x7f10))
        );
        assert_eq!(
            anonymous_rw_range("5000-6000 rw-p 00000000 00:00 0   [heap]"),
            Some((0x5000, 0x6000))
        );
        assert_eq!(
            anonymous_rw_range("5000-6000 r--p 00000000 08:01 1234 /usr/lib/libc.so"),
            None
        );
        assert_eq!(
            anonymous_rw_range("5000-6000 rw-s 00000000 00:01 77 /dev/zero"),
            None
        );
    }
}
