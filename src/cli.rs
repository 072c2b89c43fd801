//! Command-line interface: argument types (clap derive) and one function per command.

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "svc",
    version,
    about = "Run, check and serve applications written in the svc language",
    long_about = "svc hosts application code written in the svc language (Jac syntax, `.svc` \
                  files): nodes, edges, walkers and abilities on a persistent graph.\n\n\
                  Start with `svc run FILE.svc` to execute a program, or `svc check FILE.svc` \
                  to report diagnostics without running anything.",
    arg_required_else_help = true,
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether this command serves an app (`svc start` without `--faux` or `--scale`):
    /// its HTTP threads then host runs (see `main`).
    pub fn serves(&self) -> bool {
        matches!(&self.command, Command::Start(start) if !start.faux && !start.scale)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    Run(RunArgs),
    Check(CheckArgs),
    Test(TestArgs),
    Format(FormatArgs),
    Start(StartArgs),
    Db(DbArgs),
    Scale(ScaleArgs),
    Mcp(McpArgs),
}

/// The tool-protocol server.
#[derive(Debug, Args)]
#[command(
    about = "Serve svc tools, prompts and documentation to AI clients (MCP server)",
    long_about = "Start the tool-protocol (MCP, JSON-RPC 2.0) server: 19 tools on svc's own \
                  parser, checker, formatter and interpreter (validate_svc, run_svc, \
                  graph_visualize, ...), 9 prompts, and the svc documentation as read-only \
                  `svc://` resources.\n\n\
                  Transports: stdio (default; one session on standard input/output), sse \
                  (GET /sse event stream + POST /messages/?session_id=...), streamable-http \
                  (POST /mcp). Defaults come from [mcp] in ./svc.toml; these flags win.\n\n\
                  Exit status: 0 when the server stops (stdio: end of input) or after \
                  --inspect; 1 when the port cannot be bound or svc.toml is invalid; 2 on a \
                  usage error."
)]
pub struct McpArgs {
    /// Transport (default: [mcp] transport, else stdio)
    #[arg(long, value_enum)]
    pub transport: Option<crate::mcp::config::Transport>,
    /// Port of the sse and streamable-http transports (default: [mcp] port, else 3001)
    #[arg(long)]
    pub port: Option<u16>,
    /// Address to bind (default: [mcp] host, else 127.0.0.1)
    #[arg(long)]
    pub host: Option<String>,
    /// Print every resource, tool and prompt, then exit
    #[arg(long)]
    pub inspect: bool,
}

