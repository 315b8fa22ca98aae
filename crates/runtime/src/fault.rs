//! The fault loop: the handler thread reads userfaultfd events and runs the
//! protocol's operation for each. Plumbing only: what a fault does is in
//! [`crate::protocol`]; unexpected events end the program loudly.

use crate::config::InjectFailure;
use crate::fatal;
use crate::pager::{Pager, Traced};
use crate::protocol::{MissingFault, WpFault, PAGE};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use userfaultfd::{Event, EventBuffer, FaultKind, ReadWrite};

impl Pager {
    pub(crate) fn fault_loop(&self) {
        self.register_runtime_thread();
        let live = self.env.live();
        let mut events = EventBuffer::new(64);
        let mut fds = [
            libc::pollfd {
                fd: live.uffd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: live.stop_fd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Pages of throttled faults whose threads still sleep.
        let mut throttled = Vec::new();
        loop {
            let timeout = if throttled.is_empty() { -1 } else { 5 };
            // SAFETY: two valid pollfds, for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                fatal::die(&format!("poll on the userfaultfd: {e}"));
            }
            if self.stopping() {
                return;
            }
            self.release_throttled(&mut throttled);
            if n == 0 {
                continue;
            }
            let batch = match live.uffd.read_events(&mut events) {
                Ok(batch) => batch,
                Err(e) => fatal::die(&format!("reading userfaultfd events: {e}")),
            };
            for event in batch {
                match event {
                    Ok(e) => self.handle(e, &mut throttled),
                    Err(e) => fatal::die(&format!("bad userfaultfd event: {e}")),
                }
            }
            self.release_throttled(&mut throttled);
        }
    }

    fn handle(&self, event: Event, throttled: &mut Vec<usize>) {
        if self.cfg.inject_failure == Some(InjectFailure::FaultHandlerPanic) {
            panic!("injected panic in the fault handler");
        }
        let started = std::time::Instant::now();
        let began = self.trace_clock();
        match event {
            Event::Pagefault {
                kind,
                rw,
                addr,
                thread_id,
            } => {
                let addr = addr as usize & !(PAGE - 1);
                let by_runtime = self.is_runtime_thread(thread_id.as_raw());
                match kind {
                    FaultKind::Missing => {
                        let write = rw == ReadWrite::Write;
                        let first_touch = {
                            let st = self.lock();
                            st.locate(addr).is_some_and(|(base, idx)| {
                                st.regions[&base].pages[idx].state
                                    == crate::protocol::PageState::Untouched
                            })
                        };
                        let mut op = MissingFault::new(addr, write, by_runtime);
                        let throttle = !by_runtime && self.over_ceiling();
                        if throttle {
                            op = op.defer_wake();
                            self.env.counters.throttled_faults.fetch_add(1, Ordering::Relaxed);
                        }
                        self.drive(|cx| op.step(cx));
                        if !by_runtime {
                            let kind = Traced::Missing { write, first_touch };
                            self.record_fault(began, addr, kind, thread_id.as_raw());
                        }
                        if throttle {
                            throttled.push(addr);
                        }
                        if !by_runtime && !first_touch {
                            // Service time only: the faulting thread also
                            // waited for this thread to read the event and
                            // to wake it. A first touch maps zeros, as the
                            // kernel would for a plain run: no stall.
                            self.note_stall(started.elapsed());
                        }
                    }
                    FaultKind::WriteProtected if by_runtime => fatal::die(&format!(
                        "runtime thread {} wrote to region page {addr:#x} (invariant: runtime threads only read pages they evict)",
                        thread_id.as_raw()
                    )),
                    FaultKind::WriteProtected => {
                        let mut op = WpFault::new(addr);
                        self.drive(|cx| op.step(cx));
                        self.record_fault(began, addr, Traced::WpFault, thread_id.as_raw());
                        self.note_stall(started.elapsed());
                    }
                }
            }
            other => fatal::die(&format!("unexpected userfaultfd event {other:?}")),
        }
    }
}
