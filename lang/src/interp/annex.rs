//! Annex files: a module's code split over several files, as Jac apps do. For a module
//! `dir/mod.svc` the implementation annexes are, in this order (each directory sorted
//! by name):
//! - `dir/mod.impl.svc` and `dir/mod.<tag>.impl.svc` (any file `mod.*.impl.svc`),
//! - every `*.impl.svc` in the module folder `dir/mod.impl/`,
//! - `dir/impl/mod.impl.svc` and `dir/impl/mod.<tag>.impl.svc` (the shared folder);
//!
//! and the tests annexes the same with `.test.svc` (`dir/mod.test/`, `dir/test/`).
//! Declarations of an implementation annex join the module after its own (so `impl`
//! blocks there fill in abilities declared in `mod.svc`); `svc test` runs the test
//! blocks of the tests annexes after the module's own. Files are listed and read only
//! through the `Host`.

use super::*;

/// Implementation annexes end with this.
pub const IMPL_SUFFIX: &str = ".impl.svc";
/// Tests annexes end with this.
pub const TEST_SUFFIX: &str = ".test.svc";

/// The annex files of the module at `path` ending with `suffix`, in load order.
pub fn annex_paths(host: &mut dyn Host, path: &Path, suffix: &str) -> Vec<PathBuf> {
    let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
        return Vec::new();
    };
    // A `.jac` module has `.impl.jac`/`.test.jac` annexes.
    let dot_ext = format!(".{}", crate::host::module_ext(path));
    let annex_suffix = |s: &str| format!("{}{dot_ext}", s.strip_suffix(".svc").unwrap_or(s));
    let suffix = &annex_suffix(suffix);
    // An annex has no annexes of its own.
    if !file.ends_with(&dot_ext)
        || file.ends_with(&annex_suffix(IMPL_SUFFIX))
        || file.ends_with(&annex_suffix(TEST_SUFFIX))
    {
        return Vec::new();
    }
    let base = &file[..file.len() - dot_ext.len()];
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let kind = &suffix[1..suffix.len() - dot_ext.len()]; // "impl" or "test"
    let module_folder = dir.join(format!("{base}.{kind}"));
    let shared_folder = dir.join(kind);
    let prefix = format!("{base}.");
    let mut out = Vec::new();
    for (d, any_name) in [
        (&dir, false),
        (&module_folder, true),
        (&shared_folder, false),
    ] {
        for name in host.list_dir(d) {
            if name.ends_with(suffix) && (any_name || name.starts_with(&prefix)) {
                out.push(d.join(name));
            }
        }
    }
    out
}

/// A parsed annex file: its file id in the interpreter and its tree.
pub struct Annex {
    pub file: u32,
    pub module: ast::Module,
}

impl Interp<'_> {
    /// Read and parse the annexes of `path` ending with `suffix`; a syntax error in one
    /// is a `SyntaxError` naming it.
    pub fn parse_annexes(&mut self, path: &Path, suffix: &str) -> R<Vec<Annex>> {
        let mut out = Vec::new();
        for p in annex_paths(self.host, path, suffix) {
            let Some(text) = self.host.read_module(&p) else {
                continue;
            };
            let parsed = crate::parser::parse(&text);
            let sf = SourceFile::new(p.display().to_string(), text);
            if let Some(d) = parsed.diagnostics.iter().find(|d| d.is_error()) {
                let rendered = d.render(&sf);
                return Err(self.err("SyntaxError", rendered.trim_end().to_string()));
            }
            let file = self.add_file(sf);
            out.push(Annex {
                file,
                module: parsed.module,
            });
        }
        Ok(out)
    }

    /// Declare the implementation annexes of the module at `path` into its scope
    /// (`ctx`), after the module's own declarations, and run their globs.
    pub(super) fn load_impl_annexes(
        &mut self,
        annexes: Vec<Annex>,
        ctx: &Ctx,
        path: &Path,
        name: &Rc<str>,
        shown: &Rc<str>,
    ) -> R<()> {
        for annex in annexes {
            self.set_shown_module(annex.file, shown.clone());
            let actx = Ctx {
                file: annex.file,
                ..ctx.clone()
            };
            self.declare_items(&annex.module.items, &actx, path, name, false)?;
            for item in &annex.module.items {
                match item {
                    Item::Glob(g) => self.exec_glob(g, &actx)?,
                    Item::Ability(_) | Item::Archetype(_) => self.decorate_item(item, &actx)?,
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// The module's items with the archetype bodies its annexes give (`impl Vehicle { has
/// ...; }` in `vehicle.impl.svc` for `obj Vehicle;` in `vehicle.svc`) merged in, taken
/// out of the annexes; `None` when no annex gives one. (The merged members keep the
/// annex's spans, read against the module's file when an error is shown.)
pub(super) fn merge_annex_arch_impls(items: &[Item], annexes: &mut [Annex]) -> Option<Vec<Item>> {
    let gives = |a: &Annex| {
        a.module
            .items
            .iter()
            .any(|it| matches!(it, Item::Impl(imp) if imp.members.is_some()))
    };
    if !annexes.iter().any(gives) {
        return None;
    }
    let mut merged = items.to_vec();
    for annex in annexes.iter_mut() {
        let (pending, rest): (Vec<Item>, Vec<Item>) = std::mem::take(&mut annex.module.items)
            .into_iter()
            .partition(|it| matches!(it, Item::Impl(imp) if imp.members.is_some()));
        annex.module.items = rest;
        let pending = pending
            .into_iter()
            .filter_map(|it| match it {
                Item::Impl(imp) => Some(imp),
                _ => None,
            })
            .collect();
        let left = crate::ast::impls::merge_into(&mut merged, pending);
        annex.module.items.extend(left.into_iter().map(Item::Impl));
    }
    Some(merged)
}
