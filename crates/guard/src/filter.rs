//! The seccomp filter: a classic-BPF program built here (a small assembler
//! with labels, no dependency), and its installation.
//!
//! Layout, for x86_64 system calls (any other `arch`, i.e. `int 0x80`, is
//! allowed):
//!
//! ```text
//!   ld arch; jeq AUDIT_ARCH_X86_64 else ALLOW
//!   ld nr;   read? write? → ja BLOCK(rule)
//!            binary search over the trapped numbers → ja BLOCK(rule)   (none: ALLOW)
//! BLOCK(DirectPointers m):  for each argument i in m: if arg_i in arena → IP
//!                           ALLOW
//! BLOCK(Indirect m):        as above, then per IndirectPolicy:
//!                           Always → IP;  FromCode → if ip in code → IP;  ArrayInArena → ALLOW
//! IP:                       if ip == trampoline → ALLOW else TRAP|data
//! ```
//!
//! The dispatch reads only `arch` and `nr`, so the kernel's seccomp action
//! cache (Linux 5.11+) proves ALLOW for every system call without a rule
//! and skips the filter for them entirely; only calls with a rule run it
//! (about 20-30 instructions, JIT-compiled). The arena test of an argument
//! is one load, one AND and one compare on its upper half (arena size at
//! least 4 GiB), or five instructions otherwise.
//!
//! `seccompiler` was not used: it cannot test `instruction_pointer`, and it
//! emits a linear chain of per-syscall tests.

use crate::syscalls::{trap_rule, TrapRule};
use crate::{nr, GuardError};
use std::ops::Range;

/// `struct sock_filter`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockFilter {
    /// Opcode.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Operand.
    pub k: u32,
}

/// `AUDIT_ARCH_X86_64`.
pub const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
/// `SECCOMP_RET_ALLOW`.
pub const RET_ALLOW: u32 = 0x7fff_0000;
/// `SECCOMP_RET_TRAP`.
pub const RET_TRAP: u32 = 0x0003_0000;
/// The 16-bit data of the guard's traps (`SECCOMP_RET_DATA`), seen by the
/// SIGSYS handler in `si_errno`: tells them from other filters' traps.
pub const TRAP_DATA: u16 = 0x757a; // "uz"

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JA: u16 = 0x05;
const BPF_JEQ_K: u16 = 0x15;
const BPF_JGT_K: u16 = 0x25;
const BPF_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;
const BPF_AND_K: u16 = 0x54;

// Offsets in struct seccomp_data.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_IP_LO: u32 = 8;
const OFF_IP_HI: u32 = 12;
const fn off_arg_lo(i: u8) -> u32 {
    16 + 8 * i as u32
}
const fn off_arg_hi(i: u8) -> u32 {
    20 + 8 * i as u32
}

/// When calls that reach user memory through memory (iovecs, `msghdr`,
/// `argv`) are trapped, beyond a direct pointer argument in the arena. The
/// same scope applies to the signal-mask protection (see
/// [`FilterSpec::protect_sigsys`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndirectPolicy {
    /// Every such call is trapped (except from the trampoline). Complete,
    /// but costs a trap per `readv`/`writev`/`sendmsg`/`recvmsg`/`execve`
    /// of the program, and the filter survives `execve`: a program started
    /// from this one without the guard's handler dies at its first such
    /// call (SIGSYS).
    Always,
    /// Trapped only when made from these code ranges (the C library's text,
    /// see `code_ranges_of_libc`). Another program started with `execve`
    /// has its C library elsewhere (ASLR), so it is not affected; calls made
    /// by raw `syscall` instructions outside the ranges are not covered.
    FromCode(Vec<Range<usize>>),
    /// Only a pointer argument in the arena traps (iovec arrays and
    /// `msghdr`s on the stack pointing into the arena are not covered). No
    /// extra cost and no effect on programs started with `execve`.
    ArrayInArena,
}

/// What the filter is built from.
#[derive(Clone, Debug)]
pub struct FilterSpec {
    /// The arena: power-of-two size, aligned to it.
    pub arena: Range<usize>,
    /// The instruction pointer calls through the trampoline report.
    pub trampoline_ip: usize,
    /// See [`IndirectPolicy`].
    pub indirect: IndirectPolicy,
    /// Also trap `rt_sigaction` with a new action or about SIGSYS, and
    /// `rt_sigprocmask`
    /// blocking or setting a mask (in the `indirect` scope; not with
    /// `ArrayInArena`), so that the handler keeps SIGSYS handled and
    /// unblocked, including against the C library's internal calls that no
    /// symbol hook sees (`posix_spawn`'s child resets every handler).
    pub protect_sigsys: bool,
}

