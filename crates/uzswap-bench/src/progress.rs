//! Progress for long runs: a bar on a terminal, plain lines otherwise (CI
//! logs), nothing in tests.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// Where experiments report their progress.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
}

impl Progress {
    /// A bar of `total` steps on stderr, or lines if stderr is not a terminal.
    pub fn new(title: &str, total: u64) -> Self {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {elapsed} {msg}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(title.to_string());
            Self {
                bar: Some(bar),
                lines: false,
            }
        } else {
            eprintln!("{title}: {total} steps");
            Self {
                bar: None,
                lines: true,
            }
        }
    }

    /// Reports nothing.
    pub fn hidden() -> Self {
        Self {
            bar: None,
            lines: false,
        }
    }

    /// One step done; `msg` says which.
    pub fn step(&self, msg: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg.to_string());
            bar.inc(1);
        } else if self.lines {
            eprintln!("  done: {msg}");
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
