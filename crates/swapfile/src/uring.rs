//! io_uring page I/O: a batch of page writes goes to the kernel in one
//! submission and is reaped together (writeback batches: the writeback
//! batching that the zswap batching posts propose, docs/seeds.md).

use crate::cache::CacheDrop;
use crate::io::PageIo;
use common::sync::Mutex;
use io_uring::{opcode, types, IoUring};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

/// Ring size: the most operations in flight per submission.
const ENTRIES: u32 = 64;

/// Page I/O through an io_uring instance.
pub struct UringIo {
    file: File,
    ring: Mutex<IoUring>,
    cache: CacheDrop,
}

impl std::fmt::Debug for UringIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringIo")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

enum Op<'a> {
    Read(u64, &'a mut [u8]),
    Write(u64, &'a [u8]),
}

impl UringIo {
    /// Sets up a ring; fails where io_uring is unavailable or disabled.
    pub fn new(file: File) -> io::Result<Self> {
        let cache = CacheDrop::new(file.as_raw_fd());
        Ok(Self {
            file,
            ring: Mutex::new(IoUring::new(ENTRIES)?),
            cache,
        })
    }

    /// Runs `ops`, `ENTRIES` at a time, and returns one result per op.
    fn run(&self, ops: &mut [Op<'_>]) -> Vec<io::Result<()>> {
        let mut results: Vec<io::Result<()>> = Vec::with_capacity(ops.len());
        let fd = types::Fd(self.file.as_raw_fd());
        let mut ring = self.ring.lock();
        for (chunk_no, chunk) in ops.chunks_mut(ENTRIES as usize).enumerate() {
            let base = chunk_no * ENTRIES as usize;
            let mut done: Vec<Option<i32>> = vec![None; chunk.len()];
            {
                let mut sq = ring.submission();
                for (i, op) in chunk.iter_mut().enumerate() {
                    let entry = match op {
                        Op::Read(pos, buf) => {
                            opcode::Read::new(fd, buf.as_mut_ptr(), buf.len() as u32)
                                .offset(*pos)
                                .build()
                        }
                        Op::Write(pos, buf) => {
                            opcode::Write::new(fd, buf.as_ptr(), buf.len() as u32)
                                .offset(*pos)
                                .build()
                        }
                    };
                    // SAFETY: each buffer is borrowed from `ops` for this whole
                    // call, and we wait below for every entry of the chunk to
                    // complete before the borrow ends; the fd outlives the ring.
                    unsafe { sq.push(&entry.user_data(i as u64)) }.expect("chunk fits the ring");
                }
            }
            let mut pending = chunk.len();
            while pending > 0 {
                if let Err(e) = ring.submit_and_wait(1) {
                    if e.kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    // The ring broke: finish this chunk with plain pread/pwrite.
                    for (i, op) in chunk.iter_mut().enumerate() {
                        if done[i].is_none() {
                            done[i] =
                                Some(self.fallback(op).map_or_else(
                                    |e| -e.raw_os_error().unwrap_or(libc::EIO),
                                    |()| 0,
                                ));
                        }
                    }
                    break;
                }
                for cqe in ring.completion() {
                    let i = cqe.user_data() as usize;
                    if done[i].is_none() {
                        done[i] = Some(cqe.result());
                        pending -= 1;
                    }
                }
            }
            for (i, op) in chunk.iter_mut().enumerate() {
                results.push(self.finish(op, done[i].unwrap_or(-libc::EIO), base + i));
            }
        }
        results
    }

    /// Turns a completion into a result; a short transfer is completed
    /// with pread/pwrite.
    fn finish(&self, op: &mut Op<'_>, res: i32, _index: usize) -> io::Result<()> {
        if res < 0 {
            return Err(io::Error::from_raw_os_error(-res));
        }
        let n = res as usize;
        match op {
            Op::Read(pos, buf) if n < buf.len() => {
                self.file.read_exact_at(&mut buf[n..], *pos + n as u64)
            }
            Op::Write(pos, buf) if n < buf.len() => {
                self.file.write_all_at(&buf[n..], *pos + n as u64)
            }
            _ => Ok(()),
        }
    }

    fn fallback(&self, op: &mut Op<'_>) -> io::Result<()> {
        match op {
            Op::Read(pos, buf) => self.file.read_exact_at(buf, *pos),
            Op::Write(pos, buf) => self.file.write_all_at(buf, *pos),
        }
    }
}

impl PageIo for UringIo {
    fn read_at_sync(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, pos)?;
        self.cache.after_read(pos, buf.len());
        Ok(())
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.file.as_raw_fd())
    }

    fn read_at(&self, pos: u64, buf: &mut [u8]) -> io::Result<()> {
        let len = buf.len();
        let read = self
            .run(&mut [Op::Read(pos, buf)])
            .pop()
            .expect("one result per op");
        if read.is_ok() {
            self.cache.after_read(pos, len);
        }
        read
    }

    fn write_at(&self, pos: u64, buf: &[u8]) -> io::Result<()> {
        let written = self
            .run(&mut [Op::Write(pos, buf)])
            .pop()
            .expect("one result per op");
        if written.is_ok() {
            self.cache.after_write(pos, buf.len());
        }
        written
    }

    fn write_batch(&self, writes: &[(u64, &[u8])]) -> Vec<io::Result<()>> {
        let mut ops: Vec<Op<'_>> = writes
            .iter()
            .map(|&(pos, buf)| Op::Write(pos, buf))
            .collect();
        let results = self.run(&mut ops);
        for (&(pos, buf), r) in writes.iter().zip(&results) {
            if r.is_ok() {
                self.cache.after_write(pos, buf.len());
            }
        }
        results
    }

    fn name(&self) -> &'static str {
        "io_uring"
    }
}