/// Checks that `arena` is a power-of-two-sized, size-aligned range.
pub fn check_arena(arena: &Range<usize>) -> Result<(), GuardError> {
    let size = arena.end.wrapping_sub(arena.start);
    if arena.end <= arena.start || !size.is_power_of_two() || !arena.start.is_multiple_of(size) {
        return Err(GuardError::BadArena {
            start: arena.start,
            end: arena.end,
        });
    }
    // The handler keeps page indices in u32: at most 16 TiB.
    if !(4096..=1 << 44).contains(&size) {
        return Err(GuardError::BadArena {
            start: arena.start,
            end: arena.end,
        });
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Label(usize);

#[derive(Clone, Copy, Debug)]
enum Target {
    /// The next instruction.
    Next,
    /// A label (must be forward and within 255 instructions for a
    /// conditional jump).
    To(Label),
}

#[derive(Clone, Copy, Debug)]
struct Insn {
    code: u16,
    k: u32,
    jt: Target,
    jf: Target,
    /// For `ja`: the label (k is computed).
    ja: Option<Label>,
}

/// A tiny classic-BPF assembler with forward labels.
struct Asm {
    insns: Vec<Insn>,
    labels: Vec<Option<usize>>,
}

impl Asm {
    fn new() -> Self {
        Asm {
            insns: Vec::new(),
            labels: Vec::new(),
        }
    }

    fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.insns.len());
    }

    fn push(&mut self, code: u16, k: u32, jt: Target, jf: Target, ja: Option<Label>) {
        self.insns.push(Insn {
            code,
            k,
            jt,
            jf,
            ja,
        });
    }

    fn ld(&mut self, off: u32) {
        self.push(BPF_LD_W_ABS, off, Target::Next, Target::Next, None)
    }

    fn and(&mut self, k: u32) {
        self.push(BPF_AND_K, k, Target::Next, Target::Next, None)
    }

    fn ret(&mut self, k: u32) {
        self.push(BPF_RET_K, k, Target::Next, Target::Next, None)
    }

    fn jeq(&mut self, k: u32, jt: Target, jf: Target) {
        self.push(BPF_JEQ_K, k, jt, jf, None)
    }

    fn jge(&mut self, k: u32, jt: Target, jf: Target) {
        self.push(BPF_JGE_K, k, jt, jf, None)
    }

    fn jgt(&mut self, k: u32, jt: Target, jf: Target) {
        self.push(BPF_JGT_K, k, jt, jf, None)
    }

    fn ja(&mut self, l: Label) {
        self.push(BPF_JMP_JA, 0, Target::Next, Target::Next, Some(l))
    }

    fn finish(self) -> Result<Vec<SockFilter>, GuardError> {
        let mut out = Vec::with_capacity(self.insns.len());
        for (pc, insn) in self.insns.iter().enumerate() {
            let resolve = |t: Target| -> Result<usize, GuardError> {
                match t {
                    Target::Next => Ok(0),
                    Target::To(l) => {
                        let at = self.labels[l.0].ok_or(GuardError::Filter("unbound label"))?;
                        at.checked_sub(pc + 1)
                            .ok_or(GuardError::Filter("backward jump"))
                    }
                }
            };
            let (jt, jf, k) = if let Some(l) = insn.ja {
                let off = resolve(Target::To(l))?;
                (
                    0,
                    0,
                    u32::try_from(off).map_err(|_| GuardError::Filter("jump too long"))?,
                )
            } else {
                let jt = resolve(insn.jt)?;
                let jf = resolve(insn.jf)?;
                if jt > 255 || jf > 255 {
                    return Err(GuardError::Filter("conditional jump too long"));
                }
                (jt as u8, jf as u8, insn.k)
            };
            out.push(SockFilter {
                code: insn.code,
                jt,
                jf,
                k,
            });
        }
        if out.len() > 4096 {
            return Err(GuardError::Filter("longer than BPF_MAXINSNS"));
        }
        Ok(out)
    }
}

/// The shapes of rule blocks (one block per shape, shared by the system
/// calls that have it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Block {
    Direct(u8),
    Indirect(u8),
    SigAction,
    SigProcMask,
}

/// The trap value the guard's filter returns.
pub const fn trap_value() -> u32 {
    RET_TRAP | TRAP_DATA as u32
}