/// Operator commands on the graph store.
#[derive(Debug, Args)]
#[command(
    about = "Inspect and repair the graph store (embedded or document database)",
    long_about = "Operator commands on the store `svc start --app` would serve: the embedded \
                  file ([scale.database] shelf_db_path) or, when DOCDB_URI / \
                  [scale.database] docdb_uri is set, the document database.\n\n\
                  Exit status: 0 on success; 1 on bad input (unknown entry, malformed \
                  archetype name, unreachable store); 2 on a usage error."
)]
pub struct DbArgs {
    #[command(subcommand)]
    pub command: DbCommand,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Print `format_version=… anchors=N quarantined=N aliases=N` and a table per archetype.
    Inspect(DbAppArgs),
    /// Class-rename aliases.
    Alias {
        #[command(subcommand)]
        command: AliasCommand,
    },
    /// Move back every quarantined anchor that can be read now (after aliases).
    RecoverAll(DbAppArgs),
    /// Quarantined anchors.
    Quarantine {
        #[command(subcommand)]
        command: QuarantineCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum AliasCommand {
    /// Register OLD (`module.Name`) as a former name of NEW (`module.Name`).
    Add {
        old: String,
        new: String,
        #[command(flatten)]
        app: DbAppArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum QuarantineCommand {
    /// One line per quarantined anchor: entry id, anchor id, time, reason.
    List(DbAppArgs),
    /// One quarantined anchor in full (its stored form and the reason), as JSON.
    Show {
        id: String,
        #[command(flatten)]
        app: DbAppArgs,
    },
}

#[derive(Debug, Args)]
pub struct DbAppArgs {
    /// The app's entry file (its svc.toml names the store; its archetypes decide what
    /// `recover-all` can read).
    #[arg(long, value_name = "ENTRY", default_value = "main.svc")]
    pub app: PathBuf,
}

/// Inspect or remove a deployment made by `svc start --scale`.
#[derive(Debug, Args)]
#[command(
    about = "Show or remove the Kubernetes deployment of an app (made by `svc start --scale`)",
    long_about = "`svc scale status ENTRY` lists the app's objects (workloads with their \
                  ready replicas, services, ingresses, pods and volumes with their phase); \
                  `svc scale destroy ENTRY` deletes them all, volumes included, after asking \
                  for the app name (or at once with --yes). The cluster is the current \
                  context of KUBECONFIG or ~/.kube/config (inside a pod, its service \
                  account); each request waits at most [scale.kubernetes] \
                  request_timeout_seconds (10).\n\nExit status: 0 \
                  on success; 1 without a reachable cluster or when not confirmed; 2 on a \
                  usage error or an unsupported target."
)]
pub struct ScaleArgs {
    #[command(subcommand)]
    pub command: ScaleCommand,
}

#[derive(Debug, Subcommand)]
pub enum ScaleCommand {
    /// Show the live deployment's objects
    Status {
        /// The entry file (`.svc`)
        #[arg(default_value = "main.svc")]
        entry: PathBuf,
        /// Deployment target
        #[arg(long, value_enum, default_value_t)]
        target: crate::deploy::Target,
    },
    /// Delete the deployment (asks for the app name first)
    Destroy {
        /// The entry file (`.svc`)
        #[arg(default_value = "main.svc")]
        entry: PathBuf,
        /// Deployment target
        #[arg(long, value_enum, default_value_t)]
        target: crate::deploy::Target,
        /// Do not ask for confirmation
        #[arg(short, long)]
        yes: bool,
    },
}

/// Run a program.
#[derive(Debug, Args)]
#[command(
    about = "Run a .svc program and persist its root graph",
    long_about = "Parse, check and run FILE.svc: module-level code and `with entry` blocks run \
                  in file order, `print` and `report` write to stdout.\n\n\
                  The root graph persists in an embedded store at `.svc/data/anchor_store.db` \
                  next to FILE (or [scale.database] shelf_db_path of svc.toml next to FILE, or \
                  SVC_SHELF_DB_PATH, as for `svc start`), so a second run sees the nodes the \
                  first one created, and `svc start` later serves the same data. Use \
                  --no-store for a throwaway run.\n\n\
                  Exit status: 0 on success; 1 on a compile or runtime error (printed to \
                  stderr) or an unreadable file; 2 on a usage error."
)]
pub struct RunArgs {
    /// The entry file (`.svc`)
    pub file: PathBuf,

    /// Keep the graph in memory only: nothing is read from or written to `.svc/data`
    #[arg(long)]
    pub no_store: bool,

    /// Stop the run with an error after this many seconds
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,

    /// Stop the run with an error after this many interpreter operations
    #[arg(long, value_name = "N")]
    pub max_ops: Option<u64>,

    /// Deepest svc call stack before a RecursionError
    #[arg(long, value_name = "N", default_value_t = lang::Limits::default().max_depth)]
    pub max_depth: usize,

    /// Run every function on the tree-walking interpreter, not the compiled core (the
    /// output is the same; for comparing the two)
    #[arg(long)]
    pub no_vm: bool,
}

/// Check a program without running it.
#[derive(Debug, Args)]
#[command(
    about = "Report diagnostics for a .svc file without running it",
    long_about = "Parse and type-check FILE.svc and the `.svc` modules it imports, printing every \
                  diagnostic to stderr as `file:line:col: error[CODE]: message` with the source \
                  line underlined. Nothing runs and no store is opened.\n\n\
                  Exit status: 0 when there are no errors (warnings allowed; prints `ok: FILE` \
                  to stdout); 1 when there are errors or the file cannot be read; 2 on a usage \
                  error."
)]
pub struct CheckArgs {
    /// The file to check (`.svc`)
    pub file: PathBuf,
}

