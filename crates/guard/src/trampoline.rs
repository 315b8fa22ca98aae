//! The one `syscall` instruction the filter lets through unconditionally.
//!
//! `uzswap_guard_syscall(nr, a1, …, a6)` (called through [`guard_syscall`]
//! or [`syscall6`]) is a System V function that moves its arguments into the
//! Linux system-call registers and executes `syscall`. The kernel reports,
//! in `seccomp_data.instruction_pointer`, the address of the instruction
//! *after* `syscall` (the saved user RIP; the test
//! `kernel_faults::instruction_pointer_is_after_syscall` checks it on the
//! running kernel): that is [`syscall_return_address`], which the filter
//! compares with.
//!
//! The symbols are `.hidden`: a copy of this crate linked into another
//! shared object (the LD_PRELOAD library) keeps its own trampoline and does
//! not export it.
//!
//! **The gate.** Seccomp filters survive `execve`, so a program started by
//! a program under uzswap (a shell script's `exec`, a wrapper) inherits its
//! parent's filter, which knows only the parent's trampoline address.
//! [`map_gate`] therefore puts the one `syscall` instruction at a fixed
//! address every uzswap process shares (the first page of the region
//! arena, which regions never use) and the trampoline jumps there: every
//! filter, inherited or not, allows the same instruction pointer.

use std::arch::global_asm;

global_asm!(
    // The gate's address (0: none yet), read by the trampoline; hidden, so
    // the shared object refers to it directly.
    ".data",
    ".balign 8",
    ".globl uzswap_guard_gate",
    ".hidden uzswap_guard_gate",
    "uzswap_guard_gate:",
    "    .quad 0",
    ".text",
    ".balign 16",
    ".globl uzswap_guard_syscall",
    ".hidden uzswap_guard_syscall",
    ".type uzswap_guard_syscall,@function",
    "uzswap_guard_syscall:",
    "    mov rax, rdi",
    "    mov rdi, rsi",
    "    mov rsi, rdx",
    "    mov rdx, rcx",
    "    mov r10, r8",
    "    mov r8, r9",
    "    mov r9, [rsp + 8]",
    // Through the gate when there is one: a tail jump, so the gate's `ret`
    // returns to our caller. r11 is the syscall's to clobber anyway.
    "    mov r11, [rip + uzswap_guard_gate]",
    "    test r11, r11",
    "    jz 2f",
    "    jmp r11",
    "2:",
    "    syscall",
    ".globl uzswap_guard_syscall_ret",
    ".hidden uzswap_guard_syscall_ret",
    "uzswap_guard_syscall_ret:",
    "    ret",
    ".size uzswap_guard_syscall, . - uzswap_guard_syscall",
    "",
    ".balign 16",
    ".globl uzswap_guard_restore_rt",
    ".hidden uzswap_guard_restore_rt",
    ".type uzswap_guard_restore_rt,@function",
    "uzswap_guard_restore_rt:",
    "    mov rax, 15",
    "    syscall",
    ".size uzswap_guard_restore_rt, . - uzswap_guard_restore_rt",
);

/// Bytes of the gate: `syscall; ret`.
const GATE_CODE: [u8; 3] = [0x0f, 0x05, 0xc3];

/// Maps the gate at `addr` (a page of the caller's own `PROT_NONE`
/// reservation, never used otherwise), or finds it there already.
///
/// # Safety
/// `[addr, addr + PAGE_SIZE)` is reserved by the caller for this, and no thread
/// runs the trampoline while this runs (before the filter goes in).
pub(crate) unsafe fn map_gate(addr: usize) -> std::io::Result<()> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
    // SAFETY: the caller's guarantee: the page is ours to replace.
    let p = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            addr,
            common::PAGE_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the page was mapped writable just above.
    unsafe { std::ptr::copy_nonoverlapping(GATE_CODE.as_ptr(), addr as *mut u8, GATE_CODE.len()) };
    // SAFETY: our own page: read and execute only from now on.
    if unsafe {
        libc::syscall(
            libc::SYS_mprotect,
            addr,
            common::PAGE_SIZE,
            libc::PROT_READ | libc::PROT_EXEC,
        )
    } < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a plain store before any thread runs the trampoline through
    // the gate (the caller's guarantee); later readers only load it.
    unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!(uzswap_guard_gate), addr) };
    Ok(())
}

extern "C" {
    static mut uzswap_guard_gate: usize;
    fn uzswap_guard_syscall(nr: i64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64, a6: u64)
        -> isize;
    static uzswap_guard_syscall_ret: u8;
    fn uzswap_guard_restore_rt();
}

/// Issues system call `nr` with `args` through the trampoline: never trapped
/// by the guard's filter. Returns the raw result (`-errno` on failure);
/// `errno` is not touched.
///
/// # Safety
/// As for any raw system call: the arguments must be valid for `nr` (a
/// pointer argument must point to memory the call may read or write), and
/// calls that change the process's memory or threads (`munmap`, `clone`,
/// `exit`) have the usual consequences.
#[inline]
pub unsafe fn syscall6(nr: i64, args: [u64; 6]) -> isize {
    // SAFETY: the trampoline is a leaf function following the System V ABI
    // (it clobbers only rax, rcx, r11 and the argument registers, as any call
    // may); the caller guarantees the system call's own preconditions.
    unsafe { uzswap_guard_syscall(nr, args[0], args[1], args[2], args[3], args[4], args[5]) }
}

/// `guard_syscall(nr, a1, …, a6)`: [`syscall6`] with the arguments spread.
///
/// # Safety
/// As for [`syscall6`].
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn guard_syscall(
    nr: i64,
    a1: u64,
    a2: u64,
    a3: u64,
    a4: u64,
    a5: u64,
    a6: u64,
) -> isize {
    // SAFETY: forwarded from the caller.
    unsafe { syscall6(nr, [a1, a2, a3, a4, a5, a6]) }
}

/// The address of the instruction after the trampoline's `syscall`: what the
/// kernel reports as the instruction pointer of a call made through it.
pub fn syscall_return_address() -> usize {
    // SAFETY: a plain load of a word written once before the filter exists.
    let gate = unsafe { std::ptr::read_volatile(std::ptr::addr_of!(uzswap_guard_gate)) };
    if gate != 0 {
        gate + 2
    } else {
        std::ptr::addr_of!(uzswap_guard_syscall_ret) as usize
    }
}

/// The trampoline's entry address (for tests and reports).
pub fn entry_address() -> usize {
    uzswap_guard_syscall as *const () as usize
}

/// The guard's `sa_restorer` (`rt_sigreturn`), as glibc's `__restore_rt`:
/// x86_64 requires one for every handler installed with `SA_RESTORER`.
pub(crate) fn restorer_address() -> usize {
    uzswap_guard_restore_rt as *const () as usize
}
