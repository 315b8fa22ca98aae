//! LZO1X, written from the published bitstream description: a fast greedy
//! encoder (LZO1X-1 class: one hash probe per position) and a bounds-checked
//! decoder, for bitstream version 0 (`lzo`) and version 1 (`lzo-rle`, the
//! kernel's zram default, which also encodes runs of zero bytes).
//!
//! ## Bitstream (summary)
//!
//! The first byte `b > 17` is a literal run of `b - 17` bytes. In version 1
//! the stream starts `17, 1`. After that, every instruction ends with 2
//! "state" bits `S`: the number (0..=3) of literals that follow it directly.
//!
//! | byte            | meaning (length, distance)                                  |
//! |-----------------|-------------------------------------------------------------|
//! | `0000 LLLL`     | after S = 0: literal run of `3 + L` (L = 0: 18 + extension)  |
//! | `0001 HLLL` +2  | copy `2 + L`, distance `16384 + H·16384 + D`; D = 0 ends     |
//! | `001L LLLL` +2  | copy `2 + L` (L = 0: 33 + ext.), distance `D + 1` ≤ 16384    |
//! | `01LD DDSS` +1  | copy `3 + L` (3..=4), distance `(H << 3) + D + 1` ≤ 2048     |
//! | `1LLD DDSS` +1  | copy `5 + L` (5..=8), distance as above                      |
//!
//! Extensions are zero bytes (each +255) and a final non-zero byte. The
//! 2-byte trailers are little-endian `D << 2 | S`. In version 1 a
//! `0001 1LLL` with all distance bits set is a zero run of
//! `((X << 3) | L) + 4` bytes, X being one more byte. The stream ends with
//! `0x11 0x00 0x00`.
//!
//! This encoder never emits the short `0000 DDSS` copies after literals and
//! keeps distances ≤ 16384. Both rules keep it clear of version 1's
//! reserved combinations.

use crate::codec::Codec;
use crate::{Algorithm, CompressError};

const HASH_BITS: u32 = 13;
const MIN_MATCH: usize = 4;
const MAX_DISTANCE: usize = 16384;
const M2_MAX_DISTANCE: usize = 2048;
/// Shortest zero run the format can express.
const RLE_MIN: usize = 4;
const RLE_MAX: usize = 2051;
/// Shortest zero run the encoder encodes as a run: a run costs 4 bytes,
/// a nearby copy of up to 8 bytes costs 2, so short runs go as copies.
const RLE_USE: usize = 16;
// The encoder looks for runs only where eight zero bytes start.
const _: () = assert!(RLE_USE >= 8);

/// LZO1X with a fast encoder; `rle` selects bitstream version 1 (`lzo-rle`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lzo1x {
    pub rle: bool,
}

/// The match finder's hash table: the last position seen for each hash of
/// four bytes. Cleared at each call (16 KiB of vector stores), as LZO1X-1
/// clears its dictionary, so that an entry is always a position of this
/// call (0 for an empty one, which can only match where position 0 does:
/// a word equal to position 0's falls in position 0's bucket). The probe
/// then has one unpredictable branch, word equal or not. Tagging entries
/// with a per-call base instead, to skip the clear, made telling an older
/// call's entry from this call's a second unpredictable branch, and the
/// encoder 5% slower (4.8–5.0 against 4.6–4.7 µs a page on the corpus,
/// lzo-rle).
#[derive(Debug)]
pub struct MatchTable {
    /// Sized by type: its index never needs a bounds check.
    slots: Box<[u16; 1 << HASH_BITS]>,
}

impl Codec for Lzo1x {
    type Ctx = MatchTable;

    fn algorithm(&self) -> Algorithm {
        if self.rle {
            Algorithm::LzoRle
        } else {
            Algorithm::Lzo
        }
    }

    fn new_ctx(&self) -> Self::Ctx {
        MatchTable {
            slots: Box::new([0u16; 1 << HASH_BITS]),
        }
    }

    fn compress(
        &self,
        table: &mut Self::Ctx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        let mut enc = Encoder {
            out: dst,
            pos: 0,
            state_at: None,
            algorithm: self.algorithm(),
        };
        encode(&mut enc, table, src, self.rle)?;
        Ok(enc.pos)
    }

