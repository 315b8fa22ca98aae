//! CLOCK (second chance): a hit sets the page's referenced bit; the hand
//! passes over a referenced page once, clearing the bit (zswap's own LRU
//! gives its entries this second chance).

use super::LazyQueue;
use crate::policy::Policy;
use crate::workload::Workload;

#[derive(Default)]
pub struct Clock {
    queue: LazyQueue,
    referenced: Vec<bool>,
}

impl Policy for Clock {
    fn name(&self) -> String {
        "clock".into()
    }

    fn prepare(&mut self, w: &Workload) {
        self.queue.reset(w.pages);
        self.referenced = vec![false; w.pages];
    }

    fn insert(&mut self, page: u32, _write: bool, _now: usize) {
        self.referenced[page as usize] = false;
        self.queue.push(page);
    }

    fn hit(&mut self, page: u32, _write: bool, _now: usize) {
        self.referenced[page as usize] = true;
    }

    fn victim(&mut self) -> Option<u32> {
        loop {
            let page = self.queue.pop()?;
            if !std::mem::take(&mut self.referenced[page as usize]) {
                return Some(page);
            }
            self.queue.push(page);
        }
    }

    fn remove(&mut self, page: u32) {
        self.queue.remove(page);
    }
}
