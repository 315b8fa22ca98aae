//! Belady's optimum (MIN): the page whose next access is farthest away
//! leaves first. Offline (it reads the future from the workload); on the
//! same accesses and limit, no demand-paging policy takes fewer misses,
//! so it bounds every row of a replay's table.

use crate::policy::Policy;
use crate::workload::{Step, Workload};
use std::collections::{BinaryHeap, HashMap};

/// No further access.
const NEVER: usize = usize::MAX;

#[derive(Default)]
pub struct Opt {
    /// For each step that is an access, the step of the next access to
    /// the same page (before the page is forgotten), or [`NEVER`].
    next_use: Vec<usize>,
    /// Each held page's next access; `None` if not held.
    due: Vec<Option<usize>>,
    /// Held pages by next access, farthest first (stale entries skipped).
    heap: BinaryHeap<(usize, u32)>,
}

impl Opt {
    fn hold(&mut self, page: u32, now: usize) {
        let due = self.next_use[now];
        self.due[page as usize] = Some(due);
        self.heap.push((due, page));
    }
}

impl Policy for Opt {
    fn name(&self) -> String {
        "opt".into()
    }

    fn prepare(&mut self, w: &Workload) {
        self.next_use = vec![NEVER; w.steps.len()];
        self.due = vec![None; w.pages];
        self.heap.clear();
        // Backwards: the next access of each page seen so far; a page
        // forgotten (unmapped, discarded) has no next access before it.
        let mut upcoming: HashMap<u32, usize> = HashMap::new();
        for (i, step) in w.steps.iter().enumerate().rev() {
            match step {
                Step::Access(a) => {
                    self.next_use[i] = upcoming.get(&a.id).copied().unwrap_or(NEVER);
                    upcoming.insert(a.id, i);
                }
                Step::Resize { forget, .. }
                | Step::Unmap { forget, .. }
                | Step::Discard { forget, .. } => {
                    for id in forget {
                        upcoming.remove(id);
                    }
                }
                _ => {}
            }
        }
    }

    fn insert(&mut self, page: u32, _write: bool, now: usize) {
        self.hold(page, now);
    }

    fn hit(&mut self, page: u32, _write: bool, now: usize) {
        self.hold(page, now);
    }

    fn victim(&mut self) -> Option<u32> {
        while let Some((due, page)) = self.heap.pop() {
            if self.due[page as usize] == Some(due) {
                self.due[page as usize] = None;
                return Some(page);
            }
        }
        None
    }

    fn remove(&mut self, page: u32) {
        self.due[page as usize] = None;
    }
}
