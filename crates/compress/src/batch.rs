//! Batches: the pages (or compressed objects) of one request with their
//! output buffers and per-item results. A batch owns every buffer, so it can
//! travel to a worker or a device and back, and is reused across requests.

use crate::{CompressError, DST_BUF_SIZE, PAGE_SIZE};

/// What a batch asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Compress,
    Decompress,
}

/// One page in, one buffer out.
#[derive(Debug, Default)]
pub(crate) struct BatchItem {
    pub(crate) src: Vec<u8>,
    pub(crate) dst: Vec<u8>,
    /// Decompression: the length the output must have.
    pub(crate) expected: usize,
    pub(crate) result: Option<Result<usize, CompressError>>,
}

/// A request of up to any number of pages (zswap uses up to
/// [`crate::ZSWAP_MAX_BATCH_SIZE`]).
#[derive(Debug)]
pub struct Batch {
    op: Op,
    items: Vec<BatchItem>,
    len: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Self::new(Op::Compress)
    }
}

impl Batch {
    pub fn new(op: Op) -> Self {
        Self {
            op,
            items: Vec::new(),
            len: 0,
        }
    }

    /// Empties the batch for reuse, keeping its buffers.
    pub fn reset(&mut self, op: Op) {
        self.op = op;
        self.len = 0;
    }

    pub fn op(&self) -> Op {
        self.op
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn next_item(&mut self) -> &mut BatchItem {
        if self.len == self.items.len() {
            self.items.push(BatchItem {
                dst: vec![0; DST_BUF_SIZE],
                ..BatchItem::default()
            });
        }
        self.len += 1;
        let item = &mut self.items[self.len - 1];
        item.result = None;
        item
    }

    /// Adds a page to compress (a compress batch). Returns its index.
    pub fn push_page(&mut self, page: &[u8]) -> usize {
        self.push_output_only(page.len())
            .src
            .extend_from_slice(page);
        self.len - 1
    }

    /// Adds compressed data that must decompress to `expected` bytes.
    pub fn push_compressed(&mut self, data: &[u8], expected: usize) -> usize {
        debug_assert_eq!(self.op, Op::Decompress);
        let item = self.next_item();
        item.src.clear();
        item.src.extend_from_slice(data);
        item.expected = expected;
        if expected > DST_BUF_SIZE {
            item.result = Some(Err(CompressError::TooLarge(expected)));
        }
        self.len - 1
    }

    /// Item `i`'s output: the compressed bytes, or the decompressed page.
    pub fn output(&self, i: usize) -> Result<&[u8], CompressError> {
        let item = self.items[..self.len].get(i).ok_or(CompressError::NotRun)?;
        match &item.result {
            Some(Ok(n)) => Ok(&item.dst[..*n]),
            Some(Err(e)) => Err(e.clone()),
            None => Err(CompressError::NotRun),
        }
    }

    /// Adds a compress item for a page of `len` bytes whose input stays
    /// with the caller: a backend that compresses in the calling thread
    /// reads the caller's page where it lies and fills only the output (its
    /// [`Batch::input`] is empty). An oversize page's item comes with its
    /// error as result, to be left as it is.
    pub(crate) fn push_output_only(&mut self, len: usize) -> &mut BatchItem {
        debug_assert_eq!(self.op, Op::Compress);
        let item = self.next_item();
        item.src.clear();
        item.expected = 0;
        if len > PAGE_SIZE {
            item.result = Some(Err(CompressError::TooLarge(len)));
        }
        item
    }

    /// Item `i`'s input: empty where the backend read the caller's page in
    /// place (a sequential backend's [`crate::Compressor::compress_batch`]).
    pub fn input(&self, i: usize) -> &[u8] {
        &self.items[..self.len][i].src
    }

    /// Item `i`'s input and output buffer, for a backend that processes the
    /// batch itself (a device). The output buffer is [`crate::DST_BUF_SIZE`]
    /// bytes; report how much of it is valid with [`Batch::set_output`].
    pub fn io_mut(&mut self, i: usize) -> (&[u8], &mut [u8]) {
        let item = &mut self.items[..self.len][i];
        (&item.src, &mut item.dst)
    }

    /// Records item `i`'s result: `Ok(n)` means `n` output bytes are valid.
    pub fn set_output(&mut self, i: usize, result: Result<usize, CompressError>) {
        self.items[..self.len][i].result = Some(result);
    }

    /// What item `i` must decompress to (0 for compression).
    pub fn expected_len(&self, i: usize) -> usize {
        self.items[..self.len][i].expected
    }

    pub(crate) fn items_mut(&mut self) -> &mut [BatchItem] {
        &mut self.items[..self.len]
    }
}
