//! `uzswap-memcheck`: a Rust workload that checks its own memory, to run
//! under `uzswap run` (the project's tests do; so can a user who wants to
//! see that uzswap works on their machine).
//!
//! Each thread allocates `--mib` MiB in 1 MiB `Vec`s (malloc'd, so served
//! from regions), fills them with its own pattern, and for `--rounds`
//! rounds checks every byte and rewrites half of the buffers, racing the
//! runtime's evictions. With `--hold` it prints `ready PID` after filling
//! and waits for a line on stdin before the last check (so a test can read
//! live stats meanwhile). Exit code 0 when every byte read back is the byte
//! written, 1 otherwise.

use std::io::BufRead;
use std::process::ExitCode;

const MIB: usize = 1 << 20;

fn word(seed: u64, i: usize) -> u64 {
    let x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i as u64);
    (x ^ (x >> 29)) & 0xffff_ffff | (seed & 0xff) << 56
}

fn fill(buf: &mut [u64], seed: u64) {
    for (i, w) in buf.iter_mut().enumerate() {
        *w = word(seed, i);
    }
}

fn first_bad(buf: &[u64], seed: u64) -> Option<usize> {
    buf.iter()
        .enumerate()
        .position(|(i, w)| *w != word(seed, i))
}

struct Args {
    mib: usize,
    threads: usize,
    rounds: usize,
    hold: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        mib: 32,
        threads: 4,
        rounds: 3,
        hold: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a number"))
        };
        match flag.as_str() {
            "--mib" => a.mib = num("--mib")?,
            "--threads" => a.threads = num("--threads")?.max(1),
            "--rounds" => a.rounds = num("--rounds")?,
            "--hold" => a.hold = true,
            _ => {
                return Err(format!(
                    "unknown argument {flag:?}; usage: uzswap-memcheck [--mib N] [--threads N] [--rounds N] [--hold]"
                ))
            }
        }
    }
    Ok(a)
}

type Buffers = Vec<(Vec<u64>, u64)>;

fn check_all(t: usize, bufs: &[(Vec<u64>, u64)], when: &str) -> Result<(), String> {
    for (b, (buf, seed)) in bufs.iter().enumerate() {
        if let Some(i) = first_bad(buf, *seed) {
            return Err(format!(
                "thread {t} buffer {b} word {i} ({when}): read {:#x}, wrote {:#x}",
                buf[i],
                word(*seed, i)
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("uzswap-memcheck: {e}");
            return ExitCode::from(2);
        }
    };
    let filled = std::sync::Barrier::new(args.threads + 1);
    let resume = std::sync::Barrier::new(args.threads + 1);
    let result: Result<(), String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..args.threads)
            .map(|t| {
                let (filled, resume, a) = (&filled, &resume, &args);
                s.spawn(move || -> Result<(), String> {
                    let mut bufs: Buffers = (0..a.mib)
                        .map(|b| {
                            let seed = (t * 10_000 + b) as u64;
                            let mut v = vec![0u64; MIB / 8];
                            fill(&mut v, seed);
                            (v, seed)
                        })
                        .collect();
                    filled.wait();
                    let mut result = Ok(());
                    for round in 0..a.rounds {
                        if let Err(e) = check_all(t, &bufs, &format!("round {round}")) {
                            result = Err(e);
                            break;
                        }
                        for (b, (buf, seed)) in bufs.iter_mut().enumerate() {
                            if (b + round) % 2 == 0 {
                                *seed += 1_000_000;
                                fill(buf, *seed);
                            }
                        }
                    }
                    resume.wait();
                    result?;
                    check_all(t, &bufs, "last check")
                })
            })
            .collect();
        filled.wait();
        if args.hold {
            println!("ready {}", std::process::id());
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
        }
        resume.wait();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
    });
    match result {
        Ok(()) => {
            println!(
                "uzswap-memcheck: ok ({} MiB on {} threads, {} rounds)",
                args.mib * args.threads,
                args.threads,
                args.rounds
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("uzswap-memcheck: {e}");
            ExitCode::FAILURE
        }
    }
}
