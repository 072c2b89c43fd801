//! Structured logs for `svc start` (`tracing`), as text or one JSON object per line, on
//! stderr. The level filter comes from `SVC_LOG` (else `RUST_LOG`, else `info`).

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
        .with_writer(std::io::stderr)
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