/// Run the `test` blocks of a file.
#[derive(Debug, Args)]
#[command(
    about = "Run the test blocks of a .svc file",
    long_about = "Load FILE.svc (its `with entry` blocks run, `with entry:__main__` does not) and \
                  run each `test \"name\" { }` block on its own fresh in-memory graph; nothing \
                  is read from or written to the store. Prints `PASS name` or `FAIL name` with \
                  the failing assertion, then `N passed, M failed`.\n\n\
                  Exit status: 0 when every test passes; 1 when one fails or the file does not \
                  load; 2 on a usage error."
)]
pub struct TestArgs {
    /// The file whose tests to run (`.svc`)
    pub file: PathBuf,
}

/// Format source files in place.
#[derive(Debug, Args)]
#[command(
    about = "Format .svc files in place (canonical indentation and spacing, comments kept)",
    long_about = "Rewrite each FILE (or every `.svc` file under a directory, hidden directories \
                  skipped) in the canonical layout: four-space indentation, one statement per \
                  line, normalised spacing; comments and docstrings are kept and the program \
                  means the same. A file with a syntax error is reported and left alone.\n\n\
                  With --check nothing is written: the files that would change are listed.\n\n\
                  Exit status: 0 when every file is (or already was) formatted; 1 when a file \
                  cannot be read or parsed, or with --check when a file would change; 2 on a \
                  usage error."
)]
pub struct FormatArgs {
    /// Files or directories to format
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Write nothing; list the files that would change and exit 1 if any would
    #[arg(long)]
    pub check: bool,
}

/// Serve an app over HTTP.
#[derive(Debug, Args)]
#[command(
    about = "Serve a .svc app: its walkers and functions become HTTP endpoints",
    long_about = "Load ENTRY (default main.svc) and serve its walkers at /walker/<name> and its \
                  functions at /function/<name> (or their @restspec paths), answering with the \
                  JSON envelope. Health at /healthz, API docs at /docs.\n\n\
                  The graph persists in the embedded store at `.svc/data/anchor_store.db` next \
                  to ENTRY (the one `svc run` uses). Settings come from svc.toml next to ENTRY, \
                  then `svc.<profile>.toml`, then SVC_* environment variables, then these flags.\n\n\
                  Stops gracefully on SIGTERM/SIGINT (exit 0). Exit status 1 when the app does \
                  not load or the port cannot be bound; 2 on a usage error."
)]
pub struct StartArgs {
    /// The entry file (`.svc`)
    #[arg(default_value = "main.svc")]
    pub entry: PathBuf,

    /// Listen port (default from svc.toml, else 8000); the next free port is used if it is taken
    #[arg(short, long)]
    pub port: Option<u16>,

    /// Bind address (default from svc.toml, else 0.0.0.0; 127.0.0.1 when no JWT secret is
    /// configured and no host is set)
    #[arg(long)]
    pub host: Option<String>,

    /// Treat the entry as the main module
    #[arg(short, long)]
    pub main: bool,

    /// Print the generated API (endpoints, methods, auth, parameters) and exit without serving
    #[arg(short, long)]
    pub faux: bool,

    /// Development mode: reload the app when a .svc file changes
    #[arg(short, long)]
    pub dev: bool,

    /// Separate API port in dev mode (0 = the main port; only 0 is supported)
    #[arg(
        short = 'a',
        long = "api_port",
        alias = "api-port",
        default_value_t = 0
    )]
    pub api_port: u16,

    /// Serve the API only, no client (the only mode today)
    #[arg(short = 'n', long = "no-client")]
    pub no_client: bool,

    /// Configuration profile: also read svc.<PROFILE>.toml
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<String>,

    /// Interpreter threads running walkers and functions (default: 4 per core)
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,

    /// Log format on stderr
    #[arg(long, value_enum, default_value_t)]
    pub log_format: crate::server::logging::LogFormat,

    /// Deploy to the target platform (Kubernetes) instead of serving locally
    #[arg(long)]
    pub scale: bool,

    /// With --scale: print the objects that would be applied; change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// With --dry-run: print the raw multi-document YAML stream instead of the table
    #[arg(long)]
    pub show_yaml: bool,

    /// Deployment target (only `orchestrator`, Kubernetes, in this build)
    #[arg(long, value_enum, default_value_t)]
    pub target: crate::deploy::Target,

    /// With --scale: HTTPS through the certificate issuer ([scale.kubernetes] tls_issuer)
    /// on the ingress of [scale.kubernetes] domain
    #[arg(long)]
    pub enable_tls: bool,

    /// Install from the repository instead of the package index (not supported in this build)
    #[arg(short = 'e', long)]
    pub experimental: bool,

    /// Client build target for the dev server: web, desktop, pwa (not supported in this build)
    #[arg(long, value_name = "TARGET")]
    pub client: Option<String>,
}

