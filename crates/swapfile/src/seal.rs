//! How a page on the file is protected, and the per-slot record that
//! proves it: [`Protection::Encrypted`] (the default) or
//! [`Protection::Checksum`].
//!
//! **Encrypted.** Every page is sealed with AES-256-GCM (ring's) under a
//! key drawn from the OS's random source when the device is made. The key
//! lives only in this process's memory, never on disk: whoever
//! reads the file — another user who got hold of a descriptor, a backup of
//! the disk, the next owner of its blocks — sees ciphertext. Each write
//! takes a fresh nonce from a per-device counter (so no nonce is ever used
//! twice under one key), and the slot's number is the associated data, so
//! a page moved to another slot, an old page written back over a newer one,
//! or a flipped bit all fail the tag, as a CRC mismatch did: the read is
//! [`Opened::Corrupt`], never wrong data. Per slot, memory holds the
//! nonce counter and the 16-byte tag: 24 bytes.
//!
//! **Checksum.** The page is written as it is, with its CRC32C in memory
//! (8 bytes per slot): bit rot is caught, nothing is hidden.
//!
//! Per slot, one word says whether the slot holds a valid page:
//! `VALID | crc` or `VALID | nonce counter`; 0 means nothing valid. Writes
//! clear it before the I/O and set it after a successful one; the tag is
//! stored before the word (release), read after it (acquire). Writes and
//! reads of one slot are serialised by the caller.

use common::PAGE_SIZE;
use ring::aead::{Aad, LessSafeKey, Nonce, Tag, UnboundKey, AES_256_GCM};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How pages on a swap file are protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protection {
    /// AES-256-GCM with a per-device key held only in memory: nobody who
    /// reads the file learns the pages, and a changed or misplaced page is
    /// caught.
    #[default]
    Encrypted,
    /// Plain pages, each checked by its CRC32C: bit rot is caught.
    Checksum,
}

impl std::str::FromStr for Protection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "encrypted" | "aes-gcm" => Ok(Self::Encrypted),
            "checksum" | "crc32c" | "plain" => Ok(Self::Checksum),
            _ => Err(format!(
                "swap protection {s:?}: expected encrypted or checksum"
            )),
        }
    }
}

/// A slot's word holds a valid page.
const VALID: u64 = 1 << 63;

/// Why a page could not be opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// No valid page in the slot.
    NotWritten,
    /// The bytes read are not the page written there.
    Corrupt,
}

/// A page sealed for a write, not yet valid: [`Seals::commit`] makes it so
/// once the write succeeded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sealed {
    word: u64,
    tag: [u64; 2],
}

/// The per-slot records of one device, and its key.
pub(crate) struct Seals {
    words: Box<[AtomicU64]>,
    /// Per slot, the GCM tag; empty when pages are only checksummed.
    tags: Box<[[AtomicU64; 2]]>,
    /// The key; `None` where pages are only checksummed.
    cipher: Option<LessSafeKey>,
    /// The next write's nonce counter (never 0, never reused).
    next_nonce: AtomicU64,
    /// Slots holding a valid page now.
    valid: AtomicUsize,
}

/// `n` zeroed values, from zeroed memory that values never written leave
/// untouched: the tables of a 4 GiB file are 24 MiB, and filling them
/// entry by entry made all of it resident in every process, whether or not
/// it ever wrote a page to the file.
fn zeroed<T: Zeroable>(n: usize) -> Box<[T]> {
    // SAFETY: `T: Zeroable` promises that all-zero bytes are a valid `T`.
    unsafe { Box::<[T]>::new_zeroed_slice(n).assume_init() }
}

/// Types whose all-zero bytes are a valid value.
///
/// # Safety
/// Implement only for such types.
unsafe trait Zeroable {}
// SAFETY: an all-zero `AtomicU64` is `AtomicU64::new(0)` (a `u64`'s layout).
unsafe impl Zeroable for AtomicU64 {}
// SAFETY: an array of zeroable values.
unsafe impl Zeroable for [AtomicU64; 2] {}

impl Seals {
    /// Records for `n` slots; under [`Protection::Encrypted`] a new random
    /// key (an error if the OS has no random source to give).
    pub(crate) fn new(n: usize, protection: Protection) -> std::io::Result<Self> {
        let (tags, cipher) = match protection {
            Protection::Encrypted => (zeroed(n), Some(new_cipher()?)),
            Protection::Checksum => (zeroed(0), None),
        };
        Ok(Self {
            words: zeroed(n),
            tags,
            cipher,
            next_nonce: AtomicU64::new(1),
            valid: AtomicUsize::new(0),
        })
    }

