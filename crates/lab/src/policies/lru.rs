//! LRU: the least recently accessed page leaves first (an intrusive list
//! over page ids: O(1) per step).

use crate::policy::Policy;
use crate::workload::Workload;

const NIL: u32 = u32::MAX;

#[derive(Default)]
pub struct Lru {
    prev: Vec<u32>,
    next: Vec<u32>,
    linked: Vec<bool>,
    /// Most recent end, least recent end.
    head: u32,
    tail: u32,
}

impl Lru {
    fn unlink(&mut self, p: u32) {
        let i = p as usize;
        if !self.linked[i] {
            return;
        }
        let (pr, nx) = (self.prev[i], self.next[i]);
        match pr {
            NIL => self.head = nx,
            _ => self.next[pr as usize] = nx,
        }
        match nx {
            NIL => self.tail = pr,
            _ => self.prev[nx as usize] = pr,
        }
        self.linked[i] = false;
    }

    fn push_front(&mut self, p: u32) {
        let i = p as usize;
        self.prev[i] = NIL;
        self.next[i] = self.head;
        match self.head {
            NIL => self.tail = p,
            h => self.prev[h as usize] = p,
        }
        self.head = p;
        self.linked[i] = true;
    }
}

impl Policy for Lru {
    fn name(&self) -> String {
        "lru".into()
    }

    fn prepare(&mut self, w: &Workload) {
        self.prev = vec![NIL; w.pages];
        self.next = vec![NIL; w.pages];
        self.linked = vec![false; w.pages];
        self.head = NIL;
        self.tail = NIL;
    }

    fn insert(&mut self, page: u32, _write: bool, _now: usize) {
        self.unlink(page);
        self.push_front(page);
    }

    fn hit(&mut self, page: u32, write: bool, now: usize) {
        self.insert(page, write, now);
    }

    fn victim(&mut self) -> Option<u32> {
        let t = self.tail;
        if t == NIL {
            return None;
        }
        self.unlink(t);
        Some(t)
    }

    fn remove(&mut self, page: u32) {
        self.unlink(page);
    }
}
