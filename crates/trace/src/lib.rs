//! # trace — what paging sees, recorded (`uzswap run --record FILE`)
//!
//! The design lab (`lab` crate, `uzswap replay`) replays a real program's
//! memory traffic against paging designs without the program. This crate
//! is the trace between the two: its format ([`record`]), the
//! [`Recorder`] a runtime pushes events to, and the [`read`] side.
//!
//! ## What is recorded
//!
//! What a userfaultfd pager sees of a program, nothing more: its regions
//! (mapped, resized, released, discarded by the program), each missing
//! fault and write-protect fault (page, read or write, first touch or
//! not, thread, time, how long serving it took), each evicted run (pages,
//! how many were zero or went to the swap file, compressed bytes of the
//! rest, each page's compressed length), the limit in force when it
//! changes, aging passes, forks (a child's first record names its parent). Accesses to
//! resident pages are not seen and not recorded: a trace recorded under
//! a limit says which pages missed under that limit, which is exact for
//! replaying the policy it ran under at that limit and above (a
//! FIFO-ordered reclaim ignores hits), and a lower bound on traffic below
//! it.
//!
//! A few of the evicted pages' contents are kept too, with their
//! compressed length ([`samples`]): a replay stores them to compare
//! compressors on the program's own data.
//!
//! ## Format
//!
//! A file of **chunks**, each written by one `write(2)` on a descriptor
//! opened `O_APPEND`, so that every process of a run (forked children,
//! exec'd programs) appends to one file without interleaving inside a
//! chunk. A chunk is a 24-byte header — magic `UZTRACE1`, the writer's
//! pid and record count, the payload's length — and a zstd frame of its
//! records, 24 bytes each (three little-endian words, [`record`]). Page
//! samples come in chunks of their own (magic `UZPAGES1`, [`samples`]).
//!
//! ## Invariants
//!
//! 1. [`Recorder::push`] never blocks, allocates, or takes a lock: it runs
//!    in a SIGBUS handler that may have interrupted anything. A full queue
//!    drops the record and counts it; the next chunk carries a
//!    [`Event::Lost`] record with the count, so a reader knows.
//! 2. One process's records appear in its chunks in the order they were
//!    pushed (one queue, one drainer at a time).
//! 3. A forked child records to a queue of its own: a push cut short by
//!    the fork in another thread of the parent cannot stall the child's
//!    drain.

pub mod read;
pub mod record;
mod recorder;
pub mod samples;

pub use read::{read_file, ProcessTrace, TraceError};
pub use record::{Event, Record, SIZE_NONE, SIZE_ON_FILE, SIZE_ZERO};
pub use recorder::{now_ns, Recorder};
pub use samples::PageSample;
