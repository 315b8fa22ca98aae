// A statically linked Rust program (musl): fills a buffer, hashes it in
// two passes, reads and writes it at random (four words a page), then
// builds and drops maps in four threads. Prints what it computed.
use std::collections::HashMap;

fn main() {
    let bytes: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64 << 20);
    let words = bytes / 8;
    let mut v: Vec<u64> = (0..words as u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .collect();
    let mut hash = 0u64;
    for pass in 0..2u64 {
        for w in v.iter_mut() {
            *w = w.rotate_left(7) ^ pass;
            hash = hash.wrapping_mul(31).wrapping_add(*w);
        }
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..bytes / 4096 * 4 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = (x % words as u64) as usize;
        v[i] = v[i].wrapping_add(x);
        hash ^= v[i];
    }
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                let m: HashMap<u64, String> =
                    (0..50_000u64).map(|k| (k * 31 + t, format!("v{k}"))).collect();
                m.values().map(|s| s.len() as u64).sum::<u64>()
            })
        })
        .collect();
    let maps: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let total = v.iter().fold(0u64, |a, &b| a.wrapping_add(b));
    println!("hash {hash:016x} total {total:016x} maps {maps}");
}
