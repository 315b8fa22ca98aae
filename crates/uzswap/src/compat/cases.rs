//! The programs of `uzswap compat`: what each needs, how its input is
//! made, its command line, its limit and which files it writes.
//!
//! Every program is named by its system path (`/usr/bin/python3`, not a
//! shim in /root), so `nobody` runs the same binary as root. Helper scripts
//! and sources live in `crates/uzswap/compat/` and are built into the
//! `uzswap` binary.

use super::gen;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// Input sizes: `Quick` fits CI (the whole suite, both users, in about ten
/// minutes on 2 cores), `Full` is the size users care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Quick,
    Full,
}

impl Scale {
    /// Longest a single run may take before it is killed.
    pub fn timeout(self) -> Duration {
        match self {
            Scale::Quick => Duration::from_secs(300),
            Scale::Full => Duration::from_secs(3600),
        }
    }
}

/// One scale's parameters of a case.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    /// The case's one size knob (bytes, elements, rows or keys: see the
    /// case).
    pub size: u64,
    /// `uzswap run --limit`, bytes: at most a quarter of the footprint.
    pub limit: u64,
}

/// Something a case needs installed.
#[derive(Debug, Clone, Copy)]
pub enum Need {
    Program(&'static str),
    /// One of these programs.
    OneOf(&'static [&'static str]),
    PythonModule(&'static str),
    /// `rustc` (in `PATH`) with the standard library of this target.
    RustTarget(&'static str),
}

impl Need {
    /// `None` when present, else what is missing.
    pub fn missing(self) -> Option<String> {
        match self {
            Need::Program(path) => {
                use std::os::unix::fs::PermissionsExt;
                let ok = std::fs::metadata(path)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
                (!ok).then(|| path.to_string())
            }
            Need::OneOf(paths) => {
                let any = paths.iter().any(|p| Need::Program(p).missing().is_none());
                (!any).then(|| paths.join(" or "))
            }
            Need::PythonModule(module) => {
                let ok = Command::new(PYTHON)
                    .args(["-c", &format!("import {module}")])
                    .output()
                    .is_ok_and(|o| o.status.success());
                (!ok).then(|| format!("{PYTHON} module {module}"))
            }
            Need::RustTarget(target) => {
                let libdir = Command::new(rustc().unwrap_or_else(|| "rustc".into()))
                    .args(["--print", "target-libdir", "--target", target])
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
                let ok = libdir
                    .and_then(|d| std::fs::read_dir(d).ok())
                    .is_some_and(|mut d| {
                        d.any(|e| {
                            e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
                        })
                    });
                (!ok)
                    .then(|| format!("rustc with the {target} target (rustup target add {target})"))
            }
        }
    }
}

/// Where a case's input lies and how big it is.
pub struct Ctx<'a> {
    /// The case's input folder (readable by every user of the run).
    pub input: &'a Path,
    pub size: u64,
}

impl Ctx<'_> {
    fn path(&self, name: &str) -> String {
        self.input.join(name).display().to_string()
    }

    /// Writes one of the built-in helper files into the input folder.
    fn put(&self, name: &str, text: &str) -> Result<(), String> {
        let path = self.input.join(name);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

/// One program of the suite.
pub struct Case {
    pub name: &'static str,
    /// What it exercises, one line.
    pub about: &'static str,
    /// What `Sizes::size` counts ("bytes", "rows", …).
    pub unit: &'static str,
    pub needs: &'static [Need],
    pub quick: Sizes,
    pub full: Sizes,
    /// Makes the input files (deterministically) in `ctx.input`.
    pub setup: fn(&Ctx) -> Result<(), String>,
    /// The command line; it runs in a fresh folder, where it writes its
    /// outputs.
    pub command: fn(&Ctx) -> Vec<String>,
    /// Files the command writes (relative to its folder), compared by
    /// sha256 besides its stdout.
    pub outputs: &'static [&'static str],
    /// Run the plain command twice first, to prove its outputs are
    /// deterministic (else a difference would blame uzswap wrongly).
    pub check_plain_twice: bool,
    /// Flags of `uzswap run` besides `--limit` (`--small-objects`).
    pub flags: &'static [&'static str],
}

