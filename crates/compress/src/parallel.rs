//! The batching compressor: a batch's pages are compressed in parallel by
//! worker threads (the accelerator's engines); `submit` returns at once and
//! the caller polls (the accelerator's async poll mode, docs/seeds.md).
//!
//! Work is queued as one job per page on a bounded queue (the device's work
//! queue). As in the accelerator driver's non-blocking descriptor
//! allocation (with timeouts and fallbacks, docs/seeds.md):
//!
//! * if the queue is full at submit, that page is compressed in the caller
//!   at once (`fallback_queue_full`);
//! * if a batch is not done by its deadline, the caller takes back every page
//!   no worker has started and compresses it itself (`fallback_deadline`).
//!
//! A job is claimed exactly once (an atomic flag), by a worker or by the
//! caller, so no page is processed twice or lost.

use crate::batch::{Batch, BatchItem, Op};
use crate::claim::{Completion, Job};
use crate::codec::Codec;
use crate::sequential::{process_item, CtxPool};
use crate::{Algorithm, CompressError, Compressor, CompressorCounters, CompressorStats};
use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Settings of a [`Parallel`] compressor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelConfig {
    /// Worker threads (engines).
    pub workers: usize,
    /// Pages per batch the backend advertises (`batch_size()`).
    pub batch_size: usize,
    /// Jobs the queue holds before submit falls back to the caller.
    pub queue_depth: usize,
    /// How long a batch may wait before the caller takes its pages back.
    pub deadline: Duration,
    /// Decompress every compressed page and compare (IAA's verify_compress).
    pub verify: bool,
    /// How long an idle worker polls the queue before it sleeps. An
    /// engine that sleeps between batches pays a wake-up (an IPI to a halted
    /// CPU) on the next one; polling keeps it hot while batches keep coming.
    pub idle_poll: Duration,
    /// In [`Pending::wait`], the caller compresses pages of its own batch
    /// that no worker has started, instead of sleeping while its CPU idles.
    pub caller_helps: bool,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self {
            // The caller helps, so one CPU is already busy with the batch.
            workers: std::thread::available_parallelism()
                .map_or(1, |n| usize::from(n).saturating_sub(1).max(1)),
            batch_size: crate::ZSWAP_MAX_BATCH_SIZE,
            queue_depth: 128,
            deadline: Duration::from_millis(20),
            verify: false,
            idle_poll: Duration::from_micros(200),
            caller_helps: true,
        }
    }
}

/// Runs jobs in the caller's thread (fallbacks).
trait CallerRunner: Send + Sync {
    fn run_in_caller(&self, op: Op, item: &mut BatchItem);
    fn count_deadline_fallback(&self, n: u64);
    fn count_helped(&self);
}

/// A batch in flight, or one already complete.
pub struct Pending {
    state: PendingState,
}

enum PendingState {
    Ready(Option<Batch>),
    External(Arc<ExternalSlot>),
    InFlight {
        completion: Arc<Completion>,
        jobs: Vec<Arc<Job>>,
        deadline: Instant,
        runner: Arc<dyn CallerRunner>,
        caller_helps: bool,
    },
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            PendingState::Ready(_) => "ready",
            PendingState::External(_) => "on a device",
            PendingState::InFlight { .. } => "in flight",
        };
        f.debug_struct("Pending").field("state", &state).finish()
    }
}

impl Pending {
    /// A batch that is already complete.
    pub fn ready(batch: Batch) -> Self {
        Self {
            state: PendingState::Ready(Some(batch)),
        }
    }

    /// A pending batch completed from elsewhere: a device backend keeps the
    /// [`Completer`] and calls [`Completer::complete`] from its completion
    /// path (an interrupt thread, a CUDA stream callback, a poller).
    pub fn channel() -> (Pending, Completer) {
        let slot = Arc::new(ExternalSlot {
            batch: parking_lot::Mutex::new(None),
            done: parking_lot::Condvar::new(),
        });
        (
            Pending {
                state: PendingState::External(slot.clone()),
            },
            Completer { slot },
        )
    }