/// Builds the filter program.
pub fn build(spec: &FilterSpec) -> Result<Vec<SockFilter>, GuardError> {
    check_arena(&spec.arena)?;
    let mut entries: Vec<(i64, Block)> = Vec::new();
    for &(n, _) in nr::ALL {
        let block = match trap_rule(n) {
            TrapRule::Never => None,
            TrapRule::DirectPointers(m) => Some(Block::Direct(m)),
            TrapRule::Indirect(m) => Some(match spec.indirect {
                IndirectPolicy::ArrayInArena => Block::Direct(m),
                _ => Block::Indirect(m),
            }),
        };
        let block = match (n, spec.protect_sigsys, &spec.indirect) {
            (_, false, _) | (_, _, IndirectPolicy::ArrayInArena) => block,
            (nr::RT_SIGACTION, ..) => Some(Block::SigAction),
            (nr::RT_SIGPROCMASK, ..) => Some(Block::SigProcMask),
            _ => block,
        };
        if let Some(b) = block {
            entries.push((n, b));
        }
    }
    let mut asm = Asm::new();
    for (shape, label) in dispatch_to_shapes(&mut asm, entries) {
        asm.bind(label);
        emit_block(&mut asm, spec, shape);
    }
    asm.finish()
}

/// The program's head: any architecture but x86_64 allowed, then a jump
/// by system call number to the block of its shape (`read` and `write`
/// first, 10 instructions instead of about 30, then a binary search;
/// a number without one allowed). Returns each shape with the label its
/// block must be bound to (one block per shape, shared by the calls that
/// have it).
fn dispatch_to_shapes<S: Copy + Ord>(asm: &mut Asm, mut entries: Vec<(i64, S)>) -> Vec<(S, Label)> {
    entries.sort_by_key(|&(n, _)| n);
    let mut shapes: Vec<S> = entries.iter().map(|&(_, b)| b).collect();
    shapes.sort();
    shapes.dedup();
    let blocks: Vec<(S, Label)> = shapes.iter().map(|&s| (s, asm.label())).collect();
    let label_of = |b: S| blocks.iter().find(|&&(s, _)| s == b).map(|&(_, l)| l);
    let x86 = asm.label();
    asm.ld(OFF_ARCH);
    asm.jeq(AUDIT_ARCH_X86_64, Target::To(x86), Target::Next);
    asm.ret(RET_ALLOW);
    asm.bind(x86);
    asm.ld(OFF_NR);
    for hot in [nr::READ, nr::WRITE] {
        if let Some(l) = entries
            .iter()
            .find(|&&(n, _)| n == hot)
            .and_then(|&(_, b)| label_of(b))
        {
            let skip = asm.label();
            asm.jeq(hot as u32, Target::Next, Target::To(skip));
            asm.ja(l);
            asm.bind(skip);
        }
    }
    let table: Vec<(u32, Label)> = entries
        .iter()
        .filter_map(|&(n, b)| Some((n as u32, label_of(b)?)))
        .collect();
    dispatch(asm, &table);
    blocks
}

/// Binary search over sorted `(nr, block)`: three instructions per inner
/// node, two per leaf entry; conditional jumps only skip one instruction,
/// long jumps are `ja`.
fn dispatch(asm: &mut Asm, table: &[(u32, Label)]) {
    if table.len() <= 4 {
        for &(n, l) in table {
            let skip = asm.label();
            asm.jeq(n, Target::Next, Target::To(skip));
            asm.ja(l);
            asm.bind(skip);
        }
        asm.ret(RET_ALLOW);
        return;
    }
    let mid = table.len() / 2;
    let right = asm.label();
    let left = asm.label();
    asm.jge(table[mid].0, Target::Next, Target::To(left));
    asm.ja(right);
    asm.bind(left);
    dispatch(asm, &table[..mid]);
    asm.bind(right);
    dispatch(asm, &table[mid..]);
}

/// Jumps to `hit` when argument `i` lies in the arena.
fn arg_in_arena(asm: &mut Asm, arena: &Range<usize>, i: u8, hit: Label) {
    let lo = arena.start as u64;
    let size = (arena.end - arena.start) as u64;
    if size >= 1 << 32 {
        let mask_hi = !(((size >> 32) - 1) as u32);
        asm.ld(off_arg_hi(i));
        asm.and(mask_hi);
        asm.jeq((lo >> 32) as u32, Target::To(hit), Target::Next);
    } else {
        let miss = asm.label();
        asm.ld(off_arg_hi(i));
        asm.jeq((lo >> 32) as u32, Target::Next, Target::To(miss));
        asm.ld(off_arg_lo(i));
        asm.and(!((size - 1) as u32));
        asm.jeq(lo as u32, Target::To(hit), Target::Next);
        asm.bind(miss);
    }
}