impl Case {
    pub fn sizes(&self, scale: Scale) -> Sizes {
        match scale {
            Scale::Quick => self.quick,
            Scale::Full => self.full,
        }
    }

    /// `size` with its unit ("128M file", "800000 rows").
    pub fn describe_size(&self, scale: Scale) -> String {
        let size = self.sizes(scale).size;
        let text = if self.unit.contains("bytes") {
            format!(
                "{} {}",
                super::summary::human_size(size),
                self.unit.replace("bytes", "").trim()
            )
        } else {
            format!("{size} {}", self.unit)
        };
        text.trim_end().to_string()
    }

    pub fn missing(&self) -> Vec<String> {
        self.needs.iter().filter_map(|n| n.missing()).collect()
    }
}

const PYTHON: &str = "/usr/bin/python3";
const NODE: &str = "/usr/bin/node";
const JAVA: &str = "/usr/bin/java";
const JAVAC: &str = "/usr/bin/javac";
const SQLITE: &str = "/usr/bin/sqlite3";
const SORT: &str = "/usr/bin/sort";
const SH: &str = "/bin/sh";
const XZ: &str = "/usr/bin/xz";
const ZSTD: &str = "/usr/bin/zstd";
const SHA256SUM: &str = "/usr/bin/sha256sum";
const GCC: &str = "/usr/bin/gcc";
const CC: &str = "/usr/bin/cc";
const REDIS_SERVER: &str = "/usr/bin/redis-server";
const REDIS_CLI: &str = "/usr/bin/redis-cli";
const REDIS_BENCHMARK: &str = "/usr/bin/redis-benchmark";
/// The server of any PostgreSQL of Debian's and Ubuntu's recent releases
/// (`postgres.sh` takes the newest there is).
const POSTGRES: &[&str] = &[
    "/usr/lib/postgresql/17/bin/postgres",
    "/usr/lib/postgresql/16/bin/postgres",
    "/usr/lib/postgresql/15/bin/postgres",
    "/usr/lib/postgresql/14/bin/postgres",
    "/usr/lib/postgresql/13/bin/postgres",
];
const PSQL: &str = "/usr/bin/psql";
const PERL: &str = "/usr/bin/perl";
/// util-linux's: `postgres.sh` runs the server as nobody when root.
const SETPRIV: &str = "/usr/bin/setpriv";

const PYTHON_HASH: &str = include_str!("../../compat/python_hash.py");
const PYTHON_LIST: &str = include_str!("../../compat/python_list.py");
const NUMPY_SUM: &str = include_str!("../../compat/numpy_sum.py");
const PYTHON_MP_FORK: &str = include_str!("../../compat/python_mp_fork.py");
const NODE_BUFFER: &str = include_str!("../../compat/node_buffer.js");
const NODE_HEAP: &str = include_str!("../../compat/node_heap.js");
const COMPAT_JAVA: &str = include_str!("../../compat/Compat.java");
const SQLITE_SQL: &str = include_str!("../../compat/sqlite.sql");
const REDIS_SH: &str = include_str!("../../compat/redis.sh");
const REDIS_HOT_SH: &str = include_str!("../../compat/redis_hot.sh");
const POSTGRES_SH: &str = include_str!("../../compat/postgres.sh");
const PERL_HASH: &str = include_str!("../../compat/perl_hash.pl");
const HOTSET: &str = include_str!("../../compat/hotset.py");
const USEMEM_C: &str = include_str!("../../compat/usemem.c");
const RANDPAGE_C: &str = include_str!("../../compat/randpage.c");
const GOMEM_GO: &str = include_str!("../../compat/gomem.go");
const GONET_GO: &str = include_str!("../../compat/gonet.go");
const GOHOT_GO: &str = include_str!("../../compat/gohot.go");
const RUSTMEM_RS: &str = include_str!("../../compat/rustmem.rs");
const MUSL: &str = "x86_64-unknown-linux-musl";
/// Where a Go toolchain is looked for: Go's own installation, then the
/// distribution's package (scripts/setup.sh installs it where neither is).
const GO: &[&str] = &["/usr/local/go/bin/go", "/usr/bin/go"];

