//! Module loading: the main module, imports (svc modules, built-in and event modules)
//! and the two-pass execution of a module (declarations, then globs and entry blocks).

use super::*;

impl Interp<'_> {
    /// Register a source file and return its id.
    pub fn add_file(&mut self, file: Arc<SourceFile>) -> u32 {
        Rc::make_mut(&mut self.files).push(file);
        (self.files.len() - 1) as u32
    }

    /// Load and run a parsed module as the main module (`with entry:__main__` runs).
    pub fn run_main(&mut self, path: &Path, module: &ast::Module, file: u32) -> R<()> {
        self.run_entry_module(path, module, file, true)
    }

    /// Load and run the entry module; `as_main` decides whether its
    /// `with entry:__main__` blocks run (`svc run`: yes; `svc start`: only with `--main`).
    pub fn run_entry_module(
        &mut self,
        path: &Path,
        module: &ast::Module,
        file: u32,
        as_main: bool,
    ) -> R<()> {
        // Python names the module it runs `__main__` (`<class '__main__.User'>`); a
        // served app's module keeps its own name.
        let shown = if as_main {
            Rc::from("__main__")
        } else {
            Self::module_name(path)
        };
        let m = self.exec_module(path, module, file, as_main, shown)?;
        // Generators dropped by the last statement are closed before the run ends.
        self.close_abandoned()?;
        self.main_module = Some(m);
        Ok(())
    }

    pub(super) fn module_name(path: &Path) -> Rc<str> {
        Rc::from(path.file_stem().and_then(|s| s.to_str()).unwrap_or("main"))
    }

    /// The module name the classes declared in `file` show (`__module__`, `repr`):
    /// `__main__` for the program `svc run` runs, the dotted import path for an imported
    /// module, else `stem` (the file stem, which is also what the store records).
    pub(super) fn shown_module(&self, file: u32, stem: &Rc<str>) -> Rc<str> {
        self.module_names
            .get(&file)
            .cloned()
            .unwrap_or_else(|| stem.clone())
    }

    pub(super) fn set_shown_module(&mut self, file: u32, shown: Rc<str>) {
        Rc::make_mut(&mut self.module_names).insert(file, shown);
    }

    /// Declare everything in `module`, then run its globs and entry blocks in order.
    pub(super) fn exec_module(
        &mut self,
        path: &Path,
        module: &ast::Module,
        file: u32,
        is_main: bool,
        shown: Rc<str>,
    ) -> R<Rc<ModuleObj>> {
        let scope = Scope::new_module(self.builtins.clone());
        let name = Self::module_name(path);
        self.set_shown_module(file, shown.clone());
        // Python's `__name__`: `__main__` for the program run, else the module's name
        // (`if __name__ == '__main__' { ... }` guards a script's main code).
        scope_define(
            &scope,
            Rc::from("__name__"),
            Value::Str(shown.clone().into()),
        );
        let m = Rc::new(ModuleObj {
            name: name.clone(),
            scope: scope.clone(),
        });
        if let Some(canon) = self.host.module_key(path) {
            Rc::make_mut(&mut self.modules).insert(canon, m.clone());
        }
        let ctx = Ctx::module(scope.clone(), file);
        // Pass 1: imports and declarations (classes, functions, impls), the module's
        // own first, with the archetype bodies its annexes give merged in.
        let mut annexes = self.parse_annexes(path, super::annex::IMPL_SUFFIX)?;
        let merged = super::annex::merge_annex_arch_impls(&module.items, &mut annexes);
        let items = merged.as_deref().unwrap_or(&module.items);
        self.declare_items(items, &ctx, path, &name, false)?;
        self.load_impl_annexes(annexes, &ctx, path, &name, &shown)?;
        // Pass 2: globs, decorators and entry blocks in file order (a decorator may
        // read a glob declared above it, as Python runs a module top to bottom).
        for item in &module.items {
            match item {
                Item::Glob(g) => self.exec_glob(g, &ctx)?,
                Item::Ability(_) | Item::Archetype(_) => self.decorate_item(item, &ctx)?,
                Item::Entry(e) if !e.is_exit => {
                    let runs = match &e.name {
                        None => true,
                        Some(n) => is_main && &*n.name == "__main__",
                    };
                    if runs {
                        match self.exec_entry_block(&e.body, &ctx)? {
                            Flow::Normal | Flow::Return(_) => {}
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for item in &module.items {
            if let Item::Entry(e) = item
                && e.is_exit
            {
                self.exec_block(&e.body, &ctx)?;
            }
        }
        Ok(m)
    }

    /// Declare `items`; with `decorate`, apply their decorators too (otherwise the caller
    /// calls [`Self::decorate_item`] for each in its own order).
    pub(super) fn declare_items(
        &mut self,
        items: &[Item],
        ctx: &Ctx,
        path: &Path,
        module: &Rc<str>,
        decorate: bool,
    ) -> R<()> {
        // Archetypes first (in dependency order), then enums, functions, impls.
        let mut arch_decls: Vec<&ast::Archetype> = Vec::new();
        for item in items {
            match item {
                Item::Import(imp) => self.exec_import(imp, ctx, path)?,
                Item::Archetype(a) => arch_decls.push(a),
                _ => {}
            }
        }
        for item in items {
            if let Item::Enum(e) = item {
                self.declare_enum(e, ctx, module)?;
            }
        }
        let mut defined: HashMap<&str, bool> = HashMap::new();
        for a in &arch_decls {
            self.declare_arch_ordered(a, &arch_decls, &mut defined, ctx, module)?;
        }
        for item in items {
            if let Item::Ability(ab) = item {
                let f = self.make_function_from_ability(ab, ctx, None);
                if let Some(n) = &ab.name {
                    scope_define(&ctx.scope, n.name.clone(), Value::Func(f));
                }
            }
        }
        if decorate {
            for item in items {
                self.decorate_item(item, ctx)?;
            }
        }
        for item in items {
            if let Item::Impl(imp) = item {
                self.apply_impl(imp, ctx)?;
            }
        }
        Ok(())
    }

    pub(super) fn declare_arch_ordered<'a>(
        &mut self,
        a: &'a ast::Archetype,
        all: &[&'a ast::Archetype],
        defined: &mut HashMap<&'a str, bool>,
        ctx: &Ctx,
        module: &Rc<str>,
    ) -> R<()> {
        let name: &str = &a.name.name;
        if defined.contains_key(name) {
            return Ok(());
        }
        defined.insert(name, true);
        for b in &a.bases {
            if let ast::ExprKind::Name(bn) = &b.kind
                && let Some(dep) = all.iter().find(|d| *d.name.name == **bn)
            {
                self.declare_arch_ordered(dep, all, defined, ctx, module)?;
            }
        }
        let class = self.declare_archetype(a, ctx, module)?;
        scope_define(&ctx.scope, a.name.name.clone(), Value::Class(class));
        Ok(())
    }

    pub(super) fn exec_import(&mut self, imp: &ast::Import, ctx: &Ctx, path: &Path) -> R<()> {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let ext = crate::host::module_ext(path);
        let resolve = |mp: &ast::ModPath| -> PathBuf {
            let mut p = dir.clone();
            for _ in 1..mp.dots {
                p.push("..");
            }
            for (i, part) in mp.parts.iter().enumerate() {
                if i + 1 == mp.parts.len() {
                    p.push(format!("{}.{ext}", part.name));
                } else {
                    p.push(&*part.name);
                }
            }
            p
        };
        if let Some(from) = &imp.from
            && imp.remote
        {
            return self.exec_sv_import(imp, from, &resolve(from), &ctx.scope);
        }
        if let Some(from) = &imp.from {
            let first = from.parts.first().map(|n| &*n.name).unwrap_or("");
            let dotted: Vec<&str> = from.parts.iter().map(|p| &*p.name).collect();
            let dotted = dotted.join(".");
            // The event built-ins under the original's module paths; a local
            // `events.svc` still wins over the short `events`.
            if from.dots == 0
                && events::EVENT_MODULES.contains(&dotted.as_str())
                && (dotted != "events" || self.host.read_module(&resolve(from)).is_none())
            {
                for item in &imp.items {
                    let v = self.event_module_member(&dotted, &item.name.name)?;
                    let bind = item.alias.as_ref().unwrap_or(&item.name);
                    scope_define(&ctx.scope, bind.name.clone(), v);
                }
                return Ok(());
            }
            // `sv_client` and the original's `jaclang.runtimelib { sv_client }`; a local
            // `sv_client.svc` still wins.
            if from.dots == 0
                && crate::names::SV_CLIENT_MODULES.contains(&dotted.as_str())
                && self.host.read_module(&resolve(from)).is_none()
            {
                for item in &imp.items {
                    let v = self.sv_client_member(&dotted, &item.name.name)?;
                    let bind = item.alias.as_ref().unwrap_or(&item.name);
                    scope_define(&ctx.scope, bind.name.clone(), v);
                }
                return Ok(());
            }
            if from.dots == 0
                && from.parts.len() == 1
                && self.is_builtin_module(first, &resolve(from))
            {
                for item in &imp.items {
                    let v = self.builtin_module_member(first, &item.name.name)?;
                    let bind = item.alias.as_ref().unwrap_or(&item.name);
                    scope_define(&ctx.scope, bind.name.clone(), v);
                }
                return Ok(());
            }
            let m = self.load_module(&resolve(from), from)?;
            for item in &imp.items {
                let v = scope_get(&m.scope, &item.name.name).ok_or_else(|| {
                    self.err(
                        "ImportError",
                        format!("cannot import name '{}' from '{}'", item.name.name, m.name),
                    )
                })?;
                let bind = item.alias.as_ref().unwrap_or(&item.name);
                scope_define(&ctx.scope, bind.name.clone(), v);
            }
        } else {
            for (mp, alias) in &imp.modules {
                let first = mp.parts.first().map(|n| &*n.name).unwrap_or("");
                let m = if mp.dots == 0
                    && mp.parts.len() == 1
                    && self.is_builtin_module(first, &resolve(mp))
                {
                    self.builtin_module(first)
                } else {
                    self.load_module(&resolve(mp), mp)?
                };
                if imp.kind == ast::ImportKind::Include {
                    let vars = m.scope.borrow().vars.to_vec();
                    for (k, v) in vars {
                        scope_define(&ctx.scope, k, v);
                    }
                    continue;
                }
                let bind = alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| {
                    mp.parts
                        .first()
                        .map(|n| n.name.clone())
                        .unwrap_or_else(|| Rc::from("_"))
                });
                scope_define(&ctx.scope, bind, Value::Module(m));
            }
        }
        Ok(())
    }

    pub(super) fn load_module(&mut self, file_path: &Path, mp: &ast::ModPath) -> R<Rc<ModuleObj>> {
        if let Some(canon) = self.host.module_key(file_path)
            && let Some(m) = self.modules.get(&canon)
        {
            return Ok(m.clone());
        }
        let dotted: Vec<&str> = mp.parts.iter().map(|p| &*p.name).collect();
        let Some(text) = self.host.read_module(file_path) else {
            return Err(self.err(
                "ModuleNotFoundError",
                format!("No module named '{}'", dotted.join(".")),
            ));
        };
        let parsed = crate::parser::parse(&text);
        let sf = SourceFile::new(file_path.display().to_string(), text);
        if let Some(d) = parsed.diagnostics.iter().find(|d| d.is_error()) {
            let rendered = d.render(&sf);
            return Err(self.err("SyntaxError", rendered.trim_end().to_string()));
        }
        let file = self.add_file(sf);
        let shown = Rc::from(dotted.join("."));
        self.exec_module(file_path, &parsed.module, file, false, shown)
    }
}

/// Decorators that are server metadata (`restspec`, `schedule`, `subscribe`): read by the
/// server from the source, never called on the function.
pub(super) fn is_server_metadata(d: &ast::Expr) -> bool {
    let head = match &d.kind {
        ast::ExprKind::Call { func, .. } => func,
        _ => d,
    };
    matches!(&head.kind, ast::ExprKind::Name(n) if matches!(&**n, "restspec" | "schedule" | "subscribe"))
}

/// Decorators that shape how a method is stored (`@property`, `@p.setter`,
/// `@staticmethod`, `@classmethod`; `decl_later::method_key`).
fn is_storage_decorator(d: &ast::Expr) -> bool {
    use super::decl_later::is_plain_decorator;
    ["property", "staticmethod", "classmethod"]
        .iter()
        .any(|n| is_plain_decorator(d, n))
        || matches!(&d.kind, ast::ExprKind::Attr { name, .. } if matches!(&*name.name, "setter" | "getter"))
}

/// A `def` method whose decorators are called when its archetype is declared (Python's
/// `add = logged(add)` in a class body): it has one that is neither server metadata
/// nor a storage decorator, and no storage decorator (a mix stays parsed only).
/// Abilities (`can ... with T entry`) are not rebound: see [`is_called_ability_decorated`].
pub(super) fn has_called_method_decorators(ab: &ast::Ability) -> bool {
    ab.kind != ast::AbilityKind::Can
        && ab.event.is_none()
        && ab.name.is_some()
        && has_called_decorators(ab)
}

/// An event ability (`can go with T entry`) whose decorators are called, for their
/// effects, when its archetype is declared, as jaclang does; what they return is
/// dropped and the ability keeps its trigger (see ARCHITECTURE.md "Fourth pass").
fn is_called_ability_decorated(ab: &ast::Ability) -> bool {
    (ab.kind == ast::AbilityKind::Can || ab.event.is_some())
        && ab.name.is_some()
        && has_called_decorators(ab)
}

fn has_called_decorators(ab: &ast::Ability) -> bool {
    !ab.decorators.iter().any(is_storage_decorator)
        && ab.decorators.iter().any(|d| !is_server_metadata(d))
}

impl Interp<'_> {
    /// Apply the decorators of a declared def or archetype, innermost first, as Python
    /// does: `@d1 @d2 def f` binds `f = d1(d2(f))`; an archetype's method decorators
    /// first (Python runs the class body first), then `@d obj A {}` binds `A = d(A)`.
    /// Every function of the module is declared by then; a module calls this in file
    /// order with its globs, so a decorator may read a glob declared above it.
    pub(super) fn decorate_item(&mut self, item: &Item, ctx: &Ctx) -> R<()> {
        let (name, decorators) = match item {
            Item::Ability(ab) => match &ab.name {
                Some(n) => (n, &ab.decorators),
                None => return Ok(()),
            },
            Item::Archetype(a) => {
                if let Some(Value::Class(c)) = scope_get(&ctx.scope, &a.name.name) {
                    self.apply_method_decorators(&c, a, ctx)?;
                }
                (&a.name, &a.decorators)
            }
            _ => return Ok(()),
        };
        if decorators.iter().any(|d| !is_server_metadata(d)) {
            let f = scope_get(&ctx.scope, &name.name).unwrap_or(Value::None);
            let v = self.apply_decorators(decorators, f, ctx)?;
            scope_define(&ctx.scope, name.name.clone(), v);
        }
        Ok(())
    }

    /// Bind each decorated method of `class` (and of the archetypes nested in it) to
    /// what its decorators return, innermost first, as a class attribute: `c.add` then
    /// binds `c` as the first argument when that is a plain function, as Python does.
    pub(super) fn apply_method_decorators(
        &mut self,
        class: &Rc<Class>,
        a: &ast::Archetype,
        ctx: &Ctx,
    ) -> R<()> {
        for m in &a.members {
            match m {
                ast::Member::Ability(ab) if has_called_method_decorators(ab) => {
                    let Some(n) = &ab.name else { continue };
                    let kept = super::decl_later::undecorated_name(&n.name);
                    let Some(f) = class.methods.borrow().get(kept.as_str()).cloned() else {
                        continue;
                    };
                    let v = self.apply_decorators(&ab.decorators, Value::Func(f), ctx)?;
                    class.statics.borrow_mut().insert(n.name.clone(), v);
                }
                ast::Member::Ability(ab) if is_called_ability_decorated(ab) => {
                    let Some(n) = &ab.name else { continue };
                    let Some(f) = class.methods.borrow().get(&n.name).cloned() else {
                        continue;
                    };
                    self.apply_decorators(&ab.decorators, Value::Func(f), ctx)?;
                }
                ast::Member::Archetype(inner) => {
                    let c = class.statics.borrow().get(&inner.name.name).cloned();
                    if let Some(Value::Class(c)) = c {
                        self.apply_method_decorators(&c, inner, ctx)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `@d1 @d2 def f` binds `f = d1(d2(f))`; server metadata decorators are skipped.
    /// As in Python, every decorator expression is evaluated first, top to bottom
    /// (`@tag("a") @tag("b")` calls `tag("a")` before `tag("b")`), then the results are
    /// applied bottom up.
    pub(super) fn apply_decorators(
        &mut self,
        decorators: &[ast::Expr],
        f: Value,
        ctx: &Ctx,
    ) -> R<Value> {
        let mut called = Vec::with_capacity(decorators.len());
        for d in decorators {
            if !is_server_metadata(d) {
                called.push(self.eval(d, ctx)?);
            }
        }
        let mut v = f;
        for dec in called.iter().rev() {
            v = self.call_value(dec, vec![v], Vec::new())?;
        }
        Ok(v)
    }
}