    /// Address and bytes of each per-slot table (for tests of residency).
    #[cfg(test)]
    pub(crate) fn tables(&self) -> Vec<(usize, usize)> {
        let mut t = vec![(
            self.words.as_ptr() as usize,
            std::mem::size_of_val(&*self.words),
        )];
        if !self.tags.is_empty() {
            t.push((
                self.tags.as_ptr() as usize,
                std::mem::size_of_val(&*self.tags),
            ));
        }
        t
    }

    pub(crate) fn protection(&self) -> Protection {
        if self.cipher.is_some() {
            Protection::Encrypted
        } else {
            Protection::Checksum
        }
    }

    /// Bytes of the records of slots `0..slots`, page-rounded.
    pub(crate) fn table_bytes(&self, slots: usize) -> usize {
        let per_slot = std::mem::size_of::<AtomicU64>()
            + if self.tags.is_empty() {
                0
            } else {
                std::mem::size_of::<[AtomicU64; 2]>()
            };
        (slots * per_slot).next_multiple_of(PAGE_SIZE)
    }

    /// The slot holds nothing valid from now on.
    pub(crate) fn clear(&self, idx: usize) {
        if self.words[idx].swap(0, Ordering::AcqRel) & VALID != 0 {
            self.valid.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Slots holding a valid page now.
    pub(crate) fn valid_slots(&self) -> usize {
        self.valid.load(Ordering::Relaxed)
    }

    pub(crate) fn is_valid(&self, idx: usize) -> bool {
        self.words[idx].load(Ordering::Acquire) & VALID != 0
    }

    /// Whether written pages must be copied to be sealed (encrypted), or
    /// go out as they are (checksummed).
    pub(crate) fn seals_a_copy(&self) -> bool {
        self.cipher.is_some()
    }

    /// Seals `page` for slot `slot`: under encryption `out` (a page) gets
    /// the ciphertext; under checksums `out` is left alone (the page is
    /// written as it is).
    pub(crate) fn seal(&self, slot: u64, page: &[u8], out: &mut [u8]) -> Sealed {
        let Some(cipher) = &self.cipher else {
            return Sealed {
                word: VALID | u64::from(crc32c::crc32c(page)),
                tag: [0; 2],
            };
        };
        let n = self.next_nonce.fetch_add(1, Ordering::Relaxed) & !VALID;
        out.copy_from_slice(page);
        let tag = cipher
            .seal_in_place_separate_tag(nonce(n), Aad::from(slot.to_le_bytes()), out)
            .expect("AES-GCM seals any buffer under 64 GiB");
        let (a, b) = tag.as_ref().split_at(8);
        Sealed {
            word: VALID | n,
            tag: [
                u64::from_le_bytes(a.try_into().unwrap_or_default()),
                u64::from_le_bytes(b.try_into().unwrap_or_default()),
            ],
        }
    }

    /// The write of `sealed` to slot index `idx` succeeded: it is valid.
    pub(crate) fn commit(&self, idx: usize, sealed: Sealed) {
        if let Some(tag) = self.tags.get(idx) {
            tag[0].store(sealed.tag[0], Ordering::Relaxed);
            tag[1].store(sealed.tag[1], Ordering::Relaxed);
        }
        if self.words[idx].swap(sealed.word, Ordering::AcqRel) & VALID == 0 {
            self.valid.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The word of slot index `idx`, checked valid: read before the I/O,
    /// so that a slot cleared meanwhile reads as not written.
    pub(crate) fn valid_word(&self, idx: usize) -> Result<u64, Opened> {
        let word = self.words[idx].load(Ordering::Acquire);
        if word & VALID == 0 {
            Err(Opened::NotWritten)
        } else {
            Ok(word)
        }
    }

    /// Checks (and decrypts in place) `page`, read from slot `slot` (index
    /// `idx`) whose word was `word`.
    pub(crate) fn open(
        &self,
        idx: usize,
        slot: u64,
        word: u64,
        page: &mut [u8],
    ) -> Result<(), Opened> {
        let Some(cipher) = &self.cipher else {
            return if u64::from(crc32c::crc32c(page)) == word & !VALID {
                Ok(())
            } else {
                Err(Opened::Corrupt)
            };
        };
        let t = &self.tags[idx];
        let mut tag = [0u8; 16];
        tag[..8].copy_from_slice(&t[0].load(Ordering::Relaxed).to_le_bytes());
        tag[8..].copy_from_slice(&t[1].load(Ordering::Relaxed).to_le_bytes());
        cipher
            .open_in_place_separate_tag(
                nonce(word & !VALID),
                Aad::from(slot.to_le_bytes()),
                Tag::from(tag),
                page,
                0..,
            )
            .map(|_| ())
            .map_err(|_| Opened::Corrupt)
    }
}

/// The 96-bit nonce of counter `n`.
fn nonce(n: u64) -> Nonce {
    let mut bytes = [0u8; 12];
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    Nonce::assume_unique_for_key(bytes)
}

/// A cipher under a fresh 256-bit key from the OS's random source
/// (`getrandom(2)`); the key bytes are wiped once the cipher holds them.
fn new_cipher() -> std::io::Result<LessSafeKey> {
    use ring::rand::SecureRandom;
    let mut key = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| std::io::Error::other("no random key for the swap file's encryption"))?;
    let cipher = UnboundKey::new(&AES_256_GCM, &key).map(LessSafeKey::new);
    // Not optimised away: a volatile write of every byte.
    for b in key.iter_mut() {
        // SAFETY: `b` is a valid, aligned byte of `key`.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
    cipher.map_err(|_| std::io::Error::other("AES-256-GCM key rejected"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(tag: u8) -> Vec<u8> {
        (0..PAGE_SIZE)
            .map(|i| (i as u8).wrapping_mul(13) ^ tag)
            .collect()
    }

    #[test]
    fn sealed_pages_hide_their_bytes_and_open_only_where_written() {
        let seals = Seals::new(4, Protection::Encrypted).unwrap();
        let p = page(1);
        let mut out = vec![0; PAGE_SIZE];
        let sealed = seals.seal(2, &p, &mut out);
        assert_ne!(out, p);
        assert!(
            !out.windows(16)
                .any(|w| p.windows(16).take(64).any(|q| q == w)),
            "no 16 bytes of the page show in the ciphertext"
        );
        seals.commit(2, sealed);
        let word = seals.valid_word(2).unwrap();
        let mut back = out.clone();
        seals.open(2, 2, word, &mut back).unwrap();
        assert_eq!(back, p);
        // The same bytes presented as another slot's, or with a bit flipped.
        let mut moved = out.clone();
        assert_eq!(seals.open(2, 3, word, &mut moved), Err(Opened::Corrupt));
        let mut flipped = out.clone();
        flipped[100] ^= 4;
        assert_eq!(seals.open(2, 2, word, &mut flipped), Err(Opened::Corrupt));
        // An older page of the same slot, written back over the newer one.
        let mut old = vec![0; PAGE_SIZE];
        let first = seals.seal(2, &page(7), &mut old);
        seals.commit(2, first);
        let mut newer = vec![0; PAGE_SIZE];
        let second = seals.seal(2, &page(8), &mut newer);
        seals.commit(2, second);
        let word = seals.valid_word(2).unwrap();
        assert_eq!(seals.open(2, 2, word, &mut old), Err(Opened::Corrupt));
        seals.open(2, 2, word, &mut newer).unwrap();
        assert_eq!(newer, page(8));
        seals.clear(2);
        assert_eq!(seals.valid_word(2), Err(Opened::NotWritten));
    }

    #[test]
    fn two_devices_never_share_a_key_and_nonces_never_repeat() {
        let (a, b) = (
            Seals::new(1, Protection::Encrypted).unwrap(),
            Seals::new(1, Protection::Encrypted).unwrap(),
        );
        let p = page(3);
        let (mut x, mut y) = (vec![0; PAGE_SIZE], vec![0; PAGE_SIZE]);
        a.seal(0, &p, &mut x);
        b.seal(0, &p, &mut y);
        assert_ne!(x, y, "the same page, slot and counter under two keys");
        let mut z = vec![0; PAGE_SIZE];
        let s1 = a.seal(0, &p, &mut z);
        let s2 = a.seal(0, &p, &mut y);
        assert_ne!(s1.word, s2.word);
        assert_ne!(z, y, "the same page twice under one key");
    }

    #[test]
    fn checksummed_pages_are_written_as_they_are() {
        let seals = Seals::new(2, Protection::Checksum).unwrap();
        assert!(!seals.seals_a_copy());
        let p = page(5);
        let mut unused = vec![0; PAGE_SIZE];
        let sealed = seals.seal(1, &p, &mut unused);
        assert_eq!(unused, vec![0; PAGE_SIZE]);
        seals.commit(1, sealed);
        let word = seals.valid_word(1).unwrap();
        let mut back = p.clone();
        seals.open(1, 1, word, &mut back).unwrap();
        back[9] ^= 1;
        assert_eq!(seals.open(1, 1, word, &mut back), Err(Opened::Corrupt));
        assert_eq!(seals.table_bytes(1000), 2 * PAGE_SIZE);
        let enc = Seals::new(2, Protection::Encrypted).unwrap();
        assert_eq!(
            enc.table_bytes(1000),
            24_000usize.next_multiple_of(PAGE_SIZE)
        );
    }
}
