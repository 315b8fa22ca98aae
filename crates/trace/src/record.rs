//! One record: an [`Event`] and its time, as three little-endian words.
//!
//! * word 0: a page-aligned address (or, for [`Event::Limit`], a page
//!   count shifted by 12) with the event's kind in bits 0–3 and its flags
//!   in bits 4–11;
//! * word 1: `CLOCK_MONOTONIC` nanoseconds;
//! * word 2: two 32-bit fields whose meaning depends on the kind.

/// Bytes of one encoded record.
pub const RECORD_BYTES: usize = 24;

const KIND_MASK: u64 = 0xf;
const WRITE_FLAG: u64 = 1 << 4;
const FIRST_TOUCH_FLAG: u64 = 1 << 5;
const KEPT_CLEAN_FLAG: u64 = 1 << 6;
const ADDR_MASK: u64 = !0xfff;
/// An evicted run's page counts: 11 bits each (a run is at most 512 pages).
const COUNT_MASK: u64 = 0x7ff;

/// What paging saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A region of `pages` untouched pages at `addr` is paged from now on.
    Map { addr: u64, pages: u32 },
    /// The region at `addr` now has `pages` pages (grown or shrunk in
    /// place).
    Resize { addr: u64, pages: u32 },
    /// The region at `addr` is released: its pages are no longer paged.
    Unmap { addr: u64 },
    /// The program discarded `pages` pages at `addr` (`MADV_DONTNEED`):
    /// they read as zeros, untouched again.
    Discard { addr: u64, pages: u32 },
    /// A missing fault at page `addr` (a `first_touch` of an untouched
    /// page, or a swap-in), by thread `tid`, served in `service_ns`. Also
    /// the pages of a pinned system-call buffer faulted in for the kernel.
    /// `kept_clean`: the swap-in left its page clean (read from the swap
    /// file, its slot kept).
    Fault {
        addr: u64,
        write: bool,
        first_touch: bool,
        kept_clean: bool,
        tid: u32,
        service_ns: u32,
    },
    /// A write-protect fault at page `addr` (write tracking, or a write to
    /// a clean page).
    WpFault {
        addr: u64,
        tid: u32,
        service_ns: u32,
    },
    /// A run of `pages` pages (at most 2047) at `addr` evicted: `zero` of them zero-filled,
    /// `disk` written to the swap file, the rest compressed into
    /// `compressed_bytes` in the pool. A run of clean pages (their copy
    /// still on the swap file) has `disk == pages` and no bytes.
    Evict {
        addr: u64,
        pages: u16,
        zero: u16,
        disk: u16,
        /// Below 2 GiB.
        compressed_bytes: u32,
    },
    /// The limit in force is now `pages` pages.
    Limit { pages: u64 },
    /// This process is a forked child of `parent` (its first record).
    Forked { parent: u32 },
    /// `count` records were dropped before this one (the queue was full).
    Lost { count: u32 },
    /// Where the pages from `addr` on went, eight to a record, following
    /// their run's [`Event::Evict`]: [`SIZE_ZERO`], [`SIZE_ON_FILE`], a
    /// compressed length in the pool, or [`SIZE_NONE`] past the run's end.
    /// Carries no time (its record's time reads 0).
    Sizes { addr: u64, sizes: [u16; 8] },
    /// An aging pass write-protected the resident pages (write tracking):
    /// a write to one of them is a [`Event::WpFault`] from now on.
    Aged,
    /// This process is paged from outside (a statically linked program:
    /// the out-of-process pager, not the runtime, recorded it). Its first
    /// record.
    PagedFromOutside,
}

/// [`Event::Sizes`]: a zero-filled page (nothing stored but a bit).
pub const SIZE_ZERO: u16 = 0;
/// [`Event::Sizes`]: a page that went to the swap file.
pub const SIZE_ON_FILE: u16 = u16::MAX;
/// [`Event::Sizes`]: past the end of the run.
pub const SIZE_NONE: u16 = u16::MAX - 1;

fn pack4(s: &[u16]) -> u64 {
    s.iter().rev().fold(0, |w, &x| w << 16 | u64::from(x))
}

fn unpack4(w: u64, out: &mut [u16]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = (w >> (16 * i)) as u16;
    }
}

/// An event and when it happened (`CLOCK_MONOTONIC` nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub time_ns: u64,
    pub event: Event,
}

/// A record that does not decode: an unknown kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown record kind {kind} (word {word:#x})")]
pub struct BadRecord {
    pub kind: u8,
    pub word: u64,
}

fn pair(a: u32, b: u32) -> u64 {
    u64::from(a) | u64::from(b) << 32
}

fn halves(w: u64) -> (u32, u32) {
    (w as u32, (w >> 32) as u32)
}

