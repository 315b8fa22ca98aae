//! # launch — a whole program on uzswap memory
//!
//! The paging engine ([`runtime`]) knows nothing of processes, environment
//! variables or report files; this crate is what sits between it and a
//! user's command line:
//!
//! * [`settings`]: [`Settings`], the settings of a program-wide runtime,
//!   declared **once each**, as the rows of one table (`settings! { … }`
//!   in `settings.rs`): field, type and default, variable, flag, how the
//!   value is read and written, and its range. Each setting has one name
//!   from flag to variable to field: `--limit` / `UZSWAP_LIMIT` /
//!   `limit_bytes` (fields carry their unit: `_bytes`). The struct, its
//!   defaults, [`Settings::from_vars`], [`Settings::validate`],
//!   [`Settings::to_vars`] and [`settings::env::VARS`] (every variable
//!   with its flag) are made from the table; `uzswap run`'s clap flags are
//!   checked against it by a test. [`Settings::runtime_config`] turns the
//!   settings into a [`runtime::RuntimeConfig`], with the pool's share of
//!   the limit decided in one place ([`Settings::pool_limit`]).
//! * [`run`]: `uzswap run` — finds the LD_PRELOAD library, checks that
//!   userfaultfd works for this user, starts the program with the settings
//!   in its environment and gathers every process's report at its end.
//! * [`control`]: `--max-slowdown`'s controller, which lowers the run's
//!   shared limit while the program waits little on uzswap and raises it
//!   when it waits more (Senpai's loop, on the runtimes' own stall
//!   counts).
//! * [`thrash`]: under a fixed limit, a watch that tells the user once,
//!   while the run goes on, that the program waits on paging more than
//!   half of ten seconds (the limit was a guess too low).
//! * [`report`]: the per-process report, typed ([`report::ProcessReport`])
//!   on both sides of its text form: the preloaded program writes it
//!   (`STATS_DIR/PID.stats` at exit, `RUN_DIR/PID.sock` live), `uzswap run`
//!   and `uzswap stats` read it back into the same struct.
//!
//! ## The boundary with the program
//!
//! `uzswap run` and the preloaded program share nothing but the `UZSWAP_*`
//! variables (parent → child) and the report files (child → parent). Both
//! sides are this crate's code, so a name changes in one place.

pub mod control;
pub mod outside;
pub mod report;
pub mod run;
pub mod rundir;
pub mod settings;
pub mod thrash;

pub use report::ProcessReport;
pub use run::{
    children_cpu, find_library, live_stats, new_stats_dir, read_stats_dir, Launch, LaunchError,
    Outcome,
};
pub use settings::{format_size, parse_size, Settings, SettingsError, SmallObjects};
