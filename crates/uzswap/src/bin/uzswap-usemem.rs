//! `uzswap-usemem`: the usemem workload (vm-scalability's `usemem`, as the
//! seeds run it), used by `uzswap bench usemem` under uzswap and by
//! `uzswap bench kernel-peer` under the kernel: the same binary, the same
//! shape.
//!
//! `uzswap-usemem [-n N] [--init-time] [-s SECONDS] [--hold-ms MS]
//! [--read-back] SIZE`: like usemem, one parent forks `N` worker processes
//! (1 by default) and waits for them; each maps SIZE bytes of anonymous
//! memory in one `mmap` after the fork, writes every page with realistic
//! content (the shipped corpus of python3/node heap pages, each page
//! stamped with its index), and prints its write throughput; with
//! `--read-back` it then reads every page and checks it; `-s`/`--hold-ms`
//! keep the memory that long before exiting. `--init-time` also reports the
//! time to map and first-touch the memory (usemem's option of that name).
//! Output: one line per worker,
//! `usemem pid=P bytes=B write_us=U kbs=K read_us=R verified=yes|no|skipped`.
//! Exit code 1 if any worker's page read back differs or a worker failed.

use compress::corpus::Corpus;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use common::PAGE_SIZE;

struct Args {
    procs: usize,
    bytes: usize,
    read_back: bool,
    init_time: bool,
    hold: Duration,
}

const USAGE: &str =
    "usage: uzswap-usemem [-n N] [--init-time] [-s SECONDS] [--hold-ms MS] [--read-back] SIZE";

fn parse() -> Result<Args, String> {
    let mut a = Args {
        procs: 1,
        bytes: 0,
        read_back: false,
        init_time: false,
        hold: Duration::ZERO,
    };
    let mut size = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match flag.as_str() {
            "-n" => {
                let v = value("-n")?;
                a.procs = v.parse().map_err(|_| format!("-n {v:?}: a number"))?;
            }
            "-s" => {
                let v = value("-s")?;
                a.hold =
                    Duration::from_secs_f64(v.parse().map_err(|_| format!("-s {v:?}: seconds"))?);
            }
            "--hold-ms" => {
                let v = value("--hold-ms")?;
                a.hold = Duration::from_millis(
                    v.parse()
                        .map_err(|_| format!("--hold-ms {v:?}: a number"))?,
                );
            }
            // The size may also come as --bytes (the older form).
            "--bytes" => size = Some(value("--bytes")?),
            "--read-back" => a.read_back = true,
            "--init-time" => a.init_time = true,
            s if !s.starts_with('-') && size.is_none() => size = Some(s.to_string()),
            _ => return Err(format!("unknown argument {flag:?}; {USAGE}")),
        }
    }
    let size = size.ok_or_else(|| format!("no SIZE; {USAGE}"))?;
    a.bytes =
        launch::parse_size(&size).ok_or_else(|| format!("SIZE {size:?}: a size such as 256M"))?;
    if a.bytes < PAGE_SIZE {
        return Err("SIZE must be at least one page".into());
    }
    if a.procs == 0 {
        return Err("-n must be at least 1".into());
    }
    Ok(a)
}

/// Page `i`'s content: a corpus page, its first 8 bytes replaced by `i`.
fn page_of(corpus: &[&[u8]], i: usize, out: &mut [u8]) {
    out.copy_from_slice(corpus[i.wrapping_mul(7919) % corpus.len()]);
    out[..8].copy_from_slice(&(i as u64).to_le_bytes());
}

/// One worker: map, write, read back; returns the exit code.
fn worker(args: &Args, pages: &[&[u8]]) -> u8 {
    let npages = args.bytes.div_ceil(PAGE_SIZE);
    let len = npages * PAGE_SIZE;
    let t0 = Instant::now();
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
        return 2;
    }
    // SAFETY: the mapping is `len` bytes, readable and writable, ours alone,
    // and stays mapped until the process exits.
    let mem = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) };
    let start = Instant::now();
    for (i, page) in mem.chunks_exact_mut(PAGE_SIZE).enumerate() {
        page_of(pages, i, page);
    }
    let write = start.elapsed();
    let mut read = Duration::ZERO;
    let mut verified = "skipped";
    if args.read_back {
        let start = Instant::now();
        let mut expect = vec![0u8; PAGE_SIZE];
        let mut bad = None;
        for (i, page) in mem.chunks_exact(PAGE_SIZE).enumerate() {
            page_of(pages, i, &mut expect);
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
    let init = if args.init_time {
        format!(" init_us={}", (start - t0).as_micros() + write.as_micros())
    } else {
        String::new()
    };
    println!(
        "usemem pid={} bytes={len} write_us={} kbs={kbs:.0} read_us={} verified={verified}{init}",
        std::process::id(),
        write.as_micros(),
        read.as_micros()
    );
    std::thread::sleep(args.hold);
    u8::from(verified == "no")
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
    // Like usemem: the parent forks every worker, then waits for them.
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mut pids = Vec::new();
    for _ in 0..args.procs {
        // SAFETY: fork has no preconditions; the child runs `worker` and
        // exits without returning into the parent's code.
        match unsafe { libc::fork() } {
            -1 => {
                eprintln!("uzswap-usemem: fork: {}", std::io::Error::last_os_error());
                return ExitCode::from(2);
            }
            0 => {
                let code = worker(&args, &pages);
                let _ = std::io::stdout().flush();
                // SAFETY: ends the child at once (its counters are written
                // by the LD_PRELOAD library's _exit hook under uzswap).
                unsafe { libc::_exit(i32::from(code)) }
            }
            pid => pids.push(pid),
        }
    }
    let mut failed = false;
    for pid in pids {
        let mut status = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        failed |= r < 0 || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
