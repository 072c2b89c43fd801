//! Structured logs for `svc start` (`tracing`), as text or one JSON object per line, on
//! stderr. The level filter comes from `SVC_LOG` (else `RUST_LOG`, else `info`).
//!
//! Lines are not written by the thread that logs them: each formatted line is appended
//! to one shared buffer and a writer thread (`svc-log`) writes what has gathered with one
//! `write` call. An HTTP worker thus never makes a system call for its access-log line
//! (it was one `write(2)` per request, ~4% of the function endpoint's time), and under
//! load many lines share one write. The writer is woken only when it sleeps idle and a
//! line arrives; it then lingers [`LINGER`] gathering more before it writes, so under load
//! it wakes and writes at most once per linger, not once per line (waking it per access
//! line took a tenth of the function endpoint's CPU). A line reaches stderr within about
//! `LINGER` of being logged.
//! Bounds: at most [`MAX_PENDING_BYTES`] wait; a line that would go past it is written
//! by its own thread, after everything before it (the log applies back-pressure rather
//! than growing or dropping lines). Order is kept: whoever writes holds the write lock
//! while it takes the buffer. [`flush`] writes what waits (before the ready line, on
//! exit, before start-up errors).

use clap::ValueEnum;
use std::io::Write as _;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};

/// Our info lines; actix's startup chatter only when something is wrong.
const DEFAULT_FILTER: &str = "info,actix_server=warn";

/// Bytes of log lines that may wait for the writer thread.
pub const MAX_PENDING_BYTES: usize = 1 << 20;

/// How long the writer gathers lines after it is woken, before it writes them.
pub const LINGER: std::time::Duration = std::time::Duration::from_millis(2);

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Install the global subscriber (once; a second call is a no-op).
pub fn init(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("SVC_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| LineWriter)
        .with_ansi(std::env::var_os("NO_COLOR").is_none() && is_terminal());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

fn is_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stderr().is_terminal()
}

/// Write every line logged so far to stderr (waits for a write in progress).
pub fn flush() {
    if let Some(sink) = SINK.get() {
        sink.write_out(Vec::new());
    }
}

/// The buffer between the logging threads and the writer thread.
struct Sink {
    /// Bytes that may wait (`MAX_PENDING_BYTES`).
    max: usize,
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Held by whoever takes `pending` and writes it, so batches stay in order.
    writing: Mutex<()>,
}

/// Lines waiting, and whether the writer sleeps until told.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    writer_idle: bool,
}

static SINK: OnceLock<Sink> = OnceLock::new();

impl Sink {
    /// The sink, with its writer thread started on first use; `None` if the thread
    /// cannot be started (lines are then written directly).
    fn get() -> Option<&'static Sink> {
        static STARTED: OnceLock<bool> = OnceLock::new();
        let sink = SINK.get_or_init(|| Sink {
            max: MAX_PENDING_BYTES,
            pending: Mutex::default(),
            wake: Condvar::new(),
            writing: Mutex::new(()),
        });
        let ok = *STARTED.get_or_init(|| {
            std::thread::Builder::new()
                .name("svc-log".into())
                .spawn(|| {
                    if let Some(sink) = SINK.get() {
                        sink.run();
                    }
                })
                .is_ok()
        });
        ok.then_some(sink)
    }

    /// The writer thread: wait for a line, gather for `LINGER`, write, repeat.
    fn run(&self) {
        loop {
            {
                let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
                while pending.bytes.is_empty() {
                    pending.writer_idle = true;
                    pending = self
                        .wake
                        .wait(pending)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                pending.writer_idle = false;
            }
            std::thread::sleep(LINGER);
            self.write_out(Vec::new());
        }
    }

    /// Take what waits, add `tail`, and write it all (under the write lock).
    fn write_out(&self, tail: Vec<u8>) {
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        let mut batch = {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            std::mem::take(&mut pending.bytes)
        };
        batch.extend_from_slice(&tail);
        if !batch.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(&batch);
            let _ = err.flush();
        }
    }

    /// Queue one formatted line (or write it, past the bound).
    fn push(&self, line: &[u8]) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.bytes.len() + line.len() > self.max {
            drop(pending);
            return self.write_out(line.to_vec());
        }
        pending.bytes.extend_from_slice(line);
        let wake = std::mem::take(&mut pending.writer_idle);
        drop(pending);
        if wake {
            self.wake.notify_one();
        }
    }
}

/// The `MakeWriter` of the subscriber: tracing-subscriber formats an event into its own
/// buffer and hands it over with one `write_all`.
struct LineWriter;

impl std::io::Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match Sink::get() {
            Some(sink) => sink.push(buf),
            None => std::io::stderr().lock().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_order_past_the_bound() {
        let sink = Sink {
            max: 16,
            pending: Mutex::default(),
            wake: Condvar::new(),
            writing: Mutex::new(()),
        };
        sink.push(b"one\n");
        sink.push(b"two\n");
        assert_eq!(
            sink.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .bytes,
            b"one\ntwo\n"
        );
        // A line past the bound takes everything before it along: nothing waits after.
        sink.push(b"(logging test line)\n");
        assert!(
            sink.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .bytes
                .is_empty()
        );
    }
}
