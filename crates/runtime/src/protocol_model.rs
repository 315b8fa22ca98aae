//! Exhaustive model check of the evict-vs-fault protocol (see lib.rs).
//!
//! The kernel side is modelled as the protocol relies on it: a page is
//! mapped or not and write-protected or not; an access to an unmapped page
//! queues a missing event and blocks; a write to a protected page blocks
//! until un-protect wakes it; `UFFDIO_COPY`/`ZEROPAGE` on a mapped page
//! fail (EEXIST). One page, a writer, a reader, an evictor running two
//! eviction cycles and the fault handler: every interleaving is explored,
//! checking that no write is lost, every read sees a value that was
//! written, no zeros are ever installed over data, and everyone finishes.
//!
//! Write tracking is in the model too: an ager write-protects the mapped
//! page at any moment (twice), a write to it queues a write-protect event,
//! and the handler, holding the state lock, removes the protection and wakes
//! the writer unless the page is `Evicting` (whose evictor will).
//!
//! The model follows the runtime's order of steps; [`Order::PublishFirst`]
//! is the order an earlier version had (publish `Swapped`, then unmap), and
//! [`Order::UnprotectUnlocked`] resolves write-protect faults after dropping
//! the state lock; the checker must find the page each of them loses.

use std::collections::{HashSet, VecDeque};

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum St {
    Resident,
    Evicting,
    Loading,
    Swapped,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Order {
    /// The runtime's order: unmap, un-protect, then publish `Swapped`.
    UnmapFirst,
    /// Publish `Swapped` before unmapping (the earlier, wrong order).
    PublishFirst,
    /// The runtime's order, but a write-protect fault is resolved after the
    /// state lock is dropped (wrong: it can un-protect an eviction's copy).
    UnprotectUnlocked,
}

/// Event codes: the accessor, plus this bit for a write-protect fault.
const WP_EVENT: u8 = 0x10;

const INITIAL: u8 = 1;
const WRITTEN: u8 = 2;

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
struct World {
    mapped: Option<u8>,
    wp: bool,
    stored: Option<u8>,
    state: St,
    events: VecDeque<u8>, // queued events: who faulted (| WP_EVENT)
    /// Per accessor: 0 = running, 1 = blocked on a missing fault, 2 = on wp.
    blocked: [u8; 2],
    writer_done: bool,
    reader_reads: u8,
    evictor_pc: u8,
    cycles: u8,
    copy: Option<u8>,
    /// Handler: 0 idle; 1 loading (will COPY); 2 will publish Resident;
    /// 3 will un-protect (decided without the lock: the wrong variant).
    handler_pc: u8,
    /// Aging passes done (each write-protects the page if mapped).
    ages: u8,
}

#[derive(Debug)]
pub(crate) enum Violation {
    LostWrite(u8),
    BadRead(u8),
    ZerosOverData,
    Stuck,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::LostWrite(v) => write!(f, "the write was lost: the page ends as {v}"),
            Violation::BadRead(v) => write!(f, "a read saw {v}, a value never written there"),
            Violation::ZerosOverData => write!(f, "zeros were installed over stored data"),
            Violation::Stuck => write!(f, "an accessor is blocked with nothing left to wake it"),
        }
    }
}

fn wake_all(w: &mut World, kind: u8) {
    for b in w.blocked.iter_mut() {
        if *b == kind {
            *b = 0;
        }
    }
}

/// An access by accessor `who`: `Some(v)` to write `v`, `None` to read.
fn access(w: &mut World, who: usize, write: bool) -> Result<bool, Violation> {
    match w.mapped {
        None => {
            w.blocked[who] = 1;
            // A stale event and a fresh one may coexist; more only repeat
            // the same states, so the model keeps at most two per thread.
            if w.events.iter().filter(|&&e| e == who as u8).count() < 2 {
                w.events.push_back(who as u8);
            }
            Ok(false)
        }
        Some(_) if write && w.wp => {
            w.blocked[who] = 2;
            let ev = who as u8 | WP_EVENT;
            if w.events.iter().filter(|&&e| e == ev).count() < 2 {
                w.events.push_back(ev);
            }
            Ok(false)
        }
        Some(v) => {
            if write {
                w.mapped = Some(WRITTEN);
            } else if v != WRITTEN && (v != INITIAL || w.writer_done) {
                // Only values that were written, and the new one once the
                // write has completed.
                return Err(Violation::BadRead(v));
            }
            Ok(true)
        }
    }
}