/// Jumps to `hit` when argument `i` is not zero.
fn arg_nonzero(asm: &mut Asm, i: u8, hit: Label) {
    asm.ld(off_arg_lo(i));
    asm.jeq(0, Target::Next, Target::To(hit));
    asm.ld(off_arg_hi(i));
    asm.jeq(0, Target::Next, Target::To(hit));
}

/// Jumps to `hit` when the instruction pointer lies in one of `ranges`.
fn ip_in_code(asm: &mut Asm, ranges: &[Range<usize>], hit: Label) {
    for r in ranges {
        if r.end <= r.start {
            continue;
        }
        // Split at 4 GiB boundaries so each piece has one upper half.
        let mut start = r.start as u64;
        let end = r.end as u64; // exclusive
        while start < end {
            let hi = start >> 32;
            let piece_end = end.min((hi + 1) << 32); // exclusive
            let next = asm.label();
            asm.ld(OFF_IP_HI);
            asm.jeq(hi as u32, Target::Next, Target::To(next));
            asm.ld(OFF_IP_LO);
            asm.jge(start as u32, Target::Next, Target::To(next));
            asm.jgt((piece_end - 1) as u32, Target::To(next), Target::To(hit));
            asm.bind(next);
            start = piece_end;
        }
    }
}

/// TRAP unless the call comes from the trampoline.
fn ip_check(asm: &mut Asm, trampoline_ip: usize) {
    let trap = asm.label();
    let allow = asm.label();
    asm.ld(OFF_IP_LO);
    asm.jeq(trampoline_ip as u32, Target::Next, Target::To(trap));
    asm.ld(OFF_IP_HI);
    asm.jeq(
        (trampoline_ip as u64 >> 32) as u32,
        Target::To(allow),
        Target::To(trap),
    );
    asm.bind(trap);
    asm.ret(trap_value());
    asm.bind(allow);
    asm.ret(RET_ALLOW);
}

/// The unconditional part of an `Indirect`/signal rule: jump to `ip` per
/// the policy, else fall through.
fn scope(asm: &mut Asm, policy: &IndirectPolicy, ip: Label) {
    match policy {
        IndirectPolicy::Always => asm.ja(ip),
        IndirectPolicy::FromCode(ranges) => ip_in_code(asm, ranges, ip),
        IndirectPolicy::ArrayInArena => {}
    }
}

fn emit_block(asm: &mut Asm, spec: &FilterSpec, shape: Block) {
    let ip = asm.label();
    let direct = |asm: &mut Asm, mask: u8| {
        for i in 0..6u8 {
            if mask & (1 << i) != 0 {
                arg_in_arena(asm, &spec.arena, i, ip);
            }
        }
    };
    match shape {
        Block::Direct(m) => direct(asm, m),
        Block::Indirect(m) => {
            direct(asm, m);
            scope(asm, &spec.indirect, ip);
        }
        Block::SigAction => {
            // rt_sigaction(sig, act, oact, size): a new action, or any call
            // about SIGSYS (a query must report the program's handler) →
            // scope.
            let no_act = asm.label();
            let has_act = asm.label();
            asm.ld(off_arg_lo(0));
            asm.jeq(libc::SIGSYS as u32, Target::To(has_act), Target::Next);
            arg_nonzero(asm, 1, has_act);
            asm.ja(no_act);
            asm.bind(has_act);
            scope(asm, &spec.indirect, ip);
            asm.bind(no_act);
            direct(asm, trap_rule(nr::RT_SIGACTION).direct_mask());
        }
        Block::SigProcMask => {
            // rt_sigprocmask(how, set, oset, size): SIG_BLOCK (0) or
            // SIG_SETMASK (2) with a set → scope.
            let plain = asm.label();
            let has_set = asm.label();
            asm.ld(off_arg_lo(0));
            asm.jeq(1, Target::To(plain), Target::Next);
            arg_nonzero(asm, 1, has_set);
            asm.ja(plain);
            asm.bind(has_set);
            scope(asm, &spec.indirect, ip);
            asm.bind(plain);
            direct(asm, trap_rule(nr::RT_SIGPROCMASK).direct_mask());
        }
    }
    asm.ret(RET_ALLOW);
    asm.bind(ip);
    ip_check(asm, spec.trampoline_ip);
}

/// `SECCOMP_RET_USER_NOTIF`: the call waits for a supervisor's answer on
/// the filter's listener.
pub const RET_USER_NOTIF: u32 = 0x7fc0_0000;

