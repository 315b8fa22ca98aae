//! Reading a trace file: its chunks, gathered per process.

use crate::record::{BadRecord, Record, RECORD_BYTES};
use crate::recorder::{CHUNK_HEADER_BYTES, CHUNK_MAGIC};
use crate::samples::{self, PageSample, PAGES_MAGIC};
use std::collections::BTreeMap;
use std::path::Path;

/// Why a trace cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("byte {offset}: not a uzswap trace chunk (bad magic)")]
    BadMagic { offset: usize },
    #[error("byte {offset}: chunk cut short ({need} bytes announced, {have} left)")]
    Truncated {
        offset: usize,
        need: usize,
        have: usize,
    },
    #[error("byte {offset}: chunk payload does not decompress: {source}")]
    Payload {
        offset: usize,
        source: std::io::Error,
    },
    #[error(
        "byte {offset}: chunk holds {got} bytes of records, its header says {records} records"
    )]
    Count {
        offset: usize,
        records: usize,
        got: usize,
    },
    #[error("byte {offset}: {source}")]
    Record { offset: usize, source: BadRecord },
    #[error("byte {offset}: a chunk of page samples holds {got} bytes, not {samples} samples")]
    Samples {
        offset: usize,
        samples: usize,
        got: usize,
    },
}

/// One process's records, in the order it pushed them, and its page
/// samples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessTrace {
    pub pid: u32,
    pub records: Vec<Record>,
    /// The compressor its samples' lengths are from (`None`: no samples).
    pub compressor: Option<String>,
    pub samples: Vec<PageSample>,
}

/// Reads every chunk of the trace at `path`.
pub fn read_file(path: &Path) -> Result<Vec<ProcessTrace>, TraceError> {
    let bytes = std::fs::read(path).map_err(|source| TraceError::Io {
        path: path.display().to_string(),
        source,
    })?;
    read_bytes(&bytes)
}

/// Reads the chunks of a trace held in memory; one [`ProcessTrace`] per
/// pid, in the order of each pid's first chunk.
pub fn read_bytes(bytes: &[u8]) -> Result<Vec<ProcessTrace>, TraceError> {
    let mut by_pid: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out: Vec<ProcessTrace> = Vec::new();
    let mut offset = 0;
    while offset < bytes.len() {
        let have = bytes.len() - offset;
        if have < CHUNK_HEADER_BYTES {
            return Err(TraceError::Truncated {
                offset,
                need: CHUNK_HEADER_BYTES,
                have,
            });
        }
        let word = |i: usize| {
            let at = offset + 8 * i;
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        let magic = word(0);
        if magic != CHUNK_MAGIC && magic != PAGES_MAGIC {
            return Err(TraceError::BadMagic { offset });
        }
        let pid = word(1) as u32;
        let count = (word(1) >> 32) as usize;
        let len = usize::try_from(word(2)).unwrap_or(usize::MAX);
        let need = CHUNK_HEADER_BYTES.saturating_add(len);
        if need > have {
            return Err(TraceError::Truncated { offset, need, have });
        }
        let payload = &bytes[offset + CHUNK_HEADER_BYTES..offset + need];
        let slot = *by_pid.entry(pid).or_insert_with(|| {
            out.push(ProcessTrace {
                pid,
                ..ProcessTrace::default()
            });
            out.len() - 1
        });
        let trace = &mut out[slot];
        if magic == PAGES_MAGIC {
            read_samples(payload, count, offset, trace)?;
        } else {
            read_records(payload, count, offset, trace)?;
        }
        offset += need;
    }
    Ok(out)
}

/// A chunk of records into `trace`.
fn read_records(
    payload: &[u8],
    records: usize,
    offset: usize,
    trace: &mut ProcessTrace,
) -> Result<(), TraceError> {
    let capacity = records.saturating_mul(RECORD_BYTES);
    let raw = zstd::bulk::decompress(payload, capacity)
        .map_err(|source| TraceError::Payload { offset, source })?;
    if raw.len() != capacity {
        return Err(TraceError::Count {
            offset,
            records,
            got: raw.len(),
        });
    }
    trace.records.reserve(records);
    for r in raw.chunks_exact(RECORD_BYTES) {
        let w = |i: usize| u64::from_le_bytes(r[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        let record = Record::decode([w(0), w(1), w(2)])
            .map_err(|source| TraceError::Record { offset, source })?;
        trace.records.push(record);
    }
    Ok(())
}

/// A chunk of page samples into `trace`.
fn read_samples(
    payload: &[u8],
    count: usize,
    offset: usize,
    trace: &mut ProcessTrace,
) -> Result<(), TraceError> {
    let raw = zstd::bulk::decompress(payload, samples::payload_bytes(count))
        .map_err(|source| TraceError::Payload { offset, source })?;
    let (compressor, mut got) =
        samples::decode_payload(&raw, count).ok_or(TraceError::Samples {
            offset,
            samples: count,
            got: raw.len(),
        })?;
    trace.compressor = Some(compressor);
    trace.samples.append(&mut got);
    Ok(())
}
