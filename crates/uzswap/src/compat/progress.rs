//! What the suite is doing while it runs: a progress bar on a terminal,
//! a line per phase and per finished case otherwise (CI logs).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;

/// Progress: a bar on a terminal, lines otherwise (CI logs).
pub(super) struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(super) fn new(total: u64) -> Self {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("compat [{bar:20}] {pos}/{len} {elapsed} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(500));
        Progress { bar: Some(bar) }
    }

    /// What is running now.
    pub(super) fn phase(&self, what: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None => eprintln!("compat: {what}"),
        }
    }

    /// One case finished for one user.
    pub(super) fn done(&self, line: &str) {
        match &self.bar {
            Some(bar) => {
                bar.println(format!("compat: {line}"));
                bar.inc(1);
            }
            None => eprintln!("compat: {line}"),
        }
    }

    pub(super) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