/// A filter for a supervisor in another process (the out-of-process
/// pager, which cannot run a SIGSYS handler in its target): every x86_64
/// call that has a rule is sent to the listener (`RET_USER_NOTIF`) when
/// one of its direct pointer arguments is not null, or always when it
/// reaches memory through memory; so are `clone`, `clone3` and
/// `sigaltstack` (never trapped in-process, where they could not be
/// re-issued from a handler; a supervisor only looks at them). The pointer
/// values are not compared with any range: the supervisor's registered
/// memory changes as the program runs, a filter cannot. Everything else,
/// and every other architecture, is allowed.
pub fn build_notify() -> Result<Vec<SockFilter>, GuardError> {
    let always = [nr::CLONE, nr::CLONE3, nr::SIGALTSTACK];
    let mut entries: Vec<(i64, Option<u8>)> = Vec::new();
    for &(n, _) in nr::ALL {
        let mask = match trap_rule(n) {
            _ if always.contains(&n) => Some(None),
            TrapRule::Never => None,
            TrapRule::DirectPointers(m) => Some(Some(m)),
            TrapRule::Indirect(_) => Some(None),
        };
        if let Some(m) = mask {
            entries.push((n, m));
        }
    }
    let mut asm = Asm::new();
    for (shape, label) in dispatch_to_shapes(&mut asm, entries) {
        asm.bind(label);
        let notify = asm.label();
        match shape {
            None => asm.ja(notify),
            Some(mask) => {
                for i in (0..6u8).filter(|i| mask & (1 << i) != 0) {
                    arg_nonzero(&mut asm, i, notify);
                }
                asm.ret(RET_ALLOW);
            }
        }
        asm.bind(notify);
        asm.ret(RET_USER_NOTIF);
    }
    asm.finish()
}

/// The executable mappings of the C library (from `/proc/self/maps`), found
/// through the address of `writev`. Not async-signal-safe (reads a file).
pub fn code_ranges_of_libc() -> Vec<Range<usize>> {
    let probe = libc::writev as *const () as usize;
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let mut path: Option<String> = None;
    let mut entries = Vec::new();
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        let file = fields.nth(3).map(str::to_string);
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else {
            continue;
        };
        if (a..b).contains(&probe) {
            path = file.clone();
        }
        entries.push((a..b, perms.contains('x'), file));
    }
    let Some(path) = path else {
        return Vec::new();
    };
    entries
        .into_iter()
        .filter(|(_, x, f)| *x && f.as_deref() == Some(path.as_str()))
        .map(|(r, _, _)| r)
        .collect()
}

const PR_SET_NO_NEW_PRIVS: libc::c_int = 38;
const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;
const SECCOMP_FILTER_FLAG_TSYNC: libc::c_uint = 1;
const SECCOMP_FILTER_FLAG_SPEC_ALLOW: libc::c_uint = 4;

#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const SockFilter,
}

/// Installs `prog` for every thread of the process: `PR_SET_NO_NEW_PRIVS`
/// (required without `CAP_SYS_ADMIN`), then `seccomp(SET_MODE_FILTER,
/// TSYNC | SPEC_ALLOW)`. `SPEC_ALLOW`: the filter is not a security
/// boundary, so the kernel need not force speculative-store-bypass
/// mitigations on the process.
pub fn install(prog: &[SockFilter]) -> Result<(), GuardError> {
    let len = u16::try_from(prog.len()).map_err(|_| GuardError::Filter("filter too long"))?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes integers only.
    if unsafe { libc::prctl(PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(GuardError::NoNewPrivs(std::io::Error::last_os_error()));
    }
    let fprog = SockFprog {
        len,
        filter: prog.as_ptr(),
    };
    let flags = SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_SPEC_ALLOW;
    // SAFETY: `fprog` points to `len` instructions that outlive the call
    // (the kernel copies them).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const SockFprog,
        )
    };
    if rc < 0 {
        return Err(GuardError::Seccomp(std::io::Error::last_os_error()));
    }
    if rc > 0 {
        // TSYNC: thread `rc` could not be synchronised.
        return Err(GuardError::Tsync(rc as i32));
    }
    Ok(())
}