/// Run the parsed command; `Err` is a failure of svc itself (unreadable file, store error),
/// reported by `main` with exit code 1.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => run(&args),
        Command::Check(args) => check(&args),
        Command::Test(args) => test(&args),
        Command::Format(args) => crate::format::run(&args),
        Command::Start(args) => start(&args),
        Command::Db(args) => crate::db::run(&args),
        Command::Mcp(args) => crate::mcp::run(
            crate::mcp::Overrides {
                transport: args.transport,
                port: args.port,
                host: args.host,
            },
            args.inspect,
        ),
        Command::Scale(args) => match args.command {
            ScaleCommand::Status { entry, target } => crate::deploy::status(&entry, target),
            ScaleCommand::Destroy { entry, target, yes } => {
                crate::deploy::destroy(&entry, target, yes)
            }
        },
    }
}

/// `svc start`: serve, or deploy with `--scale`.
fn start(args: &StartArgs) -> Result<ExitCode> {
    let deploy_only = args.dry_run || args.show_yaml || args.enable_tls;
    if args.scale
        || deploy_only
        || args.target != crate::deploy::Target::Orchestrator
        || args.experimental
        || args.client.is_some()
    {
        if !args.scale && deploy_only {
            let _ = writeln!(
                std::io::stderr(),
                "error: --dry-run, --show-yaml and --enable-tls work with --scale only"
            );
            return Ok(ExitCode::from(2));
        }
        return crate::deploy::start(&crate::deploy::DeployRequest {
            entry: &args.entry,
            profile: args.profile.as_deref(),
            target: args.target,
            dry_run: args.dry_run,
            show_yaml: args.show_yaml,
            enable_tls: args.enable_tls,
            experimental: args.experimental,
            client: args.client.as_deref(),
        });
    }
    crate::server::start(&start_options(args))
}

/// The server's own start options from the command line.
fn start_options(args: &StartArgs) -> crate::server::StartOptions {
    crate::server::StartOptions {
        entry: args.entry.clone(),
        port: args.port,
        host: args.host.clone(),
        main: args.main,
        faux: args.faux,
        dev: args.dev,
        api_port: args.api_port,
        profile: args.profile.clone(),
        workers: args.workers,
        log_format: args.log_format,
    }
}

fn run(args: &RunArgs) -> Result<ExitCode> {
    ensure_readable(&args.file)?;
    let timeout = match args.timeout {
        Some(t) if !(t.is_finite() && t > 0.0) => bail!("--timeout must be a positive number"),
        Some(t) => Some(std::time::Duration::from_secs_f64(t)),
        None => None,
    };
    let options = lang::RunOptions {
        limits: lang::Limits {
            max_depth: args.max_depth,
            max_ops: args.max_ops,
            timeout,
            vm: !args.no_vm,
            ..lang::Limits::default()
        },
        // `run` returns to `main`, which exits.
        exit_after: true,
    };
    let outcome = if args.no_store {
        let mut host = lang::host::MemoryHost::new();
        host.echo = true;
        host.discard = true;
        lang::run_file(&args.file, &mut host, &options)
    } else {
        let dir = app_dir(&args.file);
        let config = crate::config::Config::load(dir, None)?;
        let target = config.database.store_target();
        actors::kvstore::configure(kv_settings(&config.database));
        let store = actors::AnchorStore::open(&target)
            .with_context(|| format!("cannot open the {}", target.describe()))?;
        // Events under `svc run`: the in-memory broker of this process when enabled
        // (publish and broker.consume work; @subscribe handlers run only under
        // `svc start`), else no-ops. `store()` on the configured backend.
        let events = crate::events::Events::for_script(&config.events);
        let storage = crate::storage::StorageNatives::new(&config.storage, dir)?;
        // sv imports under `svc run`: providers found lazily (SVC_SV_<MODULE>_URL).
        let sv = crate::sv::SvNatives::new(crate::sv::settings(
            &config.sv,
            config.limits.max_response_bytes,
        ));
        let natives = actors::natives::chain(
            std::iter::once(storage.handle())
                .chain(events.as_ref().map(|e| e.natives()))
                .chain(std::iter::once(sv.handle()))
                .collect(),
        );
        let mut host = actors::RunHost::new(store, true).with_natives(natives);
        lang::run_file(&args.file, &mut host, &options)
    };
    // Output may have been written without a trailing flush by a host.
    let _ = std::io::stdout().flush();
    match outcome.error {
        None => Ok(ExitCode::SUCCESS),
        Some(error) => {
            eprint_block(&error);
            Ok(ExitCode::from(1))
        }
    }
}