/// Seed of every generated input (change it and the inputs change).
const SEED: u64 = 0x757A_7377_6170; // "uzswap"

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn io(what: &Path) -> impl Fn(std::io::Error) -> String + '_ {
    move |e| format!("{}: {e}", what.display())
}

/// Runs a setup tool (a compiler), its stderr in the error.
fn tool(argv: &[&str]) -> Result<(), String> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Text lines (sort, xz, zstd).
fn text_input(ctx: &Ctx) -> Result<(), String> {
    let path = ctx.input.join("text.txt");
    gen::text_file(&path, ctx.size, SEED).map_err(io(&path))
}

/// The cases, in the order they run.
pub const CASES: &[Case] = &[
    Case {
        name: "python-hash",
        about: "python3 reads a whole file with open(f,'rb').read() and hashes it",
        unit: "file bytes",
        needs: &[Need::Program(PYTHON)],
        quick: Sizes { size: 128 * MIB, limit: 32 * MIB },
        full: Sizes { size: 200 * MIB, limit: 48 * MIB },
        setup: |ctx| {
            ctx.put("python_hash.py", PYTHON_HASH)?;
            let path = ctx.input.join("data.bin");
            gen::mixed_file(&path, ctx.size, SEED).map_err(io(&path))
        },
        command: |ctx| vec![PYTHON.into(), ctx.path("python_hash.py"), ctx.path("data.bin")],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "python-list",
        about: "python3 builds a list and a dict of strings and checksums them",
        unit: "strings",
        needs: &[Need::Program(PYTHON)],
        quick: Sizes { size: 1_000_000, limit: 24 * MIB },
        full: Sizes { size: 10_000_000, limit: 192 * MIB },
        setup: |ctx| ctx.put("python_list.py", PYTHON_LIST),
        command: |ctx| vec![PYTHON.into(), ctx.path("python_list.py"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "numpy",
        about: "numpy: uint64 and float64 arrays, arithmetic, a sort, sums",
        unit: "elements",
        needs: &[Need::Program(PYTHON), Need::PythonModule("numpy")],
        quick: Sizes { size: 12 << 20, limit: 64 * MIB },
        full: Sizes { size: 128 << 20, limit: 512 * MIB },
        setup: |ctx| ctx.put("numpy_sum.py", NUMPY_SUM),
        command: |ctx| vec![PYTHON.into(), ctx.path("numpy_sum.py"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "python-mp-fork",
        about: "python3 multiprocessing (fork): 4 workers read the parent's bytearray",
        unit: "bytes",
        needs: &[Need::Program(PYTHON)],
        quick: Sizes { size: 128 * MIB, limit: 32 * MIB },
        full: Sizes { size: 1024 * MIB, limit: 224 * MIB },
        setup: |ctx| ctx.put("python_mp_fork.py", PYTHON_MP_FORK),
        command: |ctx| vec![PYTHON.into(), ctx.path("python_mp_fork.py"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "node-buffer",
        about: "node: a Buffer through fs.writeFileSync and fs.readFileSync",
        unit: "bytes",
        needs: &[Need::Program(NODE)],
        quick: Sizes { size: 128 * MIB, limit: 48 * MIB },
        full: Sizes { size: 256 * MIB, limit: 96 * MIB },
        setup: |ctx| ctx.put("node_buffer.js", NODE_BUFFER),
        command: |ctx| {
            vec![NODE.into(), ctx.path("node_buffer.js"), ctx.size.to_string(), "out.bin".into()]
        },
        outputs: &["out.bin"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "node-heap",
        about: "node: small objects on V8's heap (a reservation committed with mprotect), hashed",
        unit: "objects",
        needs: &[Need::Program(NODE)],
        quick: Sizes { size: 1_000_000, limit: 48 * MIB },
        full: Sizes { size: 3_000_000, limit: 128 * MIB },
        setup: |ctx| ctx.put("node_heap.js", NODE_HEAP),
        command: |ctx| vec![NODE.into(), ctx.path("node_heap.js"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "java-nio",
        about: "java: direct ByteBuffers written and read back through a FileChannel",
        unit: "bytes",
        needs: &[Need::Program(JAVA), Need::Program(JAVAC)],
        quick: Sizes { size: 128 * MIB, limit: 48 * MIB },
        full: Sizes { size: 512 * MIB, limit: 192 * MIB },
        setup: compile_java,
        command: |ctx| {
            let mut argv = java(ctx, "256m");
            argv.extend(strings(&["-XX:MaxDirectMemorySize=4g", "Compat", "nio"]));
            argv.extend([ctx.size.to_string(), "out.bin".into()]);
            argv
        },
        outputs: &["out.bin"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "java-heap",
        about: "java: a long[] on the JVM heap filled, sorted and summed",
        unit: "elements",
        needs: &[Need::Program(JAVA), Need::Program(JAVAC)],
        quick: Sizes { size: 32 << 20, limit: 64 * MIB },
        full: Sizes { size: 64 << 20, limit: 128 * MIB },
        setup: compile_java,
        command: |ctx| {
            // Room for the array twice over (G1 places it as humongous).
            let heap = format!("{}m", (ctx.size * 8 * 2 / MIB).max(64));
            let mut argv = java(ctx, &heap);
            argv.extend(strings(&["Compat", "heap"]));
            argv.push(ctx.size.to_string());
            argv
        },
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "sqlite",
        about: "sqlite3: a table and index in a large -pagecache, integrity_check, sha3",
        unit: "rows",
        needs: &[Need::Program(SQLITE)],
        quick: Sizes { size: 200_000, limit: 8 * MIB },
        full: Sizes { size: 5_000_000, limit: 160 * MIB },
        setup: sqlite_script,
        command: |ctx| {
            let slots = sqlite_cache_bytes(ctx.size) / 4096;
            vec![
                SQLITE.into(),
                "-pagecache".into(),
                SQLITE_SLOT.to_string(),
                slots.to_string(),
                "db.sqlite".into(),
                format!(".read {}", ctx.path("sqlite.sql")),
            ]
        },
        outputs: &["db.sqlite"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "sqlite-heap",
        about: "sqlite3 as it comes: its page cache is one small malloc per page (--small-objects)",
        unit: "rows",
        needs: &[Need::Program(SQLITE)],
        quick: Sizes { size: 100_000, limit: 4 * MIB },
        full: Sizes { size: 800_000, limit: 32 * MIB },
        setup: sqlite_script,
        command: |ctx| {
            vec![
                SQLITE.into(),
                "db.sqlite".into(),
                format!(".read {}", ctx.path("sqlite.sql")),
            ]
        },
        outputs: &["db.sqlite"],
        check_plain_twice: false,
        flags: &["--small-objects"],
    },
    Case {
        name: "sort",
        about: "sort -S of a text file larger than the limit",
        unit: "bytes",
        needs: &[Need::Program(SORT)],
        quick: Sizes { size: 24 * MIB, limit: 10 * MIB },
        full: Sizes { size: 500 * MIB, limit: 120 * MIB },
        setup: text_input,
        command: |ctx| {
            vec![
                SORT.into(),
                "-S".into(),
                "512M".into(),
                "-o".into(),
                "sorted.txt".into(),
                ctx.path("text.txt"),
            ]
        },
        outputs: &["sorted.txt"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "xz",
        about: "xz -9 -T1 of a text file and back",
        unit: "bytes",
        needs: &[Need::Program(XZ), Need::Program(SH), Need::Program(SHA256SUM)],
        // xz -9's match finder takes about 12x its input (up to 674M), read
        // at random: at a quarter of that it thrashes (1M: 0.6s plain,
        // about 30s paged).
        quick: Sizes { size: 512 << 10, limit: 9 * MIB },
        full: Sizes { size: 300 * MIB, limit: 160 * MIB },
        setup: text_input,
        command: |ctx| {
            shell(
                ctx,
                r#"xz -9 -T1 -c "$1" > data.xz && xz -dc data.xz | sha256sum"#,
            )
        },
        outputs: &["data.xz"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "zstd",
        about: "zstd -19 --long=27 of a text file and back",
        unit: "bytes",
        needs: &[Need::Program(ZSTD), Need::Program(SH), Need::Program(SHA256SUM)],
        // The tables are read at random, and paged time grows much faster
        // than the input: 4M (a 90 MiB footprint) passed the 300s timeout
        // on a loaded 2-CPU machine. 1M: a 38 MiB footprint, a quarter of
        // it as the limit.
        quick: Sizes { size: 512 << 10, limit: 5 * MIB },
        full: Sizes { size: 300 * MIB, limit: 96 * MIB },
        setup: text_input,
        command: |ctx| {
            shell(
                ctx,
                r#"zstd -q -19 --long=27 -T1 -c "$1" > data.zst && zstd -q -d --long=27 -c data.zst | sha256sum"#,
            )
        },
        outputs: &["data.zst"],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "gcc",
        about: "gcc -O2 -c of a generated C file",
        unit: "source bytes",
        needs: &[Need::Program(GCC)],
        quick: Sizes { size: 512 << 10, limit: 32 * MIB },
        full: Sizes { size: 2 * MIB, limit: 64 * MIB },
        setup: |ctx| {
            let path = ctx.input.join("gen.c");
            gen::c_source(&path, ctx.size, SEED).map_err(io(&path))
        },
        command: |ctx| {
            vec![
                GCC.into(),
                "-O2".into(),
                "-frandom-seed=uzswap-compat".into(),
                "-c".into(),
                ctx.path("gen.c"),
                "-o".into(),
                "gen.o".into(),
            ]
        },
        outputs: &["gen.o"],
        check_plain_twice: true,
        flags: &[],
    },
    Case {
        name: "redis",
        about: "redis-server on a Unix socket: DEBUG POPULATE, a RESP load, BGSAVE, restart from the RDB",
        unit: "keys",
        needs: &[Need::Program(REDIS_SERVER), Need::Program(REDIS_CLI), Need::Program(SH)],
        quick: Sizes { size: 120_000, limit: 9 * MIB },
        full: Sizes { size: 4_000_000, limit: 160 * MIB },
        setup: redis_inputs,
        command: redis_script,
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "redis-heap",
        about: "redis-server as `redis`, its dataset of small objects paged (--small-objects)",
        unit: "keys",
        needs: &[Need::Program(REDIS_SERVER), Need::Program(REDIS_CLI), Need::Program(SH)],
        // 9M: a quarter of the plain run's 37M (10M was 3.7x).
        quick: Sizes { size: 70_000, limit: 6 * MIB },
        full: Sizes { size: 1_000_000, limit: 64 * MIB },
        setup: redis_inputs,
        command: redis_script,
        outputs: &[],
        check_plain_twice: false,
        flags: &["--small-objects"],
    },
    Case {
        name: "perl-hash",
        about: "perl: a hash of small objects (each key an array of three scalars), walked in sorted key order",
        unit: "keys",
        needs: &[Need::Program(PERL)],
        // 31M plain at 50k keys, 530M at 1M.
        quick: Sizes { size: 50_000, limit: 7 * MIB },
        full: Sizes { size: 1_000_000, limit: 128 * MIB },
        setup: |ctx| ctx.put("perl_hash.pl", PERL_HASH),
        command: |ctx| vec![PERL.into(), ctx.path("perl_hash.pl"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "postgres",
        about: "PostgreSQL: initdb, a server on a Unix socket, a table by generate_series, an in-memory sort, a hash aggregate, an index build (as root, the server runs as nobody)",
        unit: "rows",
        needs: &[Need::OneOf(POSTGRES), Need::Program(PSQL), Need::Program(SETPRIV), Need::Program(SH)],
        // The backend's sort holds every row in its private memory: about
        // 52M plain at 100k rows, 600M at 1.5M.
        quick: Sizes { size: 100_000, limit: 12 * MIB },
        full: Sizes { size: 1_500_000, limit: 96 * MIB },
        setup: |ctx| ctx.put("postgres.sh", POSTGRES_SH),
        command: |ctx| vec![SH.into(), ctx.path("postgres.sh"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "usemem",
        about: "usemem: 2 (quick) or 4 forked workers each mmap, fill and check memory",
        unit: "bytes each",
        needs: &[Need::Program(CC)],
        // The limit is shared by the workers: a quarter of one worker's
        // memory, an eighth (quick) or a sixteenth (full) of all of it.
        quick: Sizes { size: 128 * MIB, limit: 28 * MIB },
        full: Sizes { size: 512 * MIB, limit: 128 * MIB },
        setup: |ctx| {
            ctx.put("usemem.c", USEMEM_C)?;
            tool(&[CC, "-O2", "-o", &ctx.path("usemem"), &ctx.path("usemem.c")])
        },
        command: |ctx| {
            let workers = if ctx.size >= 512 * MIB { 4 } else { 2 };
            vec![ctx.path("usemem"), workers.to_string(), ctx.size.to_string()]
        },
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "randpage",
        about: "random reads and writes of single words over one buffer, 8 per page, each fault's latency timed",
        unit: "bytes",
        needs: &[Need::Program(CC)],
        quick: Sizes { size: 64 * MIB, limit: 16 * MIB },
        full: Sizes { size: 512 * MIB, limit: 128 * MIB },
        setup: |ctx| build_randpage(ctx, &[]),
        command: randpage_command,
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "randpage-static",
        about: "randpage linked statically (cc -static): the same random accesses, paged from outside",
        unit: "bytes",
        needs: &[Need::Program(CC)],
        quick: Sizes { size: 64 * MIB, limit: 16 * MIB },
        full: Sizes { size: 512 * MIB, limit: 128 * MIB },
        setup: |ctx| build_randpage(ctx, &["-static"]),
        command: randpage_command,
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "go-static",
        about: "a statically linked Go program (CGO_ENABLED=0) fills and hashes a buffer, then churns maps for its collector: paged from outside",
        unit: "bytes",
        needs: &[Need::OneOf(GO)],
        quick: Sizes { size: 128 * MIB, limit: 32 * MIB },
        full: Sizes { size: 512 * MIB, limit: 128 * MIB },
        setup: |ctx| go_build(ctx, GOMEM_GO),
        command: |ctx| vec![ctx.path("gomem"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "go-net",
        about: "a statically linked Go service: records in its heap served over HTTP on loopback (net/http) to eight clients in the same process, which hash what they fetch: paged from outside",
        unit: "MiB",
        needs: &[Need::OneOf(GO)],
        quick: Sizes { size: 128, limit: 32 * MIB },
        full: Sizes { size: 512, limit: 128 * MIB },
        setup: |ctx| go_build(ctx, GONET_GO),
        command: |ctx| vec![ctx.path("gomem"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "rust-musl",
        about: "a Rust program built for musl (statically linked): fills, hashes and randomly rewrites a buffer, then builds maps in threads: paged from outside",
        unit: "bytes",
        needs: &[Need::RustTarget(MUSL)],
        quick: Sizes { size: 64 * MIB, limit: 16 * MIB },
        full: Sizes { size: 512 * MIB, limit: 128 * MIB },
        setup: |ctx| {
            ctx.put("rustmem.rs", RUSTMEM_RS)?;
            let (out, src) = (ctx.path("rustmem"), ctx.path("rustmem.rs"));
            let rustc = rustc().ok_or("no rustc")?;
            let argv = [&rustc, "--edition", "2021", "-O", "--target", MUSL, "-o", &out, &src];
            tool(&argv)
        },
        command: |ctx| vec![ctx.path("rustmem"), ctx.size.to_string()],
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
];

/// The compiler itself (in its sysroot, not rustup's proxy, which needs
/// the user's environment), as the `rustc` in `PATH` names it.
fn rustc() -> Option<String> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let bin = std::path::Path::new(&sysroot).join("bin/rustc");
    (out.status.success() && bin.is_file()).then(|| bin.to_string_lossy().into_owned())
}

/// Compiles `randpage.c` (with `flags`: `-static`).
fn build_randpage(ctx: &Ctx, flags: &[&str]) -> Result<(), String> {
    ctx.put("randpage.c", RANDPAGE_C)?;
    let (out, src) = (ctx.path("randpage"), ctx.path("randpage.c"));
    let mut argv = vec![CC, "-O2"];
    argv.extend_from_slice(flags);
    argv.extend(["-o", out.as_str(), src.as_str()]);
    tool(&argv)
}

/// `randpage BYTES ACCESSES`: eight accesses a page.
fn randpage_command(ctx: &Ctx) -> Vec<String> {
    let accesses = ctx.size / 4096 * 8;
    vec![
        ctx.path("randpage"),
        ctx.size.to_string(),
        accesses.to_string(),
    ]
}

/// Builds the Go program `source` as `gomem`, statically (CGO_ENABLED=0),
/// offline, with the build's caches in the case's folder.
fn go_build(ctx: &Ctx, source: &str) -> Result<(), String> {
    ctx.put("main.go", source)?;
    ctx.put("go.mod", "module gomem\n\ngo 1.19\n")?;
    let go = GO
        .iter()
        .find(|p| Need::Program(p).missing().is_none())
        .ok_or("no Go toolchain")?;
    let out = Command::new(go)
        .args(["build", "-o", &ctx.path("gomem"), "."])
        .current_dir(ctx.input)
        .env_clear()
        .env("PATH", "/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin")
        .env("HOME", ctx.input)
        .env("GOCACHE", ctx.input.join("gocache"))
        .env("GOPATH", ctx.input.join("gopath"))
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0")
        .output()
        .map_err(|e| format!("cannot run {go}: {e}"))?;
    // The caches are the build's only: not left for the runs' users.
    let _ = std::fs::remove_dir_all(ctx.input.join("gocache"));
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "go build failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Programs of `uzswap bench savings` only: services with a small hot set,
/// run without a limit (`Sizes::limit` is 0). Their `size` is the number
/// of records or keys; the lookups are a multiple of it.
pub const SAVINGS_CASES: &[Case] = &[
    Case {
        name: "python-service",
        about: "python3 holds dict records and serves lookups, 99% of them to the hottest 5%",
        unit: "records",
        needs: &[Need::Program(PYTHON)],
        quick: Sizes { size: 300_000, limit: 0 },
        full: Sizes { size: 1_000_000, limit: 0 },
        setup: |ctx| ctx.put("hotset.py", HOTSET),
        command: |ctx| {
            vec![
                PYTHON.into(),
                ctx.path("hotset.py"),
                ctx.size.to_string(),
                (3 * ctx.size).to_string(),
            ]
        },
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "go-service",
        about: "a statically linked Go program (CGO_ENABLED=0) holds records of 256 bytes and serves lookups, all but one in 10,000 to the hottest 5%: paged from outside",
        unit: "records",
        needs: &[Need::OneOf(GO)],
        quick: Sizes { size: 300_000, limit: 0 },
        full: Sizes { size: 1_500_000, limit: 0 },
        setup: |ctx| go_build(ctx, GOHOT_GO),
        command: |ctx| {
            vec![
                ctx.path("gomem"),
                ctx.size.to_string(),
                (200 * ctx.size).to_string(),
            ]
        },
        outputs: &[],
        check_plain_twice: false,
        flags: &[],
    },
    Case {
        name: "redis-hot",
        about: "redis-server holds keys of 200 bytes and serves GETs by redis-benchmark, 99% to the hottest 5%",
        unit: "keys",
        needs: &[
            Need::Program(REDIS_SERVER),
            Need::Program(REDIS_CLI),
            Need::Program(REDIS_BENCHMARK),
            Need::Program(SH),
        ],
        quick: Sizes { size: 200_000, limit: 0 },
        full: Sizes { size: 1_000_000, limit: 0 },
        setup: |ctx| {
            ctx.put("redis_hot.sh", REDIS_HOT_SH)?;
            let path = ctx.input.join("load.resp");
            gen::redis_numbered_keys(&path, ctx.size, 200, SEED).map_err(io(&path))
        },
        command: |ctx| {
            vec![
                SH.into(),
                ctx.path("redis_hot.sh"),
                ctx.size.to_string(),
                ctx.path("load.resp"),
                (4 * ctx.size).to_string(),
            ]
        },
        outputs: &[],
        check_plain_twice: false,
        // Its keys and values are small objects of its allocator.
        flags: &["--small-objects"],
    },
];

/// Bytes of one `-pagecache` slot: a 4 KiB page and sqlite's page header.
const SQLITE_SLOT: u64 = 4096 + 512;

/// sqlite's page cache for `rows` rows: room for the whole database
/// (about 110 bytes a row with its index entry).
/// `sqlite.sql` with its rows and page-cache size filled in.
fn sqlite_script(ctx: &Ctx) -> Result<(), String> {
    let sql = SQLITE_SQL.replace("@ROWS@", &ctx.size.to_string()).replace(
        "@CACHE_KIB@",
        &(sqlite_cache_bytes(ctx.size) >> 10).to_string(),
    );
    ctx.put("sqlite.sql", &sql)
}

/// `redis.sh` and its RESP load (a quarter of the keys, 200-byte values).
fn redis_inputs(ctx: &Ctx) -> Result<(), String> {
    ctx.put("redis.sh", REDIS_SH)?;
    let path = ctx.input.join("load.resp");
    gen::redis_commands(&path, ctx.size / 4, 200, SEED).map_err(io(&path))
}

/// `sh redis.sh KEYS load.resp`.
fn redis_script(ctx: &Ctx) -> Vec<String> {
    vec![
        SH.into(),
        ctx.path("redis.sh"),
        ctx.size.to_string(),
        ctx.path("load.resp"),
    ]
}

fn sqlite_cache_bytes(rows: u64) -> u64 {
    (rows * 128).max(16 * MIB)
}

/// `sh -c SCRIPT sh INPUT/text.txt`.
fn shell(ctx: &Ctx, script: &str) -> Vec<String> {
    vec![
        SH.into(),
        "-c".into(),
        script.into(),
        "sh".into(),
        ctx.path("text.txt"),
    ]
}

/// `java` with a heap of `heap`, classes from the input folder, and no
/// hsperfdata file in /tmp.
fn java(ctx: &Ctx, heap: &str) -> Vec<String> {
    vec![
        JAVA.into(),
        "-XX:-UsePerfData".into(),
        format!("-Xmx{heap}"),
        "-cp".into(),
        ctx.path(""),
    ]
}

fn compile_java(ctx: &Ctx) -> Result<(), String> {
    ctx.put("Compat.java", COMPAT_JAVA)?;
    tool(&[JAVAC, "-d", &ctx.path(""), &ctx.path("Compat.java")])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_sizes_sane() {
        let mut names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CASES.len());
        for c in CASES {
            for s in [c.quick, c.full] {
                assert!(s.limit >= 4 * MIB && s.size > 0, "{}", c.name);
            }
            assert!(c.quick.size <= c.full.size, "{}", c.name);
        }
    }
}