    fn decompress(
        &self,
        _: &mut Self::Ctx,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, CompressError> {
        decode(src, dst).map_err(|msg| CompressError::Corrupt {
            algorithm: self.algorithm().to_string(),
            msg: msg.into(),
        })
    }
}

struct Encoder<'a> {
    out: &'a mut [u8],
    pos: usize,
    /// Where the last instruction's S bits live, to record trailing literals.
    state_at: Option<usize>,
    algorithm: Algorithm,
}

impl Encoder<'_> {
    #[cold]
    #[inline(never)]
    fn full(&self) -> CompressError {
        CompressError::Failed {
            algorithm: self.algorithm.to_string(),
            msg: "output buffer too small".into(),
        }
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) -> Result<(), CompressError> {
        match self.out.get_mut(self.pos) {
            Some(slot) => {
                *slot = b;
                self.pos += 1;
                Ok(())
            }
            None => Err(self.full()),
        }
    }

    #[inline(always)]
    fn bytes(&mut self, bs: &[u8]) -> Result<(), CompressError> {
        let end = self.pos + bs.len();
        match self.out.get_mut(self.pos..end) {
            Some(out) => {
                out.copy_from_slice(bs);
                self.pos = end;
                Ok(())
            }
            None => Err(self.full()),
        }
    }

    /// `n >= 1` as zero bytes worth 255 each and a final non-zero byte.
    fn extension(&mut self, n: usize) -> Result<(), CompressError> {
        let zeros = (n - 1) / 255;
        for _ in 0..zeros {
            self.byte(0)?;
        }
        self.byte((n - zeros * 255) as u8)
    }

    #[inline]
    fn literals(&mut self, lits: &[u8], first: bool) -> Result<(), CompressError> {
        let n = lits.len();
        if n == 0 {
            return Ok(());
        }
        if first && n <= 238 {
            self.byte(17 + n as u8)?;
        } else if n <= 3 {
            let at = self
                .state_at
                .expect("short literal runs follow an instruction");
            self.out[at] |= n as u8;
        } else if n <= 18 {
            self.byte((n - 3) as u8)?;
        } else {
            self.byte(0)?;
            self.extension(n - 18)?;
        }
        self.state_at = None;
        self.bytes(lits)
    }

    /// The literals `src[start..end]`, copied with one fixed 16-byte move
    /// when the run is at most 16 bytes long and both buffers have room
    /// (the bytes past the run are overwritten by what the encoder writes
    /// next).
    #[inline(always)]
    fn literals_of(
        &mut self,
        src: &[u8],
        start: usize,
        end: usize,
        first: bool,
    ) -> Result<(), CompressError> {
        let n = end - start;
        if n == 0 {
            return Ok(());
        }
        if n <= 3 && !first {
            if let (Some(at), Some(from), Some(to)) = (
                self.state_at,
                src.get(start..start + 16),
                self.out.get_mut(self.pos..self.pos + 16),
            ) {
                to.copy_from_slice(from);
                self.out[at] |= n as u8;
                self.state_at = None;
                self.pos += n;
                return Ok(());
            }
        } else if n <= 16 && !first {
            // One length byte, then the run with the same fixed move (as
            // LZO1X-1 does for runs of 4 to 16).
            if let (Some(from), Some(to)) = (
                src.get(start..start + 16),
                self.out.get_mut(self.pos..self.pos + 17),
            ) {
                to[0] = (n - 3) as u8;
                to[1..].copy_from_slice(from);
                self.state_at = None;
                self.pos += 1 + n;
                return Ok(());
            }
        }
        self.literals(&src[start..end], first)
    }

    #[inline]
    fn copy(&mut self, len: usize, dist: usize) -> Result<(), CompressError> {
        debug_assert!(len >= 3 && (1..=MAX_DISTANCE).contains(&dist));
        let d = dist - 1;
        if len <= 8 && dist <= M2_MAX_DISTANCE {
            let head = if len <= 4 {
                0x40 | ((len - 3) << 5)
            } else {
                0x80 | ((len - 5) << 5)
            };
            let at = self.pos;
            let Some(out) = self.out.get_mut(at..at + 2) else {
                return Err(self.full());
            };
            out[0] = (head | ((d & 7) << 2)) as u8;
            out[1] = (d >> 3) as u8;
            self.state_at = Some(at);
            self.pos = at + 2;
            return Ok(());
        }
        if len - 2 <= 31 {
            self.byte(0x20 | (len - 2) as u8)?;
        } else {
            self.byte(0x20)?;
            self.extension(len - 2 - 31)?;
        }
        self.trailer(d)
    }

    /// The little-endian `D << 2 | S` word of long copies.
    fn trailer(&mut self, d: usize) -> Result<(), CompressError> {
        self.state_at = Some(self.pos);
        self.byte(((d & 0x3f) << 2) as u8)?;
        self.byte((d >> 6) as u8)
    }

    fn zero_run(&mut self, len: usize) -> Result<(), CompressError> {
        let n = len - RLE_MIN;
        self.byte(0x18 | (n & 7) as u8)?;
        self.state_at = Some(self.pos);
        self.bytes(&[0xfc, 0xff, (n >> 3) as u8])
    }
}

