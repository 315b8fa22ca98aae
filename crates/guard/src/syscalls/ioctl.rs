//! `ioctl` arguments: the size and direction of a request's buffer, from
//! its `_IOC` encoding or from the table of legacy requests (terminals,
//! sockets, block devices) that predate it.

use super::sizes::{IFREQ, KERNEL_TERMIO, KERNEL_TERMIOS, WINSIZE};
use super::Access;

/// What an `ioctl` request does with its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoctlArg {
    /// The argument is a value.
    None,
    /// The argument points to `len` bytes accessed so.
    Buffer(u64, Access),
    /// The argument may be a pointer to something the table cannot size.
    Unknown,
}

/// `_IOC` fields of an ioctl request: direction (bits 30-31), size (bits
/// 16-29), type (bits 8-15), number (bits 0-7).
pub fn ioc_decode(req: u32) -> (u32, u32, u32, u32) {
    (
        req >> 30,
        (req >> 16) & 0x3fff,
        (req >> 8) & 0xff,
        req & 0xff,
    )
}

/// The size and direction of ioctl `req`'s argument: the `_IOC` encoding
/// (`_IOC_WRITE` = the kernel reads, `_IOC_READ` = the kernel writes), or
/// the table of legacy requests (terminals, sockets, files) that predate it.
pub fn ioctl_buffer(req: u32) -> IoctlArg {
    use Access::{KernelReads as R, KernelReadsWrites as RW, KernelWrites as W};
    let legacy = match req {
        0x5401 => Some((KERNEL_TERMIOS, W)),          // TCGETS
        0x5402..=0x5404 => Some((KERNEL_TERMIOS, R)), // TCSETS, TCSETSW, TCSETSF
        0x5405 => Some((KERNEL_TERMIO, W)),           // TCGETA
        0x5406..=0x5408 => Some((KERNEL_TERMIO, R)),  // TCSETA, TCSETAW, TCSETAF
        0x5409..=0x540e | 0x5422 | 0x5425 | 0x5427 | 0x5428 => Some((0, R)), // value/none
        0x540f => Some((4, W)),                       // TIOCGPGRP
        0x5410 => Some((4, R)),                       // TIOCSPGRP
        0x5411 => Some((4, W)),                       // TIOCOUTQ
        0x5412 => Some((1, R)),                       // TIOCSTI
        0x5413 => Some((WINSIZE, W)),                 // TIOCGWINSZ
        0x5414 => Some((WINSIZE, R)),                 // TIOCSWINSZ
        0x5415 => Some((4, W)),                       // TIOCMGET
        0x5416..=0x5418 => Some((4, R)),              // TIOCMBIS, TIOCMBIC, TIOCMSET
        0x5419 => Some((4, W)),                       // TIOCGSOFTCAR
        0x541a => Some((4, R)),                       // TIOCSSOFTCAR
        0x541b => Some((4, W)),                       // FIONREAD / TIOCINQ
        0x541d => Some((0, R)),                       // TIOCCONS
        0x541e => Some((72, W)),                      // TIOCGSERIAL
        0x541f => Some((72, R)),                      // TIOCSSERIAL
        0x5420 | 0x5421 | 0x5423 => Some((4, R)),     // TIOCPKT, FIONBIO, TIOCSETD
        0x5424 => Some((4, W)),                       // TIOCGETD
        0x5429 => Some((4, W)),                       // TIOCGSID
        0x5450 | 0x5451 => Some((0, R)),              // FIONCLEX, FIOCLEX
        0x5452 => Some((4, R)),                       // FIOASYNC
        0x5456 => Some((KERNEL_TERMIOS, W)),          // TIOCGLCKTRMIOS
        0x5457 => Some((KERNEL_TERMIOS, R)),          // TIOCSLCKTRMIOS
        0x5459 => Some((4, W)),                       // TIOCSERGETLSR
        0x545c => Some((0, R)),                       // TIOCMIWAIT
        0x545d => Some((80, W)),                      // TIOCGICOUNT
        0x5460 => Some((8, W)),                       // FIOQSIZE
        0x8901 | 0x8902 => Some((4, R)),              // FIOSETOWN, SIOCSPGRP
        0x8903..=0x8905 => Some((4, W)),              // FIOGETOWN, SIOCGPGRP, SIOCATMARK
        0x8906 | 0x8907 => Some((16, W)),             // SIOCGSTAMP, SIOCGSTAMPNS (64-bit)
        0x8910 | 0x8913 | 0x8915 | 0x8917 | 0x8919 | 0x891b | 0x891d | 0x8921 | 0x8927 | 0x8933
        | 0x8942 => Some((IFREQ, RW)), // SIOCGIF*: struct ifreq
        0x8914 | 0x8916 | 0x8918 | 0x891a | 0x891c | 0x8922 | 0x8924 | 0x8934 | 0x8943 => {
            Some((IFREQ, R)) // SIOCSIF*
        }
        0x1260 => Some((8, W)),          // BLKGETSIZE
        0x1268 => Some((4, W)),          // BLKSSZGET
        0x125d => Some((4, R)),          // BLKROSET
        0x125e => Some((4, W)),          // BLKROGET
        0x125f | 0x1261 => Some((0, R)), // BLKRRPART, BLKFLSBUF
        _ => None,
    };
    if let Some((len, access)) = legacy {
        return if len == 0 {
            IoctlArg::None
        } else {
            IoctlArg::Buffer(len, access)
        };
    }
    let (dir, size, _type, _nr) = ioc_decode(req);
    match dir {
        1 if size > 0 => IoctlArg::Buffer(size as u64, R),
        2 if size > 0 => IoctlArg::Buffer(size as u64, W),
        3 if size > 0 => IoctlArg::Buffer(size as u64, RW),
        // _IOC_NONE, or a direction without a size: legacy requests we do not
        // know may still take pointers.
        _ => IoctlArg::Unknown,
    }
}