fn successors(w: &World, order: Order) -> Result<Vec<World>, Violation> {
    let mut out = Vec::new();
    // Writer (accessor 0): one write.
    if !w.writer_done && w.blocked[0] == 0 {
        let mut n = w.clone();
        if access(&mut n, 0, true)? {
            n.writer_done = true;
        }
        out.push(n);
    }
    // Reader (accessor 1): two reads.
    if w.reader_reads < 2 && w.blocked[1] == 0 {
        let mut n = w.clone();
        if access(&mut n, 1, false)? {
            n.reader_reads += 1;
        }
        out.push(n);
    }
    // Evictor.
    if w.cycles < 2 {
        let mut n = w.clone();
        let step = match (w.evictor_pc, order) {
            (0, _) if w.state == St::Resident && w.mapped.is_some() => {
                n.state = St::Evicting;
                true
            }
            (1, _) => {
                n.wp = true;
                true
            }
            (2, _) => {
                n.copy = n.mapped;
                n.stored = n.copy;
                true
            }
            (3, Order::UnmapFirst | Order::UnprotectUnlocked) | (5, Order::PublishFirst) => {
                // The protection goes with the page table entry.
                n.mapped = None;
                n.wp = false;
                true
            }
            (4, Order::UnmapFirst | Order::UnprotectUnlocked) | (3, Order::PublishFirst) => {
                n.wp = false;
                wake_all(&mut n, 2);
                true
            }
            (5, Order::UnmapFirst | Order::UnprotectUnlocked) | (4, Order::PublishFirst) => {
                n.state = St::Swapped;
                true
            }
            _ => false,
        };
        if step {
            n.evictor_pc += 1;
            if n.evictor_pc == 6 {
                n.evictor_pc = 0;
                n.cycles += 1;
            }
            out.push(n);
        }
    }
    // Ager: write-protects the mapped page (UFFDIO_WRITEPROTECT over the
    // region, unlocked); an unmapped page has no entry to protect.
    if w.ages < 2 {
        let mut n = w.clone();
        if n.mapped.is_some() {
            n.wp = true;
        }
        n.ages += 1;
        out.push(n);
    }
    // Fault handler.
    match w.handler_pc {
        0 if w.events.front().is_some_and(|e| e & WP_EVENT != 0) => {
            let mut n = w.clone();
            n.events.pop_front();
            if n.state != St::Evicting {
                if order == Order::UnprotectUnlocked {
                    n.handler_pc = 3;
                } else {
                    n.wp = false;
                    wake_all(&mut n, 2);
                }
            }
            out.push(n);
        }
        3 => {
            let mut n = w.clone();
            n.wp = false;
            wake_all(&mut n, 2);
            n.handler_pc = 0;
            out.push(n);
        }
        0 if !w.events.is_empty() => {
            let mut n = w.clone();
            n.events.pop_front();
            match n.state {
                St::Swapped => {
                    n.state = St::Loading;
                    n.handler_pc = 1;
                }
                St::Resident => {
                    // zero fill: only where nothing is mapped
                    if n.mapped.is_none() {
                        if n.stored.is_some() || n.writer_done {
                            return Err(Violation::ZerosOverData);
                        }
                        n.mapped = Some(0);
                    }
                    wake_all(&mut n, 1);
                }
                St::Evicting | St::Loading => wake_all(&mut n, 1),
            }
            out.push(n);
        }
        1 => {
            let mut n = w.clone();
            if n.mapped.is_none() {
                n.mapped = n.stored; // UFFDIO_COPY
            }
            n.stored = None; // the slot is freed by swap-in
            wake_all(&mut n, 1);
            n.handler_pc = 2;
            out.push(n);
        }
        2 => {
            let mut n = w.clone();
            n.state = St::Resident;
            n.handler_pc = 0;
            out.push(n);
        }
        _ => {}
    }
    Ok(out)
}

/// Explores every interleaving; the first violation found, if any.
pub(crate) fn check(order: Order) -> Result<usize, Violation> {
    let start = World {
        mapped: Some(INITIAL),
        wp: false,
        stored: None,
        state: St::Resident,
        events: VecDeque::new(),
        blocked: [0; 2],
        writer_done: false,
        reader_reads: 0,
        evictor_pc: 0,
        cycles: 0,
        copy: None,
        handler_pc: 0,
        ages: 0,
    };
    let mut seen = HashSet::new();
    let mut stack = vec![start];
    while let Some(w) = stack.pop() {
        if !seen.insert(w.clone()) {
            continue;
        }
        let next = successors(&w, order)?;
        if next.is_empty() {
            // Final: everyone is done, and the write survived.
            let done = w.writer_done && w.reader_reads == 2 && w.events.is_empty();
            if !done {
                // The evictor may simply be waiting for a mapped page; a
                // blocked accessor with nothing left to wake it is stuck.
                return Err(Violation::Stuck);
            }
            let value = w.mapped.or(w.stored);
            if value != Some(WRITTEN) {
                return Err(Violation::LostWrite(value.unwrap_or(0)));
            }
        }
        stack.extend(next);
    }
    Ok(seen.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_order_is_safe_in_every_interleaving() {
        let states = check(Order::UnmapFirst).unwrap_or_else(|v| panic!("violation: {v}"));
        eprintln!("explored {states} states");
        assert!(states > 1000, "explored {states} states");
    }

    #[test]
    fn publishing_swapped_before_unmapping_loses_the_page() {
        let v = check(Order::PublishFirst).expect_err("the checker must catch the old order");
        eprintln!("old order: {v}");
        assert!(
            matches!(
                v,
                Violation::LostWrite(_) | Violation::ZerosOverData | Violation::BadRead(_)
            ),
            "{v:?}"
        );
    }

    #[test]
    fn resolving_write_tracking_faults_outside_the_lock_loses_the_page() {
        let v = check(Order::UnprotectUnlocked)
            .expect_err("the checker must catch the unlocked un-protect");
        eprintln!("unlocked un-protect: {v}");
        assert!(
            matches!(v, Violation::LostWrite(_) | Violation::BadRead(_)),
            "{v:?}"
        );
    }
}