    /// The batch if it is complete; never blocks. Past the deadline, pages
    /// no worker has started are compressed here first.
    pub fn poll(&mut self) -> Option<Batch> {
        match &mut self.state {
            PendingState::Ready(batch) => batch.take(),
            PendingState::External(slot) => slot.batch.lock().take(),
            PendingState::InFlight {
                completion,
                jobs,
                deadline,
                runner,
                ..
            } => {
                if Instant::now() >= *deadline {
                    take_back(jobs, runner.as_ref());
                }
                completion.take_if_done()
            }
        }
    }

    /// Blocks until the batch is complete, compressing unstarted pages in
    /// this thread meanwhile if the backend says the caller helps.
    pub fn wait(mut self) -> Batch {
        loop {
            if let Some(batch) = self.poll() {
                return batch;
            }
            if let PendingState::External(slot) = &self.state {
                let mut b = slot.batch.lock();
                if b.is_none() {
                    slot.done.wait(&mut b);
                }
                continue;
            }
            let PendingState::InFlight {
                completion,
                jobs,
                deadline,
                runner,
                caller_helps,
            } = &self.state
            else {
                unreachable!("a ready Pending polls Some once");
            };
            if *caller_helps
                && jobs
                    .iter()
                    .any(|j| j.try_run(|op, item| runner.run_in_caller(op, item)))
            {
                runner.count_helped();
                continue;
            }
            let now = Instant::now();
            // Sleep until done or until the deadline calls for a take-back.
            let until = if now < *deadline {
                *deadline
            } else {
                now + Duration::from_millis(1)
            };
            completion.wait_until(until);
        }
    }
}

struct ExternalSlot {
    batch: parking_lot::Mutex<Option<Batch>>,
    done: parking_lot::Condvar,
}

/// Completes a [`Pending`] made by [`Pending::channel`].
pub struct Completer {
    slot: Arc<ExternalSlot>,
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completer").finish_non_exhaustive()
    }
}

impl Completer {
    /// Hands the processed batch (every item with a result) to the waiter.
    pub fn complete(self, batch: Batch) {
        *self.slot.batch.lock() = Some(batch);
        self.slot.done.notify_all();
    }
}

fn take_back(jobs: &[Arc<Job>], runner: &dyn CallerRunner) {
    let taken = jobs
        .iter()
        .filter(|j| j.try_run(|op, item| runner.run_in_caller(op, item)))
        .count();
    if taken > 0 {
        runner.count_deadline_fallback(taken as u64);
    }
}

struct Shared<C: Codec> {
    codec: C,
    verify: bool,
    caller_ctxs: CtxPool<C>,
    stats: CompressorCounters,
}

impl<C: Codec> Shared<C> {
    fn process(&self, ctx: &mut C::Ctx, op: Op, item: &mut BatchItem) {
        process_item(&self.codec, ctx, op, item, self.verify);
        if matches!(item.result, Some(Err(CompressError::VerifyFailed))) {
            self.stats.verify_failures.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<C: Codec> CallerRunner for Shared<C> {
    fn run_in_caller(&self, op: Op, item: &mut BatchItem) {
        self.caller_ctxs
            .with(&self.codec, |ctx| self.process(ctx, op, item));
    }
    fn count_deadline_fallback(&self, n: u64) {
        self.stats.fallback_deadline.fetch_add(n, Ordering::Relaxed);
    }
    fn count_helped(&self) {
        self.stats.caller_helped.fetch_add(1, Ordering::Relaxed);
    }
}

/// A compressor that compresses each batch's pages in parallel.
pub struct Parallel<C: Codec> {
    shared: Arc<Shared<C>>,
    config: ParallelConfig,
    queue: Option<Sender<Arc<Job>>>,
    /// Kept so the queue stays open even with no workers (stalled engines).
    _queue_rx: Receiver<Arc<Job>>,
    workers: Vec<JoinHandle<()>>,
}

impl<C: Codec> std::fmt::Debug for Parallel<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parallel")
            .field("codec", &self.shared.codec)
            .field("config", &self.config)
            .finish()
    }
}

impl<C: Codec> Parallel<C> {
    /// Starts `config.workers` worker threads for `codec`.
    pub fn new(codec: C, config: ParallelConfig) -> Self {
        let shared = Arc::new(Shared {
            codec,
            verify: config.verify,
            caller_ctxs: CtxPool::new(),
            stats: CompressorCounters::new(),
        });
        let (tx, rx) = bounded::<Arc<Job>>(config.queue_depth);
        // A worker that cannot be started (out of threads) is left out: the
        // caller compresses what no worker claims, so fewer workers only
        // mean less parallelism, never a lost batch.
        let workers = (0..config.workers)
            .map_while(|i| {
                let (shared, rx, idle_poll) = (shared.clone(), rx.clone(), config.idle_poll);
                std::thread::Builder::new()
                    .name(format!("uzswap/comp{i}"))
                    .spawn(move || worker(&shared, &rx, idle_poll))
                    .ok()
            })
            .collect();
        Self {
            shared,
            config,
            queue: Some(tx),
            _queue_rx: rx,
            workers,
        }
    }

