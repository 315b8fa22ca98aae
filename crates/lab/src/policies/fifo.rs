//! FIFO: pages leave in the order they came in; hits change nothing.
//! (The runtime's own order, without its workingset activation and
//! write-tracking reprieves.)

use super::LazyQueue;
use crate::policy::Policy;
use crate::workload::Workload;

#[derive(Default)]
pub struct Fifo {
    queue: LazyQueue,
}

impl Policy for Fifo {
    fn name(&self) -> String {
        "fifo".into()
    }

    fn prepare(&mut self, w: &Workload) {
        self.queue.reset(w.pages);
    }

    fn insert(&mut self, page: u32, _write: bool, _now: usize) {
        self.queue.push(page);
    }

    fn hit(&mut self, _page: u32, _write: bool, _now: usize) {}

    fn victim(&mut self) -> Option<u32> {
        self.queue.pop()
    }

    fn remove(&mut self, page: u32) {
        self.queue.remove(page);
    }
}