/// A classic-BPF interpreter for the instructions the builder emits, used
/// by the tests to run the filter on synthetic `seccomp_data`.
#[cfg(test)]
pub(crate) fn run(prog: &[SockFilter], nr: i64, arch: u32, ip: u64, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&(nr as u32).to_le_bytes());
    data[4..8].copy_from_slice(&arch.to_le_bytes());
    data[8..16].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in args.iter().enumerate() {
        data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    let mut acc: u32 = 0;
    let mut pc = 0usize;
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 10_000, "filter loops");
        let insn = prog[pc];
        pc += 1;
        match insn.code {
            BPF_LD_W_ABS => {
                let k = insn.k as usize;
                acc = u32::from_le_bytes(data[k..k + 4].try_into().unwrap());
            }
            BPF_AND_K => acc &= insn.k,
            BPF_RET_K => return insn.k,
            BPF_JMP_JA => pc += insn.k as usize,
            BPF_JEQ_K | BPF_JGT_K | BPF_JGE_K => {
                let cond = match insn.code {
                    BPF_JEQ_K => acc == insn.k,
                    BPF_JGT_K => acc > insn.k,
                    _ => acc >= insn.k,
                };
                pc += if cond { insn.jt } else { insn.jf } as usize;
            }
            c => panic!("unexpected opcode {c:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TB: usize = 1 << 40;
    const T: usize = 0x5555_1234_5678; // a trampoline address
    const LIBC: Range<usize> = 0x7fff_f000_0000..0x7fff_f020_0000;
    const TRAP: u32 = RET_TRAP | TRAP_DATA as u32;

    fn spec(arena: Range<usize>, indirect: IndirectPolicy) -> FilterSpec {
        FilterSpec {
            arena,
            trampoline_ip: T,
            indirect,
            protect_sigsys: true,
        }
    }

    fn x86(prog: &[SockFilter], nr: i64, ip: usize, args: [u64; 6]) -> u32 {
        run(prog, nr, AUDIT_ARCH_X86_64, ip as u64, args)
    }

    #[test]
    fn direct_pointers_in_the_arena_trap() {
        for arena in [
            TB..2 * TB,
            0x4000_0000..0x8000_0000,
            (1 << 32)..(2 << 32),
            0x7000_0000_1000..0x7000_0000_2000,
        ] {
            let prog = build(&spec(arena.clone(), IndirectPolicy::Always)).unwrap();
            let (lo, hi) = (arena.start as u64, arena.end as u64);
            let ip = 0x40_1000;
            for (addr, want) in [
                (lo, TRAP),
                (lo + 1, TRAP),
                (hi - 1, TRAP),
                (hi, RET_ALLOW),
                (lo - 1, RET_ALLOW),
                (0, RET_ALLOW),
                (lo ^ (1 << 63), RET_ALLOW),
            ] {
                assert_eq!(
                    x86(&prog, nr::READ, ip, [3, addr, 10, 0, 0, 0]),
                    want,
                    "{arena:x?} {addr:#x}"
                );
                assert_eq!(
                    x86(&prog, nr::STATX, ip, [3, 0, 0, 0, addr, 0]),
                    want,
                    "{arena:x?} {addr:#x}"
                );
            }
            // Through the trampoline: allowed.
            assert_eq!(x86(&prog, nr::READ, T, [3, lo, 10, 0, 0, 0]), RET_ALLOW);
            // Same low half as the trampoline, another upper half: trapped.
            assert_eq!(
                x86(&prog, nr::READ, T + (1 << 40), [3, lo, 10, 0, 0, 0]),
                TRAP
            );
            // Another architecture (int 0x80): allowed.
            assert_eq!(
                run(&prog, 3, 0x4000_0003, 0, [3, lo, 10, 0, 0, 0]),
                RET_ALLOW
            );
        }
    }

    /// The filter agrees with the table for every system call number: with
    /// an arena pointer in one argument, a call traps iff the argument is in
    /// its rule's mask (or the rule is indirect under `Always`).
    #[test]
    fn filter_follows_the_table() {
        let arena = TB..2 * TB;
        let p = (TB + 0x1234) as u64;
        for policy in [
            IndirectPolicy::Always,
            IndirectPolicy::FromCode(vec![LIBC]),
            IndirectPolicy::ArrayInArena,
        ] {
            let prog = build(&spec(arena.clone(), policy.clone())).unwrap();
            for &(n, name) in nr::ALL {
                for from_libc in [false, true] {
                    let ip = if from_libc {
                        LIBC.start + 0x100
                    } else {
                        0x40_1000
                    };
                    let unconditional = match (trap_rule(n), &policy) {
                        (TrapRule::Indirect(_), IndirectPolicy::Always) => true,
                        (TrapRule::Indirect(_), IndirectPolicy::FromCode(_)) => from_libc,
                        _ => false,
                    };
                    if n == nr::RT_SIGACTION || n == nr::RT_SIGPROCMASK {
                        continue; // below
                    }
                    let none = x86(&prog, n, ip, [0; 6]);
                    assert_eq!(none == TRAP, unconditional, "{name} with no pointers");
                    for i in 0..6 {
                        let mut a = [0u64; 6];
                        a[i] = p;
                        let want = unconditional || trap_rule(n).direct_mask() & (1 << i) != 0;
                        assert_eq!(
                            x86(&prog, n, ip, a) == TRAP,
                            want,
                            "{name} arg {i} {policy:?}"
                        );
                        assert_eq!(x86(&prog, n, T, a), RET_ALLOW, "{name} from the trampoline");
                    }
                }
            }
            // Every argument of a call without a rule, all in the arena.
            assert_eq!(x86(&prog, nr::MMAP, 0x40_1000, [p; 6]), RET_ALLOW);
            assert_eq!(x86(&prog, nr::CLONE, 0x40_1000, [p; 6]), RET_ALLOW);
            assert_eq!(
                x86(&prog, 0x4000_0000 | nr::READ, 0x40_1000, [p; 6]),
                RET_ALLOW
            );
        }
    }

    #[test]
    fn signal_protection() {
        let arena = TB..2 * TB;
        let p = (TB + 64) as u64;
        let prog = build(&spec(arena.clone(), IndirectPolicy::FromCode(vec![LIBC]))).unwrap();
        let libc_ip = LIBC.start + 0x4000;
        let app_ip = 0x40_1000;
        let stack = 0x7ffd_0000_0000u64;
        // rt_sigaction with a new action, from libc: trapped.
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, libc_ip, [10, stack, 0, 8, 0, 0]),
            TRAP
        );
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, libc_ip, [10, 1 << 40, 0, 8, 0, 0]),
            TRAP
        );
        // A query: allowed unless oact is in the arena.
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, libc_ip, [10, 0, stack, 8, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, libc_ip, [10, 0, p, 8, 0, 0]),
            TRAP
        );
        // Not from libc: only arena pointers.
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, app_ip, [10, stack, 0, 8, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            x86(&prog, nr::RT_SIGACTION, app_ip, [10, p, 0, 8, 0, 0]),
            TRAP
        );
        // rt_sigprocmask: SIG_BLOCK / SIG_SETMASK with a set trap, SIG_UNBLOCK
        // and queries do not.
        for (how, set, want) in [
            (0, stack, TRAP),
            (2, stack, TRAP),
            (1, stack, RET_ALLOW),
            (0, 0, RET_ALLOW),
            (1, p, TRAP),
        ] {
            assert_eq!(
                x86(&prog, nr::RT_SIGPROCMASK, libc_ip, [how, set, 0, 8, 0, 0]),
                want,
                "how {how}"
            );
        }
        assert_eq!(
            x86(&prog, nr::RT_SIGPROCMASK, T, [0, stack, 0, 8, 0, 0]),
            RET_ALLOW
        );
        // Without the protection: plain direct rules.
        let plain = build(&FilterSpec {
            protect_sigsys: false,
            ..spec(arena, IndirectPolicy::Always)
        })
        .unwrap();
        assert_eq!(
            x86(&plain, nr::RT_SIGACTION, libc_ip, [10, stack, 0, 8, 0, 0]),
            RET_ALLOW
        );
        assert_eq!(
            x86(&plain, nr::RT_SIGPROCMASK, libc_ip, [0, stack, 0, 8, 0, 0]),
            RET_ALLOW
        );
    }

    #[test]
    fn code_ranges_across_a_4g_boundary() {
        let r = 0x7fff_ffff_f000..0x8000_0000_1000;
        let prog = build(&spec(TB..2 * TB, IndirectPolicy::FromCode(vec![r.clone()]))).unwrap();
        for (ip, want) in [
            (r.start, TRAP),
            (0x7fff_ffff_ffff, TRAP),
            (0x8000_0000_0000, TRAP),
            (r.end - 1, TRAP),
            (r.end, RET_ALLOW),
            (r.start - 1, RET_ALLOW),
        ] {
            assert_eq!(
                x86(&prog, nr::WRITEV, ip, [1, 0x1000, 1, 0, 0, 0]),
                want,
                "{ip:#x}"
            );
        }
    }

    /// Calls without a rule reach ALLOW having loaded only `nr` and `arch`,
    /// so the kernel's seccomp cache can skip the filter for them.
    #[test]
    fn calls_without_rules_only_look_at_nr_and_arch() {
        let prog = build(&spec(TB..2 * TB, IndirectPolicy::FromCode(vec![LIBC]))).unwrap();
        for &(n, name) in nr::ALL {
            if trap_rule(n) != TrapRule::Never || n == nr::RT_SIGACTION || n == nr::RT_SIGPROCMASK {
                continue;
            }
            // Walk the program noting loads.
            let mut pc = 0;
            loop {
                let insn = prog[pc];
                pc += 1;
                match insn.code {
                    BPF_LD_W_ABS => assert!(
                        insn.k == OFF_NR || insn.k == OFF_ARCH,
                        "{name} loads {}",
                        insn.k
                    ),
                    BPF_RET_K => {
                        assert_eq!(insn.k, RET_ALLOW, "{name}");
                        break;
                    }
                    BPF_JMP_JA => pc += insn.k as usize,
                    BPF_JEQ_K | BPF_JGE_K | BPF_JGT_K => {
                        // The accumulator holds nr or arch: evaluate.
                        let acc = if pc <= 2 { AUDIT_ARCH_X86_64 } else { n as u32 };
                        let c = match insn.code {
                            BPF_JEQ_K => acc == insn.k,
                            BPF_JGT_K => acc > insn.k,
                            _ => acc >= insn.k,
                        };
                        pc += if c { insn.jt } else { insn.jf } as usize;
                    }
                    c => panic!("{name}: opcode {c:#x} on the way"),
                }
            }
        }
    }

    #[test]
    fn lengths_and_bad_arenas() {
        for policy in [
            IndirectPolicy::Always,
            IndirectPolicy::FromCode(code_ranges_of_libc()),
            IndirectPolicy::ArrayInArena,
        ] {
            let prog = build(&spec(TB..2 * TB, policy.clone())).unwrap();
            println!("filter length with {policy:?}: {} instructions", prog.len());
            assert!(prog.len() < 1500);
        }
        assert!(build(&spec(TB..TB + 3 * 4096, IndirectPolicy::Always)).is_err());
        assert!(build(&spec(TB + 4096..2 * TB + 4096, IndirectPolicy::Always)).is_err());
        assert!(build(&spec(TB..TB, IndirectPolicy::Always)).is_err());
        assert!(
            !code_ranges_of_libc().is_empty(),
            "the C library's text is found"
        );
    }

    /// The longest path: how many instructions a trapped-rule call runs.
    #[test]
    fn path_lengths() {
        let prog = build(&spec(TB..2 * TB, IndirectPolicy::FromCode(vec![LIBC]))).unwrap();
        let mut worst = 0;
        for &(n, _) in nr::ALL {
            let mut steps = 0;
            let mut pc = 0;
            let data_nr = n as u32;
            let mut acc = 0u32;
            loop {
                steps += 1;
                let insn = prog[pc];
                pc += 1;
                match insn.code {
                    BPF_LD_W_ABS => {
                        acc = if insn.k == OFF_ARCH {
                            AUDIT_ARCH_X86_64
                        } else if insn.k == OFF_NR {
                            data_nr
                        } else {
                            0
                        }
                    }
                    BPF_AND_K => acc &= insn.k,
                    BPF_RET_K => break,
                    BPF_JMP_JA => pc += insn.k as usize,
                    _ => {
                        let c = match insn.code {
                            BPF_JEQ_K => acc == insn.k,
                            BPF_JGT_K => acc > insn.k,
                            _ => acc >= insn.k,
                        };
                        pc += if c { insn.jt } else { insn.jf } as usize;
                    }
                }
            }
            worst = worst.max(steps);
        }
        println!("longest path with all-zero arguments: {worst} instructions");
        assert!(worst < 60);
    }

    #[test]
    fn the_notify_filter_sends_calls_with_pointers_and_allows_the_rest() {
        let prog = build_notify().unwrap();
        let x86 = AUDIT_ARCH_X86_64;
        let run = |nr: i64, args: [u64; 6]| run(&prog, nr, x86, 0x40_1000, args);
        // A buffer, whatever its address.
        assert_eq!(run(nr::READ, [0, 0x1000, 8, 0, 0, 0]), RET_USER_NOTIF);
        assert_eq!(
            run(nr::WRITE, [1, 0x7fff_0000_0000, 8, 0, 0, 0]),
            RET_USER_NOTIF
        );
        // No pointer: nothing for the supervisor.
        assert_eq!(run(nr::READ, [0, 0, 8, 0, 0, 0]), RET_ALLOW);
        assert_eq!(run(nr::GETPID, [0; 6]), RET_ALLOW);
        // Through memory, and the calls a handler cannot re-issue.
        assert_eq!(run(nr::WRITEV, [1, 0, 0, 0, 0, 0]), RET_USER_NOTIF);
        for n in [nr::CLONE, nr::CLONE3, nr::SIGALTSTACK] {
            assert_eq!(run(n, [0; 6]), RET_USER_NOTIF, "{n}");
        }
        assert_eq!(run(nr::RT_SIGRETURN, [0; 6]), RET_ALLOW);
        // Another architecture (int 0x80) is not the table's.
        assert_eq!(
            super::run(&prog, nr::READ, 0x4000_0003, 0, [0, 0x1000, 8, 0, 0, 0]),
            RET_ALLOW
        );
    }
}
