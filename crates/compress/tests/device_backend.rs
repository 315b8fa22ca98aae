//! A backend outside the crate, built like a device driver would be: submit
//! hands the batch to a "device" thread and returns at once; the device's
//! completion path fills the results and completes the Pending. zswap-style
//! callers use it through `dyn Compressor` unchanged.

use compress::corpus::Corpus;
use compress::{
    Algorithm, Batch, Completer, CompressError, Compressor, CompressorStats, Op, Pending, PAGE_SIZE,
};
use std::sync::mpsc;
use std::sync::Mutex;

/// "Device": a thread that run-length-codes pages of one repeated byte and
/// calls everything else incompressible.
#[derive(Debug)]
struct ToyDevice {
    queue: Mutex<mpsc::Sender<(Batch, Completer)>>,
}

impl ToyDevice {
    fn start() -> Self {
        let (tx, rx) = mpsc::channel::<(Batch, Completer)>();
        std::thread::spawn(move || {
            for (mut batch, done) in rx {
                for i in 0..batch.len() {
                    let op = batch.op();
                    let expected = batch.expected_len(i);
                    let (src, dst) = batch.io_mut(i);
                    let result = match op {
                        Op::Compress if src.iter().all(|&b| b == src[0]) => {
                            dst[0] = src[0];
                            Ok(1)
                        }
                        Op::Compress => Err(CompressError::Incompressible(PAGE_SIZE)),
                        Op::Decompress => {
                            dst[..expected].fill(src[0]);
                            Ok(expected)
                        }
                    };
                    batch.set_output(i, result);
                }
                done.complete(batch);
            }
        });
        Self {
            queue: Mutex::new(tx),
        }
    }
}

impl Compressor for ToyDevice {
    fn algorithm(&self) -> Algorithm {
        Algorithm::Lz4 // stands in for a device codec
    }
    fn batch_size(&self) -> usize {
        8
    }
    fn compress_page(&self, _: &[u8], _: &mut [u8]) -> Result<usize, CompressError> {
        Err(CompressError::Failed {
            algorithm: "toy".into(),
            msg: "this device only takes batches".into(),
        })
    }
    fn decompress_page(&self, _: &[u8], _: &mut [u8], _: usize) -> Result<usize, CompressError> {
        Err(CompressError::Failed {
            algorithm: "toy".into(),
            msg: "this device only takes batches".into(),
        })
    }
    fn run(&self, batch: &mut Batch) {
        let taken = std::mem::take(batch);
        *batch = self.submit(taken).wait();
    }
    fn submit(&self, batch: Batch) -> Pending {
        let (pending, completer) = Pending::channel();
        self.queue
            .lock()
            .unwrap()
            .send((batch, completer))
            .expect("device thread runs");
        pending
    }
    fn stats(&self) -> CompressorStats {
        CompressorStats::default()
    }
}

#[test]
fn a_device_backend_plugs_in_without_changing_callers() {
    let dev: Box<dyn Compressor> = Box::new(ToyDevice::start());
    let corpus = Corpus::synthetic(4, 3);
    let zero: Vec<&[u8]> = corpus.group("zero").unwrap().pages().collect();
    let text: Vec<&[u8]> = corpus.group("text").unwrap().pages().collect();
    let pages: Vec<&[u8]> = zero.iter().chain(&text).copied().collect();

    let mut batch = Batch::default();
    dev.compress_batch(&pages, &mut batch);
    assert_eq!(batch.output(0), Ok(&[0u8][..]));
    assert_eq!(
        batch.output(4),
        Err(CompressError::Incompressible(PAGE_SIZE))
    );

    let objects: Vec<Vec<u8>> = (0..4).map(|i| batch.output(i).unwrap().to_vec()).collect();
    let refs: Vec<&[u8]> = objects.iter().map(Vec::as_slice).collect();
    let mut back = Batch::default();
    dev.decompress_batch(&refs, PAGE_SIZE, &mut back);
    for (i, page) in zero.iter().enumerate() {
        assert_eq!(back.output(i).unwrap(), *page);
    }

    // The async form: poll until the device completes.
    let mut b = Batch::new(Op::Compress);
    b.push_page(zero[0]);
    let mut pending = dev.submit(b);
    let done = loop {
        if let Some(b) = pending.poll() {
            break b;
        }
        std::thread::yield_now();
    };
    assert_eq!(done.output(0), Ok(&[0u8][..]));
}
