//! Structured logs for `svc start` (`tracing`), as text or one JSON object per line, on
//! stderr. The level filter comes from `SVC_LOG` (else `RUST_LOG`, else `info`).
//!
//! Lines are not written by the thread that logs them: they are appended to one shared
//! buffer that the `svc-log` thread writes to stderr in batches (see `sink`), so a request
//! never pays a system call for its access-log line. `flush` writes what is left.

use clap::ValueEnum;

/// Our info lines; actix's startup chatter only when something is wrong.
const DEFAULT_FILTER: &str = "info,actix_server=warn";

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
        .with_writer(sink::writer())
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

/// Write every buffered log line to stderr now (called before the process exits).
pub fn flush() {
    sink::flush();
}

/// The batching log writer.
///
/// Bounds: a batch is written at most `BATCH_DELAY` after its first line; the buffer
/// holds at most `MAX_BUFFER` bytes, beyond which the logging thread writes the buffer
/// itself (back-pressure: a line is never dropped).
mod sink {
    use std::io::Write as _;
    use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
    use std::time::Duration;

    const BATCH_DELAY: Duration = Duration::from_millis(5);
    const MAX_BUFFER: usize = 1 << 20;

    #[derive(Default)]
    struct Shared {
        buf: Mutex<Vec<u8>>,
        ready: Condvar,
    }

    static SHARED: OnceLock<Arc<Shared>> = OnceLock::new();

    fn shared() -> &'static Arc<Shared> {
        SHARED.get_or_init(|| {
            let shared = Arc::new(Shared::default());
            let flusher = Arc::clone(&shared);
            let started = std::thread::Builder::new()
                .name("svc-log".into())
                .spawn(move || run(&flusher));
            if let Err(e) = started {
                // Without the thread every line is written by its logger (see `write`).
                eprintln!("svc: cannot start the log writer thread: {e}");
            }
            shared
        })
    }

    /// The writer thread: wait for a first line, let a batch gather, write it.
    fn run(shared: &Shared) {
        loop {
            {
                let mut buf = shared.buf.lock().unwrap_or_else(PoisonError::into_inner);
                while buf.is_empty() {
                    buf = shared
                        .ready
                        .wait(buf)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
            std::thread::sleep(BATCH_DELAY);
            flush();
        }
    }

    pub(super) fn flush() {
        let Some(shared) = SHARED.get() else { return };
        let batch = std::mem::take(&mut *shared.buf.lock().unwrap_or_else(PoisonError::into_inner));
        if !batch.is_empty() {
            let _ = std::io::stderr().lock().write_all(&batch);
        }
    }

    /// `MakeWriter` for the subscriber.
    pub(super) fn writer() -> fn() -> Writer {
        || Writer
    }

    pub(super) struct Writer;

    impl std::io::Write for Writer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let shared = shared();
            let mut buf = shared.buf.lock().unwrap_or_else(PoisonError::into_inner);
            if buf.len() + bytes.len() > MAX_BUFFER {
                let batch = std::mem::take(&mut *buf);
                drop(buf);
                let mut err = std::io::stderr().lock();
                err.write_all(&batch)?;
                err.write_all(bytes)?;
                return Ok(bytes.len());
            }
            let first = buf.is_empty();
            buf.extend_from_slice(bytes);
            drop(buf);
            if first {
                shared.ready.notify_one();
            }
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
