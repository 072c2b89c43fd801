//! `svc db`: operator commands on the graph store the app's configuration names (the
//! embedded file, or the document database when `DOCDB_URI` / `docdb_uri` is set).
//! Output lines are decisions.md's "`svc db`" section; bad input exits 1.

use crate::cli::{AliasCommand, DbAppArgs, DbArgs, DbCommand, QuarantineCommand};
use actors::{AnchorStore, StoreTarget};
use anyhow::{Context as _, Result, bail};
use std::io::Write as _;
use std::process::ExitCode;

/// Longest a `recover-all` spends loading the app to learn its archetypes.
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

pub fn run(args: &DbArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    match &args.command {
        DbCommand::Inspect(app) => {
            let store = open(app)?;
            writeln!(
                out,
                "format_version={} anchors={} quarantined={} aliases={}",
                actors::FORMAT_VERSION,
                store.count_anchors()?,
                store.count_quarantined()?,
                store.count_aliases()?
            )?;
            let census = store.census()?;
            let width = census
                .iter()
                .map(|(_, m, t, _)| m.len() + t.len() + 1)
                .max()
                .unwrap_or(0)
                .max("archetype".len());
            writeln!(out, "{:<6}  {:<width$}  count", "kind", "archetype")?;
            for (kind, module, name, n) in census {
                writeln!(
                    out,
                    "{kind:<6}  {:<width$}  {n}",
                    format!("{module}.{name}")
                )?;
            }
            let mut aliases: Vec<_> = store.aliases().iter().collect();
            aliases.sort();
            for (from, to) in aliases {
                writeln!(out, "alias  {from} -> {to}")?;
            }
        }
        DbCommand::Alias {
            command: AliasCommand::Add { old, new, app },
        } => {
            for name in [old, new] {
                if !valid_archetype_name(name) {
                    bail!(
                        "{name:?} is not an archetype name (expected module.Name, e.g. \
                         app.Todo)"
                    );
                }
            }
            if old == new {
                bail!("an alias needs two different names (got {old} twice)");
            }
            let mut store = open(app)?;
            store.add_alias(old, new)?;
            writeln!(out, "Alias registered: {old} -> {new}")?;
        }
        DbCommand::RecoverAll(app) => {
            let mut store = open(app)?;
            let known = archetypes(&app.app)?;
            store.set_archetypes(actors::docstore::Archetypes {
                known: Some(std::sync::Arc::new(known.into_iter().collect())),
            });
            let (recovered, total) = store.recover_all()?;
            writeln!(out, "Recovered {recovered} of {total} quarantined rows.")?;
        }
        DbCommand::Quarantine {
            command: QuarantineCommand::List(app),
        } => {
            let store = open(app)?;
            let entries = store.quarantined()?;
            if entries.is_empty() {
                writeln!(out, "No quarantined anchors.")?;
            }
            for q in entries {
                writeln!(
                    out,
                    "{}  {}  {}  {}",
                    q.entry,
                    q.anchor,
                    q.quarantined_at,
                    q.reason.replace('\n', " ")
                )?;
            }
        }
        DbCommand::Quarantine {
            command: QuarantineCommand::Show { id, app },
        } => {
            let store = open(app)?;
            let Some(q) = store
                .quarantined()?
                .into_iter()
                .find(|q| q.entry == *id || q.anchor == *id)
            else {
                bail!("no quarantined anchor with id {id} (see `svc db quarantine list`)");
            };
            let shown = serde_json::json!({
                "entry": q.entry,
                "anchor_id": q.anchor,
                "reason": q.reason,
                "quarantined_at": q.quarantined_at,
                "raw": q.raw,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The store the app's configuration names.
fn open(app: &DbAppArgs) -> Result<AnchorStore> {
    crate::cli::ensure_readable(&app.app)?;
    let dir = crate::cli::app_dir(&app.app);
    let config = crate::config::Config::load(dir, None)?;
    let target = config.database.store_target();
    if let StoreTarget::Embedded(path) = &target
        && !path.exists()
    {
        bail!(
            "no store at {} (run or start the app first, or check [scale.database])",
            path.display()
        );
    }
    AnchorStore::open(&target).with_context(|| format!("cannot open the {}", target.describe()))
}

/// The archetype names the app declares (its module code runs against a throwaway
/// in-memory graph, never the store).
fn archetypes(entry: &std::path::Path) -> Result<Vec<String>> {
    let mut host = lang::host::MemoryHost::new();
    let limits = lang::Limits {
        timeout: Some(LOAD_TIMEOUT),
        ..lang::Limits::default()
    };
    match lang::serve::load_app(entry, &mut host, &limits) {
        Ok(app) => Ok(app.program.archetype_names()),
        Err(text) => bail!("cannot load {}:\n{}", entry.display(), text.trim_end()),
    }
}

/// `module.Name` (dotted identifiers) or a bare `Name`.
fn valid_archetype_name(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}
