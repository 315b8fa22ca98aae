//! Reference policies, one per file.

mod clock;
mod fifo;
mod lru;
mod opt;

pub use clock::Clock;
pub use fifo::Fifo;
pub use lru::Lru;
pub use opt::Opt;

use crate::policy::Policy;

/// Names `--policy` accepts for reference policies.
pub const NAMES: [&str; 4] = ["lru", "fifo", "clock", "opt"];

/// The reference policy called `name`.
pub fn by_name(name: &str) -> Option<Box<dyn Policy + Send>> {
    Some(match name {
        "lru" => Box::new(Lru::default()),
        "fifo" => Box::new(Fifo::default()),
        "clock" => Box::new(Clock::default()),
        "opt" => Box::new(Opt::default()),
        _ => return None,
    })
}

/// A queue of page ids that forgets removed entries lazily: each entry
/// carries its page's generation at push, and only the current one is
/// live.
#[derive(Default)]
pub(crate) struct LazyQueue {
    queue: std::collections::VecDeque<(u32, u32)>,
    gen: Vec<u32>,
    live: Vec<bool>,
}

impl LazyQueue {
    pub fn reset(&mut self, pages: usize) {
        self.queue.clear();
        self.gen = vec![0; pages];
        self.live = vec![false; pages];
    }

    pub fn push(&mut self, page: u32) {
        let p = page as usize;
        self.gen[p] = self.gen[p].wrapping_add(1);
        self.live[p] = true;
        self.queue.push_back((page, self.gen[p]));
    }

    /// The oldest live page, taken off the queue.
    pub fn pop(&mut self) -> Option<u32> {
        while let Some((page, gen)) = self.queue.pop_front() {
            let p = page as usize;
            if self.live[p] && self.gen[p] == gen {
                self.live[p] = false;
                return Some(page);
            }
        }
        None
    }

    pub fn remove(&mut self, page: u32) {
        self.live[page as usize] = false;
    }
}
