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
//!
//! Access lines (one per request) skip `tracing`'s formatter when colours are off: [`access`]
//! writes the very line the subscriber would (same layout, text or JSON) straight into the
//! buffer. Going through the subscriber's field visitors and timer cost about 6% of the
//! function endpoint's CPU; the direct line costs a fifth of that. With colours (a terminal)
//! or a subscriber installed by someone else, lines still go through `tracing`.

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
    let ansi = std::env::var_os("NO_COLOR").is_none() && is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| LineWriter)
        .with_ansi(ansi);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    }
    .is_ok();
    let access = if !installed || ansi {
        Access::Tracing
    } else if tracing::enabled!(target: ACCESS_TARGET, tracing::Level::INFO) {
        Access::Direct(format)
    } else {
        Access::Off
    };
    let _ = ACCESS.set(access);
}

/// The target of access lines (`SVC_LOG=svc::access=off` silences them).
const ACCESS_TARGET: &str = "svc::access";

/// How access lines are written, decided once by [`init`].
#[derive(Clone, Copy)]
enum Access {
    /// Through `tracing` (colours, a foreign subscriber, or before `init`).
    Tracing,
    /// Formatted here, in the subscriber's layout for this format.
    Direct(LogFormat),
    /// The filter leaves them out.
    Off,
}

static ACCESS: OnceLock<Access> = OnceLock::new();

/// Log the access line of one request: `request method=.. path=.. status=..
/// duration_ms=.. trace_id=..` at INFO under the target `svc::access`.
pub fn access(method: &str, path: &str, status: u16, duration_ms: f64, trace_id: &str) {
    match ACCESS.get().copied().unwrap_or(Access::Tracing) {
        Access::Off => {}
        Access::Tracing => tracing::info!(
            target: ACCESS_TARGET,
            method = %method,
            path = %path,
            status,
            duration_ms,
            trace_id = %trace_id,
            "request"
        ),
        Access::Direct(format) => {
            thread_local! {
                static LINE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
            }
            let now = std::time::SystemTime::now();
            let fields = [method, path, trace_id];
            // The line is made in a buffer the thread keeps (no allocation per request).
            let pushed = LINE.with(|line| {
                let mut line = line.try_borrow_mut().ok()?;
                line.clear();
                write_access_line(&mut line, format, now, fields, status, duration_ms);
                push_line(line.as_bytes());
                Some(())
            });
            if pushed.is_none() {
                push_line(access_line(format, now, fields, status, duration_ms).as_bytes());
            }
        }
    }
}

/// Queue one formatted line for the writer (or write it, without one).
fn push_line(line: &[u8]) {
    match Sink::get() {
        Some(sink) => sink.push(line),
        None => {
            let _ = std::io::stderr().lock().write_all(line);
        }
    }
}

/// The line `tracing-subscriber`'s `Full` text or flattened JSON format makes of the
/// access event: RFC 3339 UTC time in microseconds, level, message, fields in order
/// (`%` fields as text, numbers as `Debug` prints them), target.
fn access_line(
    format: LogFormat,
    now: std::time::SystemTime,
    fields: [&str; 3],
    status: u16,
    duration_ms: f64,
) -> String {
    let mut line = String::with_capacity(192);
    write_access_line(&mut line, format, now, fields, status, duration_ms);
    line
}

/// [`access_line`] appended to `line`. The text layout is written piece by piece: the
/// time's date and seconds come from a per-thread cache renewed once a second, and the
/// numbers are written digit by digit (the formatting machinery was most of the line's
/// cost).
fn write_access_line(
    line: &mut String,
    format: LogFormat,
    now: std::time::SystemTime,
    [method, path, trace_id]: [&str; 3],
    status: u16,
    duration_ms: f64,
) {
    use std::fmt::Write as _;
    let since_epoch = now
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    match format {
        LogFormat::Text => {
            push_time(line, since_epoch);
            line.push_str("  INFO ");
            line.push_str(ACCESS_TARGET);
            line.push_str(": request method=");
            line.push_str(method);
            line.push_str(" path=");
            line.push_str(path);
            line.push_str(" status=");
            push_decimal(line, u64::from(status), 1);
            line.push_str(" duration_ms=");
            push_millis(line, duration_ms);
            line.push_str(" trace_id=");
            line.push_str(trace_id);
            line.push('\n');
        }
        LogFormat::Json => {
            // The subscriber's default timer: RFC 3339, UTC, microseconds.
            let time = lang::serve::events::rfc3339(since_epoch);
            let text = |s: &str| serde_json::Value::from(s).to_string();
            let _ = writeln!(
                line,
                "{{\"timestamp\":\"{time}\",\"level\":\"INFO\",\"message\":\"request\",\
                 \"method\":{},\"path\":{},\"status\":{status},\"duration_ms\":{},\
                 \"trace_id\":{},\"target\":\"{ACCESS_TARGET}\"}}",
                text(method),
                text(path),
                serde_json::Value::from(duration_ms),
                text(trace_id),
            );
        }
    }
}