/// Zero bytes at `src[i..]`, up to [`RLE_MAX`], eight at a time: most
/// zeros in a page are short runs (the high bytes of pointers and
/// integers), which this sees in one load.
fn zero_run_len(src: &[u8], i: usize) -> usize {
    let mut n = 0;
    while n < RLE_MAX {
        let Some(bytes) = src.get(i + n..i + n + 8) else {
            break;
        };
        let word = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
        if word != 0 {
            return (n + (word.trailing_zeros() / 8) as usize).min(RLE_MAX);
        }
        n += 8;
    }
    let tail = src[(i + n).min(src.len())..]
        .iter()
        .take(RLE_MAX.saturating_sub(n))
        .take_while(|&&b| b == 0)
        .count();
    (n + tail).min(RLE_MAX)
}

fn hash(word: u32) -> usize {
    (word.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

fn read_u32(src: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(src[i..i + 4].try_into().expect("4 bytes"))
}

/// How many bytes `src[a..]` and `src[b..]` have in common (`a < b`),
/// eight at a time.
fn common_prefix(src: &[u8], a: usize, b: usize) -> usize {
    let mut n = 0;
    while b + n + 8 <= src.len() {
        let x = u64::from_le_bytes(src[a + n..a + n + 8].try_into().expect("8 bytes"));
        let y = u64::from_le_bytes(src[b + n..b + n + 8].try_into().expect("8 bytes"));
        let diff = x ^ y;
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    n + src[b + n..]
        .iter()
        .zip(&src[a + n..])
        .take_while(|(x, y)| x == y)
        .count()
}

fn encode(
    enc: &mut Encoder<'_>,
    table: &mut MatchTable,
    src: &[u8],
    rle: bool,
) -> Result<(), CompressError> {
    if src.len() > u16::MAX as usize {
        return Err(CompressError::TooLarge(src.len()));
    }
    let slots = &mut *table.slots;
    slots.fill(0);
    if rle {
        enc.bytes(&[17, 1])?;
    }
    let (mut lit_start, mut i) = (0usize, 0usize);
    let mut first = true;
    while i + MIN_MATCH <= src.len() {
        let word = read_u32(src, i);
        // A run worth encoding starts with eight zero bytes: the word
        // loaded for the hash rules out most short runs (the high bytes of
        // pointers) for free, as in the kernel's lzo-rle.
        if rle && word == 0 && src.get(i + 4..i + 8).is_some_and(|w| w == [0u8; 4]) {
            let run = zero_run_len(src, i);
            // A stream cannot open with a copy or run: the first byte would
            // read as a literal count. Such zeros go out as literals.
            if run >= RLE_USE && !(first && lit_start == i) {
                enc.literals(&src[lit_start..i], first)?;
                first = false;
                enc.zero_run(run)?;
                i += run;
                lit_start = i;
                continue;
            }
        }
        let h = hash(word);
        // An earlier position of this call, or 0 (empty).
        let c = usize::from(slots[h]);
        // `i < 2^16`: `encode` refuses longer inputs.
        slots[h] = i as u16;
        // (At `i == 0`, `c` is `i` itself: no match.)
        let found = i > 0 && i - c <= MAX_DISTANCE && read_u32(src, c) == word;
        if !found {
            // The longer the literal run, the faster the search moves on
            // (as LZO1X-1 does): incompressible data costs little.
            i += 1 + ((i - lit_start) >> 5);
            continue;
        }
        let len = MIN_MATCH + common_prefix(src, c + MIN_MATCH, i + MIN_MATCH);
        enc.literals_of(src, lit_start, i, first)?;
        first = false;
        enc.copy(len, i - c)?;
        i += len;
        lit_start = i;
    }
    enc.literals(&src[lit_start..], first)?;
    enc.bytes(&[0x11, 0, 0])
}

/// Decodes a version 0 or 1 stream into `dst`; returns the bytes written.
pub(crate) fn decode(src: &[u8], dst: &mut [u8]) -> Result<usize, &'static str> {
    let mut r = Reader { src, ip: 0 };
    let (mut op, mut state) = (0usize, 0usize);
    let version = if src.len() >= 5 && src[0] == 17 {
        r.ip = 2;
        src[1]
    } else {
        0
    };
    if version > 1 {
        return Err("unknown bitstream version");
    }
    if r.peek()? > 17 {
        let n = usize::from(r.next()? - 17);
        op = copy_literals(&mut r, dst, op, n)?;
        state = n.min(4);
    }
    loop {
        let t = usize::from(r.next()?);
        let (len, dist, s);
        if t < 16 {
            match state {
                0 => {
                    let n = if t == 0 { 18 + r.extension()? } else { t + 3 };
                    op = copy_literals(&mut r, dst, op, n)?;
                    state = 4;
                    continue;
                }
                1..=3 => (len, dist, s) = (2, (usize::from(r.next()?) << 2) + (t >> 2) + 1, t & 3),
                _ => (len, dist, s) = (3, (usize::from(r.next()?) << 2) + (t >> 2) + 2049, t & 3),
            }
        } else if t < 32 {
            // Version 1: a zero run is `0001 1LLL`, then 0xfffc|S, then X.
            if version == 1 && t & 0xf8 == 0x18 && r.peek_le16()? & 0xfffc == 0xfffc {
                let word = r.le16()?;
                let n = ((usize::from(r.next()?) << 3) | (t & 7)) + RLE_MIN;
                dst.get_mut(op..op + n)
                    .ok_or("zero run overruns output")?
                    .fill(0);
                op += n;
                state = word & 3;
                op = copy_literals(&mut r, dst, op, state)?;
                continue;
            }
            let l = if t & 7 == 0 {
                9 + r.extension()?
            } else {
                (t & 7) + 2
            };
            let word = r.le16()?;
            let d = ((t & 8) << 11) + (word >> 2);
            if d == 0 {
                return if r.ip == src.len() {
                    Ok(op)
                } else {
                    Err("data after end marker")
                };
            }
            (len, dist, s) = (l, d + 16384, word & 3);
        } else if t < 64 {
            let l = if t & 31 == 0 {
                33 + r.extension()?
            } else {
                (t & 31) + 2
            };
            let word = r.le16()?;
            (len, dist, s) = (l, (word >> 2) + 1, word & 3);
        } else {
            let l = if t < 128 {
                3 + ((t >> 5) & 1)
            } else {
                5 + ((t >> 5) & 3)
            };
            (len, dist, s) = (l, (usize::from(r.next()?) << 3) + ((t >> 2) & 7) + 1, t & 3);
        }
        op = copy_match(dst, op, len, dist)?;
        op = copy_literals(&mut r, dst, op, s)?;
        state = s;
    }
}

struct Reader<'a> {
    src: &'a [u8],
    ip: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Result<u8, &'static str> {
        self.src.get(self.ip).copied().ok_or("truncated input")
    }
    fn next(&mut self) -> Result<u8, &'static str> {
        let b = self.peek()?;
        self.ip += 1;
        Ok(b)
    }
    fn peek_le16(&self) -> Result<usize, &'static str> {
        let b = self
            .src
            .get(self.ip..self.ip + 2)
            .ok_or("truncated input")?;
        Ok(usize::from(b[0]) | (usize::from(b[1]) << 8))
    }
    fn le16(&mut self) -> Result<usize, &'static str> {
        Ok(usize::from(self.next()?) | (usize::from(self.next()?) << 8))
    }
    fn extension(&mut self) -> Result<usize, &'static str> {
        let mut n = 0usize;
        loop {
            match self.next()? {
                0 => {
                    n = n
                        .checked_add(255)
                        .filter(|&n| n < 1 << 24)
                        .ok_or("length extension too long")?
                }
                b => return Ok(n + usize::from(b)),
            }
        }
    }
}

