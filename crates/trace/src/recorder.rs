//! The recorder: a bounded lock-free queue that fault handlers push to,
//! drained into the trace file by a runtime thread.

use crate::record::{Event, Record, RECORD_BYTES};
use crate::samples::Sampler;
use crossbeam_queue::ArrayQueue;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Magic word opening every chunk.
pub(crate) const CHUNK_MAGIC: u64 = u64::from_le_bytes(*b"UZTRACE1");

/// Bytes of a chunk's header: magic, pid and record count, payload length.
pub(crate) const CHUNK_HEADER_BYTES: usize = 24;

/// Records the queue holds between two drains: at the runtime's 20 ms
/// drain period, 3 million records a second.
const QUEUE_RECORDS: usize = 1 << 16;

/// `CLOCK_MONOTONIC` in nanoseconds (the vDSO: async-signal-safe).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a timespec of ours.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A process's recorder: pushes from any thread (a signal handler
/// included), drains by one thread at a time.
pub struct Recorder {
    queue: ArrayQueue<[u64; 3]>,
    /// Records dropped on a full queue, and how many of them a chunk has
    /// reported so far.
    lost: AtomicU64,
    path: PathBuf,
    pid: u32,
    drain: Mutex<Drain>,
    /// Page contents sampled by the evictor ([`Recorder::sample_run`]).
    sampler: Mutex<Sampler>,
}

struct Drain {
    file: File,
    reported_lost: u64,
    words: Vec<[u64; 3]>,
    /// The first write error: recording stops there, the program goes on.
    failed: bool,
}