/// The subscriber's default timer (RFC 3339, UTC, microseconds: `lang`'s `rfc3339`),
/// with the text up to the seconds kept per thread for the second it names.
fn push_time(line: &mut String, since_epoch: std::time::Duration) {
    thread_local! {
        /// A second since the epoch and its text up to and including the `.`.
        static SECOND: std::cell::RefCell<(u64, String)> = const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let secs = since_epoch.as_secs();
    let cached = SECOND.with(|cell| {
        let mut cell = cell.try_borrow_mut().ok()?;
        if cell.0 != secs {
            let text = lang::serve::events::rfc3339(std::time::Duration::from_secs(secs));
            let prefix = text.rfind('.').map_or(text.as_str(), |dot| &text[..=dot]);
            cell.1.clear();
            cell.1.push_str(prefix);
            cell.0 = secs;
        }
        line.push_str(&cell.1);
        Some(())
    });
    match cached {
        Some(()) => {
            push_decimal(line, u64::from(since_epoch.subsec_micros()), 6);
            line.push('Z');
        }
        None => line.push_str(&lang::serve::events::rfc3339(since_epoch)),
    }
}

/// `n` in decimal, zero-padded to at least `width` digits.
fn push_decimal(line: &mut String, n: u64, width: usize) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = i.min(digits.len() - width.min(digits.len()));
    for &d in &digits[start..] {
        line.push(char::from(d));
    }
}

/// A duration in milliseconds already rounded to tenths, as `{:?}` prints it (`0.3`,
/// `12.0`): whole tenths as `<ms>.<tenth>`; anything else (never made by `access`'s
/// caller) through `Debug`.
fn push_millis(line: &mut String, ms: f64) {
    use std::fmt::Write as _;
    let tenths = (ms * 10.0).round();
    if ms.is_finite() && (0.0..1e15).contains(&tenths) && tenths / 10.0 == ms {
        let tenths = tenths as u64;
        push_decimal(line, tenths / 10, 1);
        line.push('.');
        push_decimal(line, tenths % 10, 1);
    } else {
        let _ = write!(line, "{ms:?}");
    }
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
    fn direct_access_lines_match_the_subscriber_layout() {
        let at = std::time::UNIX_EPOCH + std::time::Duration::new(1_795_792_315, 231_363_000);
        let fields = ["GET", "/nope%20x", "6b132663-331b-4a84-888a-dbe640e9b789"];
        assert_eq!(
            access_line(LogFormat::Text, at, fields, 404, 0.3),
            "2026-11-27T15:11:55.231363Z  INFO svc::access: request method=GET path=/nope%20x \
             status=404 duration_ms=0.3 trace_id=6b132663-331b-4a84-888a-dbe640e9b789\n"
        );
        assert_eq!(
            access_line(LogFormat::Json, at, ["POST", "/a\"b", "t"], 200, 12.0),
            "{\"timestamp\":\"2026-11-27T15:11:55.231363Z\",\"level\":\"INFO\",\
             \"message\":\"request\",\"method\":\"POST\",\"path\":\"/a\\\"b\",\"status\":200,\
             \"duration_ms\":12.0,\"trace_id\":\"t\",\"target\":\"svc::access\"}\n"
        );
        assert!(access_line(LogFormat::Text, at, fields, 200, 12.0).contains(" duration_ms=12.0 "));
    }

    #[test]
    fn durations_print_as_debug_does() {
        for tenths in (0..20_000u64).chain([123_456_789, 99_999_999_999]) {
            let ms = tenths as f64 / 10.0;
            let mut line = String::new();
            push_millis(&mut line, ms);
            assert_eq!(line, format!("{ms:?}"), "{tenths}");
        }
        for odd in [0.123, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            let mut line = String::new();
            push_millis(&mut line, odd);
            assert_eq!(line, format!("{odd:?}"));
        }
    }

    #[test]
    fn times_match_rfc3339_across_seconds() {
        let base = std::time::Duration::new(1_795_792_315, 0);
        for (secs, micros) in [
            (0, 5),
            (0, 999_999),
            (1, 0),
            (1, 231_363),
            (86_400, 7),
            (0, 12),
        ] {
            let t = base + std::time::Duration::new(secs, micros * 1000);
            let mut line = String::new();
            push_time(&mut line, t);
            assert_eq!(line, lang::serve::events::rfc3339(t));
        }
    }

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
