//! Reference policies: the [`Policy`] trait a reclaim order implements,
//! and [`simulate`], which pages a workload under one.
//!
//! A reference policy pages textbook-style: page by page, on demand (a
//! miss brings its page alone), evicting one page at a time as soon as the
//! charge passes the limit. Its accesses are the trace's: misses of the
//! recorded run (faults) and its write-protect faults, the only accesses a
//! userfaultfd pager sees. The runtime's own protocol replays apart
//! (`protocol.rs`), with its folios, batches and watermarks.
//!
//! ## Writing a policy
//!
//! One file in `policies/` with a type implementing [`Policy`] (see
//! `policies/fifo.rs`, 50 lines), and one line in
//! [`crate::policies::by_name`]. The simulator calls `insert` when a page
//! comes in, `hit` when a resident page is accessed, `victim` when the
//! charge is over the limit, `remove` when a page leaves otherwise (its
//! region unmapped, the program's discard). Page ids are dense: a policy
//! can keep `Vec`s indexed by them (`Policy::prepare` gets the workload,
//! with `pages` and, for an offline policy, every future step).

use crate::pool::{PoolError, PoolModel};
use crate::workload::{Step, Workload};
use crate::{Limit, Outcome};

/// A reclaim order.
pub trait Policy {
    /// Its name in tables and `--policy`.
    fn name(&self) -> String;
    /// Called once before the replay.
    fn prepare(&mut self, _w: &Workload) {}
    /// Page `page` came in (a miss) at step `now`.
    fn insert(&mut self, page: u32, write: bool, now: usize);
    /// Resident page `page` was accessed at step `now`.
    fn hit(&mut self, page: u32, write: bool, now: usize);
    /// The next page to evict (one the policy holds), or `None` if it
    /// holds none.
    fn victim(&mut self) -> Option<u32>;
    /// Page `page` leaves without eviction (unmapped, discarded).
    fn remove(&mut self, page: u32);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Untouched,
    Resident,
    Stored,
}

/// Pages `w` under `policy` at `limit`; the pool is charged to the limit
/// if `charge_pool`.
pub fn simulate(
    w: &Workload,
    limit: Limit,
    charge_pool: bool,
    policy: &mut dyn Policy,
) -> Result<Outcome, PoolError> {
    let started = std::time::Instant::now();
    policy.prepare(w);
    let mut out = Outcome::new(policy.name(), limit);
    let mut pool = PoolModel::new(w)?;
    let mut place = vec![Place::Untouched; w.pages];
    let mut resident = 0usize;
    let mut cap = limit.initial(w);
    for (now, step) in w.steps.iter().enumerate() {
        match step {
            Step::Access(a) => {
                out.accesses += 1;
                let id = a.id as usize;
                match place[id] {
                    Place::Resident => policy.hit(a.id, a.write, now),
                    p => {
                        if p == Place::Stored {
                            out.swapin_faults += 1;
                            out.pages_in += 1;
                            pool.free(a.id)?;
                        } else {
                            out.first_touches += 1;
                        }
                        place[id] = Place::Resident;
                        resident += 1;
                        policy.insert(a.id, a.write, now);
                    }
                }
            }
            Step::Resize { forget, .. }
            | Step::Unmap { forget, .. }
            | Step::Discard { forget, .. } => {
                for &id in forget {
                    match place[id as usize] {
                        Place::Resident => {
                            policy.remove(id);
                            resident -= 1;
                        }
                        Place::Stored => pool.free(id)?,
                        Place::Untouched => {}
                    }
                    place[id as usize] = Place::Untouched;
                }
            }
            Step::Limit(pages) => cap = limit.follow(cap, *pages),
            Step::Map { .. } | Step::Aged { .. } => {}
        }
        let charged = |resident: usize, pool: &PoolModel| {
            resident + if charge_pool { pool.charged_pages() } else { 0 }
        };
        let cap_pages = usize::try_from(cap).unwrap_or(usize::MAX);
        while resident > 0 && charged(resident, &pool) > cap_pages {
            let Some(v) = policy.victim() else { break };
            debug_assert!(place[v as usize] == Place::Resident, "victim not resident");
            place[v as usize] = Place::Stored;
            resident -= 1;
            out.evicted_pages += 1;
            pool.store(w, v)?;
        }
        out.peak_charged_pages = out.peak_charged_pages.max(charged(resident, &pool));
    }
    out.finish_pool(&pool);
    out.seconds = started.elapsed().as_secs_f64();
    Ok(out)
}
