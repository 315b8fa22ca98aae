//! The claim-and-complete protocol of the batching backend.
//!
//! A batch's items are moved into [`Job`]s. Each job is claimed exactly
//! once, by a worker, by a caller that helps, by a deadline take-back or by a
//! queue-full fallback: an atomic swap decides who claims it. The claimer
//! runs it and puts the item back into the batch at its index through the
//! [`Completion`]. The batch becomes available when the last item is back.
//!
//! Under `--cfg loom` the locks and atomics are loom's, and the model test
//! below checks every interleaving of three claimers.

use crate::batch::{Batch, BatchItem, Op};
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use parking_lot::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Where a batch's items come back to.
pub(crate) struct Completion {
    state: Mutex<CompletionState>,
    done: Condvar,
}

pub(crate) struct CompletionState {
    batch: Option<Batch>,
    pub(crate) remaining: usize,
}

#[cfg(not(loom))]
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock()
}

#[cfg(loom)]
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().expect("loom mutex poisoned")
}

impl Completion {
    /// A completion waiting for `remaining` items of `batch`.
    pub(crate) fn new(batch: Batch, remaining: usize) -> Self {
        Self {
            state: Mutex::new(CompletionState {
                batch: Some(batch),
                remaining,
            }),
            done: Condvar::new(),
        }
    }

    fn finish(&self, index: usize, item: BatchItem) {
        let mut st = lock(&self.state);
        if let Some(batch) = st.batch.as_mut() {
            batch.items_mut()[index] = item;
        }
        st.remaining -= 1;
        if st.remaining == 0 {
            self.done.notify_all();
        }
    }

    /// The batch, once every item is back (at most once).
    pub(crate) fn take_if_done(&self) -> Option<Batch> {
        let mut st = lock(&self.state);
        if st.remaining == 0 {
            st.batch.take()
        } else {
            None
        }
    }

    /// Sleeps until every item is back or `until` passes.
    #[cfg(not(loom))]
    pub(crate) fn wait_until(&self, until: std::time::Instant) {
        let mut st = self.state.lock();
        if st.remaining > 0 {
            self.done.wait_until(&mut st, until);
        }
    }

    /// loom has no timed waits; `Pending` is not modelled, only compiled.
    #[cfg(loom)]
    pub(crate) fn wait_until(&self, _until: std::time::Instant) {
        loom::thread::yield_now();
    }
}

/// One item's work, claimed once.
pub(crate) struct Job {
    op: Op,
    index: usize,
    claimed: AtomicBool,
    item: Mutex<Option<BatchItem>>,
    completion: Arc<Completion>,
}

impl Job {
    pub(crate) fn new(op: Op, index: usize, item: BatchItem, completion: Arc<Completion>) -> Self {
        Self {
            op,
            index,
            claimed: AtomicBool::new(false),
            item: Mutex::new(Some(item)),
            completion,
        }
    }

    /// Runs the job if nobody has claimed it; true if this call ran it.
    pub(crate) fn try_run(&self, run: impl FnOnce(Op, &mut BatchItem)) -> bool {
        if self.claimed.swap(true, Ordering::AcqRel) {
            return false;
        }
        let mut item = lock(&self.item)
            .take()
            .expect("an unclaimed job holds its item");
        run(self.op, &mut item);
        self.completion.finish(self.index, item);
        true
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    use super::*;
    use crate::CompressError;
    use loom::thread;

    /// A worker, a helping caller and a deadline take-back race over two
    /// jobs: each job runs exactly once, every item lands at its own index,
    /// and the batch is handed out exactly once.
    #[test]
    fn every_job_runs_once_and_the_batch_comes_back_whole() {
        loom::model(|| {
            let mut batch = Batch::new(Op::Compress);
            batch.push_page(&[1; 8]);
            batch.push_page(&[2; 8]);
            let items: Vec<BatchItem> = batch.items_mut().iter_mut().map(std::mem::take).collect();
            let completion = Arc::new(Completion::new(batch, 2));
            let jobs: Arc<Vec<Job>> = Arc::new(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, it)| Job::new(Op::Compress, i, it, completion.clone()))
                    .collect(),
            );
            // Each claimer records its result as the input's first byte.
            let mark =
                |_: Op, item: &mut BatchItem| item.result = Some(Ok(usize::from(item.src[0])));
            let claimers: Vec<_> = (0..2)
                .map(|t| {
                    let jobs = jobs.clone();
                    thread::spawn(move || {
                        let order: Vec<usize> = if t == 0 { vec![0, 1] } else { vec![1, 0] };
                        order.into_iter().filter(|&i| jobs[i].try_run(mark)).count()
                    })
                })
                .collect();
            let mine = jobs.iter().filter(|j| j.try_run(mark)).count();
            let theirs: usize = claimers.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(mine + theirs, 2, "each job ran exactly once");
            let batch = completion.take_if_done().expect("all items back");
            assert!(completion.take_if_done().is_none(), "handed out once");
            assert_eq!(batch.output(0).map(<[u8]>::len), Ok(1));
            assert_eq!(batch.output(1).map(<[u8]>::len), Ok(2));
            assert_ne!(batch.output(0), Err(CompressError::NotRun));
        });
    }
}
