//! `svc format FILE... [--check]`: the formatter of `lang::tools` over files.

use crate::cli::FormatArgs;
use anyhow::Result;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest file `svc format` reads.
const MAX_FILE_BYTES: u64 = 16 << 20;
/// Most files one invocation visits under its directory arguments.
const MAX_FILES: usize = 100_000;

pub fn run(args: &FormatArgs) -> Result<ExitCode> {
    let mut failed = false;
    let mut would_change = 0usize;
    let mut changed = 0usize;
    let mut unchanged = 0usize;
    let mut out = std::io::stdout().lock();
    for file in expand(&args.files, &mut failed) {
        match format_one(&file) {
            Err(msg) => {
                eprintln!("error: {}: {msg}", file.display());
                failed = true;
            }
            Ok(None) => unchanged += 1,
            Ok(Some(formatted)) if args.check => {
                would_change += 1;
                let _ = writeln!(out, "would reformat: {}", file.display());
                drop(formatted);
            }
            Ok(Some(formatted)) => match write_atomically(&file, &formatted) {
                Ok(()) => {
                    changed += 1;
                    let _ = writeln!(out, "reformatted: {}", file.display());
                }
                Err(e) => {
                    eprintln!("error: {}: cannot write: {e}", file.display());
                    failed = true;
                }
            },
        }
    }
    if args.check {
        let _ = writeln!(
            out,
            "{would_change} file(s) would be reformatted, {unchanged} already formatted"
        );
    } else {
        let _ = writeln!(out, "{changed} file(s) reformatted, {unchanged} unchanged");
    }
    Ok(if failed || would_change > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The files to format: plain arguments as given, directories walked for `.svc` files.
fn expand(args: &[PathBuf], failed: &mut bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for a in args {
        if !a.is_dir() {
            files.push(a.clone());
            continue;
        }
        let mut dirs = vec![a.clone()];
        let mut found = Vec::new();
        while let Some(d) = dirs.pop() {
            let entries = match std::fs::read_dir(&d) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("error: {}: {e}", d.display());
                    *failed = true;
                    continue;
                }
            };
            for e in entries.flatten() {
                let p = e.path();
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() && !hidden {
                    dirs.push(p);
                } else if ft.is_file() && p.extension().is_some_and(|x| x == "svc") {
                    found.push(p);
                }
                if found.len() + files.len() >= MAX_FILES {
                    eprintln!("error: more than {MAX_FILES} files; name fewer");
                    *failed = true;
                    return files;
                }
            }
        }
        found.sort();
        files.extend(found);
    }
    files
}

/// `Ok(Some(text))` when the file's formatted text differs, `Ok(None)` when it is formatted.
fn format_one(file: &Path) -> Result<Option<String>, String> {
    let meta = std::fs::metadata(file).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
    }
    let src = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let formatted = lang::tools::format_source(&src).map_err(|e| e.to_string())?;
    Ok((formatted != src).then_some(formatted))
}

/// Replace `file` by writing a sibling temporary file and renaming it over the original.
fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = file.with_file_name(format!(".{name}.svc-format-{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = std::fs::set_permissions(&tmp, meta.permissions());
    }
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