    pub fn config(&self) -> &ParallelConfig {
        &self.config
    }
}

fn worker<C: Codec>(shared: &Shared<C>, rx: &Receiver<Arc<Job>>, idle_poll: Duration) {
    let mut ctx = shared.codec.new_ctx();
    while let Some(job) = next_job(rx, idle_poll) {
        job.try_run(|op, item| shared.process(&mut ctx, op, item));
    }
}

/// The next job: polled for `idle_poll`, then waited for. `None` once the
/// compressor is dropped.
fn next_job(rx: &Receiver<Arc<Job>>, idle_poll: Duration) -> Option<Arc<Job>> {
    let start = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return None,
            Err(crossbeam_channel::TryRecvError::Empty) if start.elapsed() < idle_poll => {
                std::hint::spin_loop()
            }
            Err(crossbeam_channel::TryRecvError::Empty) => return rx.recv().ok(),
        }
    }
}

impl<C: Codec> Drop for Parallel<C> {
    fn drop(&mut self) {
        self.queue.take(); // closing the queue ends the workers
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl<C: Codec> Compressor for Parallel<C> {
    fn algorithm(&self) -> Algorithm {
        self.shared.codec.algorithm()
    }

    fn name(&self) -> String {
        format!("{}/parallel", self.algorithm())
    }

    fn batch_size(&self) -> usize {
        self.config.batch_size
    }

    fn compress_page(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, CompressError> {
        let s = &self.shared;
        s.caller_ctxs.compress_page(&s.codec, src, dst)
    }

    fn decompress_page(
        &self,
        src: &[u8],
        dst: &mut [u8],
        expected: usize,
    ) -> Result<usize, CompressError> {
        let s = &self.shared;
        s.caller_ctxs.decompress_page(&s.codec, src, dst, expected)
    }

    fn run(&self, batch: &mut Batch) {
        let taken = std::mem::take(batch);
        *batch = self.submit(taken).wait();
    }

    fn submit(&self, mut batch: Batch) -> Pending {
        let n = batch.len();
        self.shared.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.shared
            .stats
            .pages
            .fetch_add(n as u64, Ordering::Relaxed);
        if n == 0 {
            return Pending::ready(batch);
        }
        let op = batch.op();
        let items: Vec<BatchItem> = batch.items_mut().iter_mut().map(std::mem::take).collect();
        let completion = Arc::new(Completion::new(batch, n));
        let jobs: Vec<Arc<Job>> = items
            .into_iter()
            .enumerate()
            .map(|(index, item)| Arc::new(Job::new(op, index, item, completion.clone())))
            .collect();
        let runner: Arc<dyn CallerRunner> = self.shared.clone();
        let queue = self.queue.as_ref().expect("queue lives until drop");
        for job in &jobs {
            match queue.try_send(job.clone()) {
                Ok(()) => {}
                Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                    if job.try_run(|op, item| runner.run_in_caller(op, item)) {
                        self.shared
                            .stats
                            .fallback_queue_full
                            .fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        let deadline = Instant::now() + self.config.deadline;
        let caller_helps = self.config.caller_helps;
        Pending {
            state: PendingState::InFlight {
                completion,
                jobs,
                deadline,
                runner,
                caller_helps,
            },
        }
    }

    fn stats(&self) -> CompressorStats {
        self.shared.stats.snapshot()
    }
}