fn check(args: &CheckArgs) -> Result<ExitCode> {
    ensure_readable(&args.file)?;
    let mut host = lang::host::MemoryHost::new();
    let outcome = lang::check_file(&args.file, &mut host);
    if !outcome.rendered.is_empty() {
        eprint_block(&outcome.rendered);
    }
    if outcome.errors > 0 {
        return Ok(ExitCode::from(1));
    }
    let _ = writeln!(std::io::stdout(), "ok: {}", args.file.display());
    Ok(ExitCode::SUCCESS)
}

fn test(args: &TestArgs) -> Result<ExitCode> {
    ensure_readable(&args.file)?;
    let mut host = lang::host::MemoryHost::new();
    host.echo = true;
    let mut report = |r: &lang::testrun::TestResult| {
        let mut out = std::io::stdout();
        match &r.failure {
            None => {
                let _ = writeln!(out, "PASS {}", r.name);
            }
            Some(f) => {
                let _ = writeln!(out, "FAIL {}", r.name);
                for line in f.lines() {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
    };
    let outcome = lang::testrun::test_file(
        &args.file,
        &mut host,
        &lang::RunOptions::default(),
        &mut report,
    );
    let _ = std::io::stdout().flush();
    if let Some(error) = &outcome.error {
        eprint_block(error);
        return Ok(ExitCode::from(1));
    }
    let failed = outcome.failed();
    let _ = writeln!(
        std::io::stdout(),
        "{} passed, {failed} failed",
        outcome.results.len() - failed
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The store `svc start` would serve for an app whose entry is `file`: `[scale.database]
/// shelf_db_path` of the configuration next to FILE, relative to FILE's directory, by
/// default `<dir of FILE>/.svc/data/anchor_store.db` (language.md decision 8).
#[cfg(test)]
fn store_path(file: &Path) -> Result<PathBuf> {
    Ok(crate::config::Config::load(app_dir(file), None)?
        .database
        .shelf_db_path)
}

/// The URIs `kvstore(...)` falls back to: the app's configuration, where `DOCDB_URI` /
/// `CACHE_URL` override the file.
pub(crate) fn kv_settings(database: &crate::config::DatabaseConfig) -> actors::kvstore::KvSettings {
    actors::kvstore::KvSettings {
        docdb_uri: database.docdb_uri.clone(),
        cache_url: database.cache_url.clone(),
    }
}

/// The directory of an entry file (`.` for a bare file name).
pub(crate) fn app_dir(file: &Path) -> &Path {
    file.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Fail early, with the path in the message, when FILE is missing or not a file.
pub(crate) fn ensure_readable(file: &Path) -> Result<()> {
    let meta =
        std::fs::metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    if !meta.is_file() {
        bail!("cannot read {}: not a file", file.display());
    }
    Ok(())
}

/// Print text to stderr, ending with exactly one newline.
fn eprint_block(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn store_lives_next_to_the_file() {
        let path = |p: &str| store_path(Path::new(p)).expect("no configuration there");
        assert_eq!(
            path("/nonexistent/main.svc"),
            Path::new("/nonexistent/.svc/data/anchor_store.db")
        );
        assert_eq!(
            path("/nonexistent/apps/todo/main.svc"),
            Path::new("/nonexistent/apps/todo/.svc/data/anchor_store.db")
        );
    }
}
