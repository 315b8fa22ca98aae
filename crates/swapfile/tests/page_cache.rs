//! The swap file stays out of the page cache: pages written to it reach
//! the device and leave memory (all but the last few MiB), pages read
//! from it leave once read, and none is lost on the way.

use swapfile::{FileIo, PageIo, UringIo, PAGE_SIZE, WRITTEN_LAG_BYTES};

/// Pages of the file behind `fd`, `len` bytes long, in the page cache
/// now (`mincore` of a shared read-only mapping of it).
fn cached_pages(fd: i32, len: usize) -> usize {
    // SAFETY: a new shared read-only mapping of a file we hold open;
    // nothing else is mapped at the address the kernel picks.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    assert_ne!(
        addr,
        libc::MAP_FAILED,
        "{}",
        std::io::Error::last_os_error()
    );
    let mut vec = vec![0u8; len.div_ceil(PAGE_SIZE)];
    // SAFETY: `addr` maps `len` bytes; `vec` holds a byte per page of them.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    // SAFETY: unmaps the mapping made above, used no more.
    unsafe { libc::munmap(addr, len) };
    vec.iter().filter(|&&b| b & 1 != 0).count()
}

fn page(n: usize) -> Vec<u8> {
    (0..PAGE_SIZE)
        .map(|i| (i as u8).wrapping_mul(31) ^ (n as u8) ^ ((n >> 8) as u8))
        .collect()
}

/// The test's folder: under the build's target folder, on a disk (the
/// page cache of a tmpfs file is the file itself and cannot be dropped).
fn dir() -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    assert_ne!(
        fs_type(&dir),
        libc::TMPFS_MAGIC,
        "{} is a tmpfs: this test needs a disk-backed folder",
        dir.display()
    );
    dir
}

/// The `f_type` of the file system `dir` is on.
fn fs_type(dir: &std::path::Path) -> libc::c_long {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: a zeroed statfs is a valid buffer for statfs to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a buffer of the right type.
    let rc = unsafe { libc::statfs(path.as_ptr(), &mut st) };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    st.f_type
}

/// Writes 16 MiB in runs of 64 pages, as writeback does, then reads every
/// page back one by one and a window of them in one request.
fn written_then_read_pages_leave_the_cache(io: &dyn PageIo) {
    const PAGES: usize = 4096;
    const RUN: usize = 64;
    let fd = io.raw_fd().expect("a file");
    let len = PAGES * PAGE_SIZE;
    let pages: Vec<Vec<u8>> = (0..PAGES).map(page).collect();
    for run in 0..PAGES / RUN {
        let writes: Vec<(u64, &[u8])> = (run * RUN..(run + 1) * RUN)
            .map(|n| ((n * PAGE_SIZE) as u64, pages[n].as_slice()))
            .collect();
        for r in io.write_batch(&writes) {
            r.unwrap();
        }
    }
    let lag = WRITTEN_LAG_BYTES as usize / PAGE_SIZE;
    let cached = cached_pages(fd, len);
    assert!(
        cached <= lag + RUN,
        "{}: {cached} of {PAGES} written pages still cached (at most {} may be)",
        io.name(),
        lag + RUN
    );
    let mut buf = vec![0u8; PAGE_SIZE];
    for (n, want) in pages.iter().enumerate() {
        io.read_at((n * PAGE_SIZE) as u64, &mut buf).unwrap();
        assert_eq!(&buf, want, "{}: page {n}", io.name());
    }
    let mut window = vec![0u8; 8 * PAGE_SIZE];
    let read = io.read_upto(100 * PAGE_SIZE as u64, &mut window).unwrap();
    assert_eq!(read, window.len());
    for (k, got) in window.chunks(PAGE_SIZE).enumerate() {
        assert_eq!(
            got,
            pages[100 + k].as_slice(),
            "{}: window page {k}",
            io.name()
        );
    }
    let cached = cached_pages(fd, len);
    assert!(
        cached <= lag + RUN,
        "{}: {cached} pages cached after reading them all back",
        io.name()
    );
}

#[test]
fn pread_pages_leave_the_page_cache() {
    let io = FileIo::create_anonymous(&dir()).unwrap();
    written_then_read_pages_leave_the_cache(&io);
}

#[test]
fn io_uring_pages_leave_the_page_cache() {
    let file = tempfile_in(&dir());
    let io = UringIo::new(file).expect("io_uring is enabled on this machine");
    written_then_read_pages_leave_the_cache(&io);
}

/// A new file, unlinked at once.
fn tempfile_in(dir: &std::path::Path) -> std::fs::File {
    let path = dir.join(format!("page-cache-{}", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

/// A swap file's own memory: on tmpfs, the pages written on it (they are
/// the file, and take memory outside any process); on a disk, none.
#[test]
fn a_file_in_memory_takes_memory_for_its_pages_and_one_on_a_disk_none() {
    use swapfile::{IoBackend, Protection, SwapFile};
    let write = |dir: &std::path::Path| {
        let dev = SwapFile::create_in(dir, 1024, IoBackend::Pread, Protection::Encrypted).unwrap();
        let slots = dev.alloc(16).unwrap();
        let pages: Vec<Vec<u8>> = (0..16).map(page).collect();
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        dev.write_pages(&slots, &refs).unwrap();
        dev
    };
    let on_disk = write(&dir());
    assert!(!on_disk.in_memory());
    assert_eq!(on_disk.memory_bytes(), 0);
    let shm = std::path::Path::new("/dev/shm");
    assert_eq!(
        fs_type(shm),
        libc::TMPFS_MAGIC,
        "/dev/shm is a tmpfs on Linux"
    );
    let in_memory = write(shm);
    assert!(in_memory.in_memory());
    let bytes = in_memory.memory_bytes();
    assert!(
        (16 * PAGE_SIZE as u64..=1024 * PAGE_SIZE as u64).contains(&bytes),
        "16 pages written on tmpfs take {bytes} bytes"
    );
}