fn copy_literals(
    r: &mut Reader<'_>,
    dst: &mut [u8],
    op: usize,
    n: usize,
) -> Result<usize, &'static str> {
    // Most runs are short: with 16 bytes of room on both sides, one fixed
    // 16-byte move (the bytes past `n` are overwritten by what follows).
    if n <= 16 {
        if let (Some(from), Some(to)) = (r.src.get(r.ip..r.ip + 16), dst.get_mut(op..op + 16)) {
            to.copy_from_slice(from);
            r.ip += n;
            return Ok(op + n);
        }
    }
    let src = r
        .src
        .get(r.ip..r.ip + n)
        .ok_or("literal run overruns input")?;
    dst.get_mut(op..op + n)
        .ok_or("literal run overruns output")?
        .copy_from_slice(src);
    r.ip += n;
    Ok(op + n)
}

fn copy_match(dst: &mut [u8], op: usize, len: usize, dist: usize) -> Result<usize, &'static str> {
    let from = op
        .checked_sub(dist)
        .ok_or("match reaches before the output")?;
    if op + len > dst.len() {
        return Err("match overruns output");
    }
    if dist >= 8 && op + len + 8 <= dst.len() {
        // Eight bytes at a time, each move reading only bytes written
        // before it (`dist >= 8`); the last may write up to 7 bytes past
        // the match, which what follows overwrites.
        let mut k = 0;
        while k < len {
            let chunk: [u8; 8] = dst[from + k..from + k + 8].try_into().expect("8 bytes");
            dst[op + k..op + k + 8].copy_from_slice(&chunk);
            k += 8;
        }
    } else if dist >= len {
        dst.copy_within(from..from + len, op);
    } else {
        // An overlapping copy repeats the last `dist` bytes: byte by byte.
        for k in 0..len {
            dst[op + k] = dst[from + k];
        }
    }
    Ok(op + len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;
    use proptest::prelude::*;

    fn enc(src: &[u8], rle: bool) -> Vec<u8> {
        let c = Lzo1x { rle };
        let mut out = vec![0u8; src.len() + src.len() / 16 + 64 + 3 + 8];
        let n = c.compress(&mut c.new_ctx(), src, &mut out).unwrap();
        out.truncate(n);
        out
    }

    fn dec(z: &[u8], len: usize) -> Result<Vec<u8>, &'static str> {
        let mut out = vec![0u8; len];
        let n = decode(z, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn corpus_round_trips_both_versions_and_cross_checks_lzokay() {
        for (i, page) in Corpus::sample().unwrap().pages().enumerate() {
            let v0 = enc(page, false);
            assert_eq!(dec(&v0, 4096).unwrap(), page);
            // An independent decoder accepts our version 0 output…
            let mut out = vec![0u8; 4096];
            assert_eq!(lzokay::decompress::decompress(&v0, &mut out), Ok(4096));
            assert_eq!(out, page);
            // …and our decoder accepts an independent encoder's output
            // (a slow exhaustive encoder: every 8th page).
            if i % 8 == 0 {
                let theirs = lzokay::compress::compress(page).unwrap();
                assert_eq!(dec(&theirs, 4096).unwrap(), page);
            }
            let v1 = enc(page, true);
            assert_eq!(&v1[..2], &[17, 1]);
            assert_eq!(dec(&v1, 4096).unwrap(), page);
        }
    }

    #[test]
    fn zero_runs_shrink_with_rle() {
        let mut page = vec![0u8; 4096];
        page[100..110].copy_from_slice(b"0123456789");
        let (v0, v1) = (enc(&page, false), enc(&page, true));
        assert!(v1.len() < 40, "rle: {} bytes", v1.len());
        assert!(v1.len() < v0.len());
        assert_eq!(dec(&v1, 4096).unwrap(), page);
        assert_eq!(
            dec(&enc(&[0u8; 4096], true), 4096).unwrap(),
            vec![0u8; 4096]
        );
    }

    #[test]
    fn tiny_and_odd_inputs() {
        for src in [
            &b""[..],
            b"a",
            b"abc",
            b"abcd",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            &[0u8; 5],
        ] {
            for rle in [false, true] {
                assert_eq!(dec(&enc(src, rle), 64).unwrap(), src, "{src:?} rle={rle}");
            }
        }
    }

    /// A table reused across calls (never cleared between most of them)
    /// gives the same output as a fresh one, across the wrap of its values
    /// and after an input larger than a page.
    #[test]
    fn a_reused_match_table_encodes_as_a_fresh_one() {
        let corpus = Corpus::sample().unwrap();
        let pages: Vec<&[u8]> = corpus.pages().take(100).collect();
        let big: Vec<u8> = pages.concat()[..40_000].to_vec();
        let c = Lzo1x { rle: true };
        let mut ctx = c.new_ctx();
        let mut out = vec![0u8; 2 * 40_000];
        for (i, &page) in pages.iter().enumerate() {
            let src: &[u8] = if i == 37 { &big } else { page };
            let n = c.compress(&mut ctx, src, &mut out).unwrap();
            assert_eq!(&out[..n], &enc(src, true)[..], "call {i}");
            // Odd lengths too: the next call's base moves by any amount.
            let m = c
                .compress(&mut ctx, &src[..src.len() / 3], &mut out)
                .unwrap();
            assert_eq!(
                &out[..m],
                &enc(&src[..src.len() / 3], true)[..],
                "call {i}, a third"
            );
        }
    }

    /// The decoder's fast paths write past a run when there is room; the
    /// bytes it returns are the same with room and without.
    #[test]
    fn decoding_with_room_past_the_end_gives_the_same_bytes() {
        for page in Corpus::sample().unwrap().pages() {
            let z = enc(page, true);
            let mut roomy = vec![0xeeu8; 4096 + 64];
            assert_eq!(decode(&z, &mut roomy), Ok(4096));
            assert_eq!(&roomy[..4096], page);
            assert_eq!(dec(&z, 4096).unwrap(), page);
            // One byte short: an error, not a panic or a partial page.
            assert!(decode(&z, &mut vec![0u8; 4095]).is_err());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_data_round_trips_with_room(data in prop::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..5000), rle: bool, room in 0usize..40) {
            let z = enc(&data, rle);
            let mut out = vec![0u8; data.len() + room];
            let n = decode(&z, &mut out).unwrap();
            prop_assert_eq!(&out[..n], &data[..]);
        }

        #[test]
        fn arbitrary_data_round_trips(data in prop::collection::vec(prop_oneof![Just(0u8), Just(b'a'), any::<u8>()], 0..5000), rle: bool) {
            let z = enc(&data, rle);
            prop_assert_eq!(dec(&z, data.len()).unwrap(), data);
        }

        #[test]
        fn zero_runs_are_measured_as_byte_by_byte(data in prop::collection::vec(prop_oneof![Just(0u8), Just(0u8), Just(0u8), any::<u8>()], 1..3000), at in any::<prop::sample::Index>()) {
            let i = at.index(data.len());
            let naive = data[i..].iter().take(RLE_MAX).take_while(|&&b| b == 0).count();
            prop_assert_eq!(zero_run_len(&data, i), naive);
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..300)) {
            let mut out = vec![0u8; 4096];
            let _ = decode(&data, &mut out);
        }
    }
}