impl Recorder {
    /// Opens `path` for appending (creating it) for process `pid`, whose
    /// evicted pages are compressed with `compressor` (its name, as
    /// `compress::Algorithm` prints it).
    pub fn open(path: &Path, pid: u32, compressor: &str) -> std::io::Result<Recorder> {
        // 0600 where it is made: it holds samples of the program's memory.
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)?;
        Ok(Recorder {
            queue: ArrayQueue::new(QUEUE_RECORDS),
            lost: AtomicU64::new(0),
            path: path.to_path_buf(),
            pid,
            drain: Mutex::new(Drain {
                file,
                reported_lost: 0,
                words: Vec::with_capacity(QUEUE_RECORDS + 1),
                failed: false,
            }),
            sampler: Mutex::new(Sampler::new(compressor)),
        })
    }

    /// Queues an evicted run of `sizes.len()` pages at `addr`: its
    /// [`Event::Evict`] (`zero` zero pages, `disk` sent to the swap file,
    /// `compressed_bytes` in the pool), then its pages' lengths as
    /// [`Event::Sizes`] records. Never blocks or allocates.
    pub fn push_evicted(
        &self,
        addr: u64,
        zero: usize,
        disk: usize,
        compressed_bytes: usize,
        sizes: &[u16],
    ) {
        let count = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        self.push(Event::Evict {
            addr,
            pages: count(sizes.len()),
            zero: count(zero),
            disk: count(disk),
            compressed_bytes: u32::try_from(compressed_bytes).unwrap_or(u32::MAX),
        });
        for (i, eight) in sizes.chunks(8).enumerate() {
            let mut s = [crate::record::SIZE_NONE; 8];
            s[..eight.len()].copy_from_slice(eight);
            self.push_at(
                0,
                Event::Sizes {
                    addr: addr + (i * 8 * crate::samples::SAMPLE_PAGE) as u64,
                    sizes: s,
                },
            );
        }
    }

    /// Offers a run the pool stored, with each page's compressed length
    /// (as [`Event::Sizes`] gives them): a few of its pages are kept as
    /// samples (`samples.rs`), written once a chunk's worth is taken. For
    /// the evictor only: it may lock, allocate and write.
    pub fn sample_run(&self, addr: u64, pages: &[&[u8]], sizes: &[u16]) -> std::io::Result<()> {
        let full = self
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .offer(addr, pages, sizes);
        if full {
            self.write_samples()?;
        }
        Ok(())
    }

    /// At exit: the queued records and the pending samples.
    pub fn flush(&self) -> std::io::Result<usize> {
        let n = self.drain()?;
        self.write_samples()?;
        Ok(n)
    }

    /// Writes the pending samples as one chunk.
    fn write_samples(&self) -> std::io::Result<()> {
        let chunk = self
            .sampler
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take_chunk(self.pid)?;
        let Some(chunk) = chunk else {
            return Ok(());
        };
        let mut d = self.drain.lock().unwrap_or_else(PoisonError::into_inner);
        if d.failed {
            return Ok(());
        }
        d.write(&chunk)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues `event`, timed now.
    pub fn push(&self, event: Event) {
        self.push_at(now_ns(), event);
    }

    /// Queues `event` at `time_ns`. Never blocks or allocates: a full
    /// queue drops the record and counts it.
    pub fn push_at(&self, time_ns: u64, event: Event) {
        let words = Record { time_ns, event }.encode();
        if self.queue.push(words).is_err() {
            self.lost.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The queue is a quarter full: time to drain, where a drainer is
    /// busy with other work.
    pub fn filling(&self) -> bool {
        self.queue.len() > self.queue.capacity() / 4
    }

    /// Records dropped so far.
    pub fn lost(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// Writes what is queued as one chunk; returns the records written.
    /// After a write error nothing more is written (the error is returned
    /// once).
    pub fn drain(&self) -> std::io::Result<usize> {
        let mut d = self.drain.lock().unwrap_or_else(PoisonError::into_inner);
        if d.failed {
            // Keep the queue from filling with what will never be written.
            while self.queue.pop().is_some() {}
            return Ok(0);
        }
        d.words.clear();
        let lost = self.lost.load(Ordering::Relaxed);
        if lost > d.reported_lost {
            let count = u32::try_from(lost - d.reported_lost).unwrap_or(u32::MAX);
            d.words.push(
                Record {
                    time_ns: now_ns(),
                    event: Event::Lost { count },
                }
                .encode(),
            );
            d.reported_lost = lost;
        }
        // At most a queue's worth: pushers that keep up never hold the
        // drain here for ever.
        for _ in 0..QUEUE_RECORDS {
            match self.queue.pop() {
                Some(w) => d.words.push(w),
                None => break,
            }
        }
        if d.words.is_empty() {
            return Ok(0);
        }
        let chunk = encode_chunk(self.pid, &d.words)?;
        let n = d.words.len();
        d.write(&chunk)?;
        Ok(n)
    }
}

impl Drain {
    /// Writes `chunk` with one `write(2)` (`O_APPEND` keeps other
    /// processes' chunks out of it); an error stops all later writes.
    fn write(&mut self, chunk: &[u8]) -> std::io::Result<()> {
        let r = self.file.write_all(chunk);
        self.failed |= r.is_err();
        r
    }
}

/// A chunk: header and the zstd frame of `records`.
fn encode_chunk(pid: u32, records: &[[u64; 3]]) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::with_capacity(records.len() * RECORD_BYTES);
    for w in records {
        for word in w {
            raw.extend_from_slice(&word.to_le_bytes());
        }
    }
    frame(CHUNK_MAGIC, pid, records.len(), &raw)
}

/// A chunk of either kind: its 24-byte header (`magic`, the writer's `pid`
/// and item `count`, the payload's length) and `raw` as one zstd frame.
pub(crate) fn frame(magic: u64, pid: u32, count: usize, raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let payload = zstd::bulk::compress(raw, 1)?;
    let mut chunk = Vec::with_capacity(CHUNK_HEADER_BYTES + payload.len());
    chunk.extend_from_slice(&magic.to_le_bytes());
    chunk.extend_from_slice(&(u64::from(pid) | (count as u64) << 32).to_le_bytes());
    chunk.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    chunk.extend_from_slice(&payload);
    Ok(chunk)
}
