//! `uzswap-usemem`: one process of the usemem workload (vm-scalability's
//! `usemem`, as the seeds run it), used by `uzswap bench usemem` under
//! uzswap and by `uzswap bench kernel-peer` under the kernel.
//!
//! It maps `--bytes` of anonymous memory in one `mmap`, writes every page
//! with realistic content (the shipped corpus of python3/node heap pages
//! and the synthetic classes, each page stamped with its index), and prints
//! its write throughput. With `--read-back` it then reads every page and
//! checks it; `--hold-ms` keeps the memory for a while before exiting, as
//! usemem's `-s`. Output: one line
//! `usemem pid=P bytes=B write_us=U kbs=K read_us=R verified=yes|no|skipped`.
//! Exit code 1 if a page read back differs.

use compress::corpus::Corpus;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const PAGE: usize = 4096;

struct Args {
    bytes: usize,
    read_back: bool,
    hold: Duration,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        bytes: 64 << 20,
        read_back: false,
        hold: Duration::ZERO,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "--bytes" => {
                let v = value("--bytes")?;
                a.bytes = runtime::settings::parse_size(&v)
                    .ok_or_else(|| format!("--bytes {v:?}: a size such as 256M"))?;
            }
            "--read-back" => a.read_back = true,
            "--hold-ms" => {
                let v = value("--hold-ms")?;
                a.hold = Duration::from_millis(
                    v.parse().map_err(|_| format!("--hold-ms {v:?}: a number"))?,
                );
            }
            _ => {
                return Err(format!(
                    "unknown argument {flag:?}; usage: uzswap-usemem [--bytes 64M] [--read-back] [--hold-ms MS]"
                ))
            }
        }
    }
    if a.bytes < PAGE {
        return Err("--bytes must be at least one page".into());
    }
    Ok(a)
}

/// Page `i`'s content: a corpus page, its first 8 bytes replaced by `i`.
fn page_of(corpus: &[&[u8]], i: usize, out: &mut [u8]) {
    out.copy_from_slice(corpus[i.wrapping_mul(7919) % corpus.len()]);
    out[..8].copy_from_slice(&(i as u64).to_le_bytes());
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("uzswap-usemem: {e}");
            return ExitCode::from(2);
        }
    };
    let corpus = match Corpus::sample() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("uzswap-usemem: corpus: {e}");
            return ExitCode::from(2);
        }
    };
    let pages: Vec<&[u8]> = corpus.pages().collect();
    let npages = args.bytes.div_ceil(PAGE);
    let len = npages * PAGE;
    // SAFETY: a fresh private anonymous mapping; the result is checked.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        eprintln!(
            "uzswap-usemem: mmap of {len} bytes: {}",
            std::io::Error::last_os_error()
        );
        return ExitCode::from(2);
    }
    // SAFETY: the mapping is `len` bytes, readable and writable, ours alone,
    // and stays mapped until the process exits.
    let mem = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
    let start = Instant::now();
    for (i, page) in mem.chunks_exact_mut(PAGE).enumerate() {
        page_of(&pages, i, page);
    }
    let write = start.elapsed();
    let mut read = Duration::ZERO;
    let mut verified = "skipped";
    if args.read_back {
        let start = Instant::now();
        let mut expect = vec![0u8; PAGE];
        let mut bad = None;
        for (i, page) in mem.chunks_exact(PAGE).enumerate() {
            page_of(&pages, i, &mut expect);
            if page != &expect[..] {
                bad.get_or_insert(i);
            }
        }
        read = start.elapsed();
        verified = if let Some(i) = bad {
            eprintln!("uzswap-usemem: page {i} read back differs from what was written");
            "no"
        } else {
            "yes"
        };
    }
    let kbs = (len as f64 / 1024.0) / write.as_secs_f64().max(1e-9);
    println!(
        "usemem pid={} bytes={len} write_us={} kbs={kbs:.0} read_us={} verified={verified}",
        std::process::id(),
        write.as_micros(),
        read.as_micros()
    );
    std::thread::sleep(args.hold);
    if verified == "no" {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
