//! The recorder under concurrent pushes, its file read back, and the
//! reader's errors on damaged files.

use std::sync::Arc;
use trace::{read::read_bytes, read_file, Event, Recorder, TraceError, SIZE_ON_FILE, SIZE_ZERO};

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("uzswap-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    dir
}

/// Four threads push while a drainer writes chunks: every record pushed is
/// either in the file, in each thread's order, or counted lost.
#[test]
fn concurrent_pushes_are_all_written_in_order_or_counted_lost() {
    let path = temp("stress");
    let rec = Arc::new(Recorder::open(&path, 7, "lz4").unwrap());
    const PER_THREAD: u32 = 200_000;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drainer = {
        let (rec, stop) = (rec.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                rec.drain().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            rec.drain().unwrap();
        })
    };
    let pushers: Vec<_> = (0..4u32)
        .map(|t| {
            let rec = rec.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    rec.push(Event::Fault {
                        addr: u64::from(i) << 12,
                        write: false,
                        first_touch: false,
                        kept_clean: false,
                        tid: t,
                        service_ns: i,
                    });
                }
            })
        })
        .collect();
    for p in pushers {
        p.join().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    drainer.join().unwrap();
    let procs = read_file(&path).unwrap();
    assert_eq!(procs.len(), 1);
    assert_eq!(procs[0].pid, 7);
    let mut next = [0u32; 4];
    let (mut seen, mut lost) = (0u64, 0u64);
    for r in &procs[0].records {
        match r.event {
            Event::Fault {
                tid, service_ns, ..
            } => {
                assert!(
                    service_ns >= next[tid as usize],
                    "thread {tid} out of order"
                );
                next[tid as usize] = service_ns + 1;
                seen += 1;
            }
            Event::Lost { count } => lost += u64::from(count),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen + lost, 4 * u64::from(PER_THREAD));
    assert_eq!(lost, rec.lost());
    std::fs::remove_file(&path).unwrap();
}

/// Two recorders (a parent and its child) append to one file: each one's
/// records come back under its pid.
#[test]
fn two_processes_share_a_file_by_chunks() {
    let path = temp("two");
    let parent = Recorder::open(&path, 1, "lz4").unwrap();
    let child = Recorder::open(&path, 2, "lz4").unwrap();
    for i in 0..3u64 {
        parent.push(Event::Map {
            addr: i << 12,
            pages: 1,
        });
        parent.drain().unwrap();
        child.push(Event::Unmap { addr: i << 12 });
        child.drain().unwrap();
    }
    let procs = read_file(&path).unwrap();
    assert_eq!(procs.iter().map(|p| p.pid).collect::<Vec<_>>(), [1, 2]);
    assert!(procs.iter().all(|p| p.records.len() == 3));
    assert!(matches!(
        procs[1].records[2].event,
        Event::Unmap { addr: 0x2000 }
    ));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn damaged_files_are_clear_errors() {
    let path = temp("damaged");
    let rec = Recorder::open(&path, 3, "lz4").unwrap();
    rec.push(Event::Limit { pages: 100 });
    rec.drain().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        read_bytes(&bytes[..bytes.len() - 1]),
        Err(TraceError::Truncated { offset: 0, .. })
    ));
    let mut bad = bytes.clone();
    bad[0] ^= 1;
    assert!(matches!(
        read_bytes(&bad),
        Err(TraceError::BadMagic { offset: 0 })
    ));
    let mut twice = bytes.clone();
    twice.extend_from_slice(&bytes[..10]);
    assert!(matches!(
        read_bytes(&twice),
        Err(TraceError::Truncated { .. })
    ));
    assert_eq!(read_bytes(&bytes).unwrap()[0].records.len(), 1);
}

/// Runs offered to the sampler between records: some of their pool pages
/// come back with their lengths, under the recorder's compressor, and the
/// records around them are untouched; a trace with no evictions has none.
#[test]
fn evicted_pages_are_sampled_beside_the_records() {
    let path = temp("samples");
    let rec = Recorder::open(&path, 5, "zstd:3").unwrap();
    let pages: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 4096]).collect();
    let run: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
    let mut sizes: Vec<u16> = (0..16u16).map(|i| 100 + i).collect();
    sizes[0] = SIZE_ZERO;
    sizes[1] = SIZE_ON_FILE;
    for k in 0..200u64 {
        rec.push(Event::Limit { pages: k });
        rec.sample_run(k << 20, &run, &sizes).unwrap();
        if k % 50 == 0 {
            rec.drain().unwrap();
        }
    }
    rec.flush().unwrap();
    let procs = read_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(procs.len(), 1);
    let p = &procs[0];
    assert_eq!(p.records.len(), 200);
    assert_eq!(p.compressor.as_deref(), Some("zstd:3"));
    // 14 pool pages a run, 200 runs: one in 32 of them.
    assert_eq!(p.samples.len(), (200 * 14usize).div_ceil(32));
    for s in &p.samples {
        let i = ((s.addr >> 12) & 0xff) as usize;
        assert!(i >= 2, "a zero page or a page on the file was sampled");
        assert_eq!(s.compressed_len, sizes[i]);
        assert!(s.data.iter().all(|&b| b == i as u8));
    }
    let none = temp("no-samples");
    let quiet = Recorder::open(&none, 6, "lz4").unwrap();
    quiet.push(Event::Aged);
    quiet.flush().unwrap();
    let procs = read_file(&none).unwrap();
    std::fs::remove_file(&none).unwrap();
    assert!(procs[0].samples.is_empty() && procs[0].compressor.is_none());
}

/// An evicted run comes back as its `Evict` record and its pages' lengths,
/// eight to a `Sizes` record, the last padded.
#[test]
fn an_evicted_run_is_its_evict_record_and_its_sizes() {
    let path = temp("evicted");
    let rec = Recorder::open(&path, 8, "lz4").unwrap();
    let sizes: Vec<u16> = (1..=10).collect();
    rec.push_evicted(0x10000, 1, 2, 55, &sizes);
    rec.flush().unwrap();
    let procs = read_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let events: Vec<Event> = procs[0].records.iter().map(|r| r.event).collect();
    assert_eq!(
        events,
        [
            Event::Evict {
                addr: 0x10000,
                pages: 10,
                zero: 1,
                disk: 2,
                compressed_bytes: 55
            },
            Event::Sizes {
                addr: 0x10000,
                sizes: [1, 2, 3, 4, 5, 6, 7, 8]
            },
            Event::Sizes {
                addr: 0x10000 + 8 * 4096,
                sizes: [
                    9,
                    10,
                    trace::SIZE_NONE,
                    trace::SIZE_NONE,
                    trace::SIZE_NONE,
                    trace::SIZE_NONE,
                    trace::SIZE_NONE,
                    trace::SIZE_NONE
                ]
            },
        ]
    );
}
