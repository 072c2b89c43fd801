//! Loading the app: the validating load (reads the files, commits module-level code once)
//! and the `SourceBoard`, the published sources every worker loads its own `Program`
//! from (a `Program` is `!Send`, so each worker thread parses and runs the module code
//! itself, from the same text).

use super::Loaded;
use super::host::{LoadHost, Sources};
use crate::tier::AnchorStore;
use lang::Limits;
use lang::serve::Program;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// One published version of the app's sources.
#[derive(Debug)]
pub(crate) struct AppSource {
    /// Bumped by every successful reload; a worker whose program is older reloads.
    pub(crate) generation: u64,
    /// Every file the validating load read (the entry and its imports), by path.
    pub(crate) files: HashMap<PathBuf, String>,
}

/// The current `AppSource`, shared by the runtime and its workers.
#[derive(Debug)]
pub(crate) struct SourceBoard {
    generation: AtomicU64,
    current: Mutex<Arc<AppSource>>,
}

impl SourceBoard {
    pub(crate) fn new(files: HashMap<PathBuf, String>) -> SourceBoard {
        SourceBoard {
            generation: AtomicU64::new(0),
            current: Mutex::new(Arc::new(AppSource {
                generation: 0,
                files,
            })),
        }
    }

    /// The generation now published (one atomic load: checked before every call).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn current(&self) -> Arc<AppSource> {
        Arc::clone(&self.current.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Publish new sources; returns their generation.
    pub(crate) fn publish(&self, files: HashMap<PathBuf, String>) -> u64 {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = current.generation + 1;
        *current = Arc::new(AppSource { generation, files });
        self.generation.store(generation, Ordering::Release);
        generation
    }
}

/// The validating load: read `entry` (and its imports) from disk, check it, run its
/// module code committing to `store`, and build the endpoint table. Returns the program,
/// what the app shows (`Loaded`) and the sources read.
pub(crate) fn load_from_disk(
    entry: &Path,
    store: &mut AnchorStore,
    limits: &Limits,
    as_main: bool,
) -> Result<(Program, Loaded, HashMap<PathBuf, String>), String> {
    let mut files = HashMap::new();
    let app = {
        let mut host = LoadHost::new(store, Sources::Record(&mut files), true);
        lang::serve::load_app_as_main(entry, &mut host, limits, as_main)?
    };
    let loaded = Loaded {
        endpoints: app.endpoints,
        subscriptions: app.subscriptions,
        load_output: app.load_output,
        archetypes: app.program.archetype_names(),
    };
    Ok((app.program, loaded, files))
}

/// A worker's own load of already validated sources; the module code's commit is
/// discarded (the validating load made it).
pub(crate) fn load_published(
    entry: &Path,
    source: &AppSource,
    store: &mut AnchorStore,
    limits: &Limits,
    as_main: bool,
) -> Result<Program, String> {
    let mut host = LoadHost::new(store, Sources::Replay(&source.files), false);
    lang::serve::load_app_as_main(entry, &mut host, limits, as_main).map(|app| app.program)
}

/// Run the validating load on a fresh thread with the interpreter's stack (module code
/// may recurse deeply), handing `store` over and back. Blocks the calling thread.
pub(crate) fn validate_on_thread(
    entry: &Path,
    mut store: AnchorStore,
    limits: &Limits,
    as_main: bool,
) -> Result<
    (
        AnchorStore,
        Result<(Loaded, HashMap<PathBuf, String>), String>,
    ),
    String,
> {
    let entry = entry.to_path_buf();
    let limits = limits.clone();
    let handle = std::thread::Builder::new()
        .name("svc-load".into())
        .stack_size(lang::driver::INTERPRETER_STACK_BYTES)
        .spawn(move || {
            let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                load_from_disk(&entry, &mut store, &limits, as_main)
                    .map(|(_program, loaded, files)| (loaded, files))
            }));
            let result = found.unwrap_or_else(|_| {
                Err("error: internal error while loading the app\n".to_string())
            });
            (store, result)
        })
        .map_err(|e| format!("error: cannot start the loader thread: {e}\n"))?;
    handle
        .join()
        .map_err(|_| "error: internal error while loading the app\n".to_string())
}