impl Record {
    /// The three words of the record.
    pub fn encode(&self) -> [u64; 3] {
        let (w0, w2) = match self.event {
            Event::Map { addr, pages } => (addr | 1, pair(pages, 0)),
            Event::Resize { addr, pages } => (addr | 2, pair(pages, 0)),
            Event::Unmap { addr } => (addr | 3, 0),
            Event::Discard { addr, pages } => (addr | 4, pair(pages, 0)),
            Event::Fault {
                addr,
                write,
                first_touch,
                kept_clean,
                tid,
                service_ns,
            } => {
                let flags = if write { WRITE_FLAG } else { 0 }
                    | if first_touch { FIRST_TOUCH_FLAG } else { 0 }
                    | if kept_clean { KEPT_CLEAN_FLAG } else { 0 };
                (addr | 5 | flags, pair(tid, service_ns))
            }
            Event::WpFault {
                addr,
                tid,
                service_ns,
            } => (addr | 6 | WRITE_FLAG, pair(tid, service_ns)),
            Event::Evict {
                addr,
                pages,
                zero,
                disk,
                compressed_bytes,
            } => {
                let count = |n: u16| u64::from(n) & COUNT_MASK;
                let w2 = count(pages)
                    | count(zero) << 11
                    | count(disk) << 22
                    | u64::from(compressed_bytes.min(i32::MAX as u32)) << 33;
                (addr | 7, w2)
            }
            Event::Limit { pages } => (pages << 12 | 8, 0),
            Event::Forked { parent } => (9, pair(parent, 0)),
            Event::Lost { count } => (10, pair(count, 0)),
            Event::Aged => (12, 0),
            Event::PagedFromOutside => (13, 0),
            Event::Sizes { addr, sizes } => {
                return [addr | 11, pack4(&sizes[..4]), pack4(&sizes[4..])];
            }
        };
        [w0, self.time_ns, w2]
    }

    /// The record the three words hold.
    pub fn decode(w: [u64; 3]) -> Result<Record, BadRecord> {
        let addr = w[0] & ADDR_MASK;
        let write = w[0] & WRITE_FLAG != 0;
        let (a, b) = halves(w[2]);
        let event = match w[0] & KIND_MASK {
            1 => Event::Map { addr, pages: a },
            2 => Event::Resize { addr, pages: a },
            3 => Event::Unmap { addr },
            4 => Event::Discard { addr, pages: a },
            5 => Event::Fault {
                addr,
                write,
                first_touch: w[0] & FIRST_TOUCH_FLAG != 0,
                kept_clean: w[0] & KEPT_CLEAN_FLAG != 0,
                tid: a,
                service_ns: b,
            },
            6 => Event::WpFault {
                addr,
                tid: a,
                service_ns: b,
            },
            7 => Event::Evict {
                addr,
                pages: (w[2] & COUNT_MASK) as u16,
                zero: (w[2] >> 11 & COUNT_MASK) as u16,
                disk: (w[2] >> 22 & COUNT_MASK) as u16,
                compressed_bytes: (w[2] >> 33) as u32,
            },
            8 => Event::Limit { pages: w[0] >> 12 },
            9 => Event::Forked { parent: a },
            10 => Event::Lost { count: a },
            12 => Event::Aged,
            13 => Event::PagedFromOutside,
            11 => {
                let mut sizes = [0u16; 8];
                unpack4(w[1], &mut sizes[..4]);
                unpack4(w[2], &mut sizes[4..]);
                return Ok(Record {
                    time_ns: 0,
                    event: Event::Sizes { addr, sizes },
                });
            }
            kind => {
                return Err(BadRecord {
                    kind: kind as u8,
                    word: w[0],
                })
            }
        };
        Ok(Record {
            time_ns: w[1],
            event,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event() -> impl Strategy<Value = Event> {
        let addr = (0u64..1 << 35).prop_map(|p| p << 12);
        let count = 0u16..2048;
        prop_oneof![
            (addr.clone(), any::<u32>()).prop_map(|(addr, pages)| Event::Map { addr, pages }),
            (addr.clone(), any::<u32>()).prop_map(|(addr, pages)| Event::Resize { addr, pages }),
            addr.clone().prop_map(|addr| Event::Unmap { addr }),
            (addr.clone(), any::<u32>()).prop_map(|(addr, pages)| Event::Discard { addr, pages }),
            (
                addr.clone(),
                any::<(bool, bool, bool)>(),
                any::<u32>(),
                any::<u32>()
            )
                .prop_map(
                    |(addr, (write, first_touch, kept_clean), tid, service_ns)| {
                        Event::Fault {
                            addr,
                            write,
                            first_touch,
                            kept_clean,
                            tid,
                            service_ns,
                        }
                    }
                ),
            (addr.clone(), any::<u32>(), any::<u32>()).prop_map(|(addr, tid, service_ns)| {
                Event::WpFault {
                    addr,
                    tid,
                    service_ns,
                }
            }),
            (
                addr,
                count.clone(),
                count.clone(),
                count,
                0u32..i32::MAX as u32
            )
                .prop_map(|(addr, pages, zero, disk, compressed_bytes)| Event::Evict {
                    addr,
                    pages,
                    zero,
                    disk,
                    compressed_bytes,
                }),
            (0u64..1 << 50).prop_map(|pages| Event::Limit { pages }),
            any::<u32>().prop_map(|parent| Event::Forked { parent }),
            any::<u32>().prop_map(|count| Event::Lost { count }),
            Just(Event::Aged),
            Just(Event::PagedFromOutside),
            ((0u64..1 << 35).prop_map(|p| p << 12), any::<[u16; 8]>())
                .prop_map(|(addr, sizes)| Event::Sizes { addr, sizes }),
        ]
    }

    proptest! {
        #[test]
        fn every_event_decodes_to_itself(event in event(), time_ns in any::<u64>()) {
            // Sizes records carry no time.
            let time_ns = if matches!(event, Event::Sizes { .. }) { 0 } else { time_ns };
            let r = Record { time_ns, event };
            prop_assert_eq!(Record::decode(r.encode()), Ok(r));
        }
    }

    #[test]
    fn an_unknown_kind_is_an_error() {
        let e = Record::decode([0x1000 | 0xf, 0, 0]).unwrap_err();
        assert_eq!(e.kind, 0xf);
    }
}
