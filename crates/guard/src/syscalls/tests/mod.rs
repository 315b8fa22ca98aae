//! Tests of the table: the decoding of each family (`families`), and the
//! table as a whole against the kernel's prototypes and the filter's rule
//! (`coverage`).

use super::*;
use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};

mod coverage;
mod families;

/// Memory at `base..base+bytes.len()`; anything else is unreadable.
struct FakeMem {
    base: usize,
    bytes: Vec<u8>,
}

impl FakeMem {
    fn new(base: usize, len: usize) -> Self {
        FakeMem {
            base,
            bytes: vec![0; len],
        }
    }
    fn put_u64(&mut self, addr: usize, v: u64) {
        let o = addr - self.base;
        self.bytes[o..o + 8].copy_from_slice(&v.to_ne_bytes());
    }
    fn put_u32(&mut self, addr: usize, v: u32) {
        let o = addr - self.base;
        self.bytes[o..o + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn get(&self, addr: usize, n: usize) -> Option<&[u8]> {
        let o = addr.checked_sub(self.base)?;
        self.bytes.get(o..o.checked_add(n)?)
    }
}

impl UserMem for FakeMem {
    fn read_u64(&self, addr: usize) -> Option<u64> {
        Some(u64::from_ne_bytes(self.get(addr, 8)?.try_into().ok()?))
    }
    fn read_u32(&self, addr: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(self.get(addr, 4)?.try_into().ok()?))
    }
    fn read_u8(&self, addr: usize) -> Option<u8> {
        Some(self.get(addr, 1)?[0])
    }
}

fn bufs(nr: i64, args: [u64; 6], mem: &dyn UserMem) -> (Vec<Buffer>, Coverage) {
    let mut out = Vec::new();
    let c = for_each_buffer(nr, &args, mem, &mut |b| out.push(b));
    (out, c)
}

fn none() -> FakeMem {
    FakeMem::new(0x1000, 0)
}

fn range(addr: usize, len: usize, access: Access) -> Buffer {
    Buffer::Range { addr, len, access }
}

fn path(addr: usize) -> Buffer {
    Buffer::CStr {
        addr,
        max: PATH_MAX,
    }
}

const B: usize = 0x7f00_0000_0000;
