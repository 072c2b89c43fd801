//! Parameter binding of the general case (keywords, defaults, `*args`, `**kwargs`, the
//! `/` and `*` separators) with CPython's `TypeError` messages. The all-positional fast
//! path stays in `call.rs`.

use super::*;

/// `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'` as CPython lists missing arguments.
pub(super) fn name_list(names: &[Rc<str>]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        2 => format!("{} and {}", quoted[0], quoted[1]),
        n => format!("{}, and {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// CPython's message for too many positional arguments to a generated `__init__`
/// (`qual` is `P.__init__`), counting `self` as CPython does: `P.__init__() takes from 2
/// to 3 positional arguments but 4 were given`.
pub(super) fn init_arity_message(
    qual: &str,
    required: usize,
    total: usize,
    given: usize,
) -> String {
    let (lo, hi, given) = (required + 1, total + 1, given + 1);
    if lo == hi {
        format!(
            "{qual}() takes {} but {given} were given",
            plural(hi, "positional argument")
        )
    } else {
        format!("{qual}() takes from {lo} to {hi} positional arguments but {given} were given")
    }
}

/// CPython's message for required arguments left out of a call of `qual`.
pub(super) fn missing_message(qual: &str, names: &[Rc<str>]) -> String {
    format!(
        "{qual}() missing {}: {}",
        plural(names.len(), "required positional argument"),
        name_list(names)
    )
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

impl Interp<'_> {
    /// The name CPython shows for a function in argument errors: `Class.method` for
    /// methods (`Class.__init__` for `init`), the plain name otherwise; and how many
    /// implicit leading arguments (`self`/`cls`) it counts.
    pub(super) fn call_display_name(&self, func: &Function) -> (String, usize) {
        let owner = func
            .owner
            .borrow()
            .as_ref()
            .and_then(std::rc::Weak::upgrade);
        match owner {
            Some(c) if !func.is_lambda && func.captured.is_none() => {
                let n = match &*func.name {
                    "init" => "__init__",
                    "postinit" => "__post_init__",
                    other => other,
                };
                let implicit = !func.is_static || func.is_classmethod;
                (format!("{}.{n}", c.name), usize::from(implicit))
            }
            _ => (func.name.to_string(), 0),
        }
    }

    /// Bind `args`/`kwargs` to `func`'s parameters in `scope` (the general case).
    pub(super) fn bind_params_general(
        &mut self,
        func: &Rc<Function>,
        scope: &ScopeRef,
        args: Vec<Value>,
        kwargs: Vec<(Rc<str>, Value)>,
    ) -> R<()> {
        use ast::ParamKind as K;
        let (fname, implicit) = self.call_display_name(func);
        let params = &func.params;
        // Which parameters are positional-only (before `/`) and keyword-only (after `*`
        // or `*args`).
        let slash = params.iter().position(|p| p.kind == K::PosOnlyMarker);
        let mut kw_only = vec![false; params.len()];
        let mut after_star = false;
        for (i, p) in params.iter().enumerate() {
            if matches!(p.kind, K::VarArgs | K::KwOnlyMarker) {
                after_star = true;
                continue;
            }
            kw_only[i] = after_star && p.kind == K::Normal;
        }
        let pos_only = |i: usize| slash.is_some_and(|s| i < s);
        let positional: Vec<usize> = (0..params.len())
            .filter(|&i| params[i].kind == K::Normal && !kw_only[i])
            .collect();
        let varargs = params.iter().find(|p| p.kind == K::VarArgs);
        let varkw = params.iter().find(|p| p.kind == K::KwArgs);
        let mut bound: Vec<Option<Value>> = vec![None; params.len()];
        let n_args = args.len();
        let mut args = args.into_iter();
        for &i in &positional {
            match args.next() {
                Some(a) => bound[i] = Some(a),
                None => break,
            }
        }
        let extra: Vec<Value> = args.collect();
        if !extra.is_empty() && varargs.is_none() {
            let max = positional.len() + implicit;
            let min = positional
                .iter()
                .filter(|&&i| params[i].default.is_none())
                .count()
                + implicit;
            let takes = if min == max {
                plural(max, "positional argument")
            } else {
                format!("from {min} to {max} positional arguments")
            };
            let given = n_args + implicit;
            let kw_given = kwargs
                .iter()
                .filter(|(k, _)| {
                    params
                        .iter()
                        .enumerate()
                        .any(|(i, p)| kw_only[i] && p.name == *k)
                })
                .count();
            let given = if kw_given > 0 {
                format!(
                    "{} (and {}) were given",
                    plural(given, "positional argument"),
                    plural(kw_given, "keyword-only argument")
                )
            } else if given == 1 {
                "1 was given".to_string()
            } else {
                format!("{given} were given")
            };
            let msg = format!("{fname}() takes {takes} but {given}");
            return Err(self.err("TypeError", msg));
        }
        let mut kwdict = Dict::default();
        let mut pos_as_kw: Vec<Rc<str>> = Vec::new();
        for (k, v) in kwargs {
            let slot = params
                .iter()
                .enumerate()
                .position(|(i, p)| p.kind == K::Normal && p.name == k && !pos_only(i));
            match slot {
                Some(i) => {
                    if bound[i].is_some() {
                        return Err(self.err(
                            "TypeError",
                            format!("{fname}() got multiple values for argument '{k}'"),
                        ));
                    }
                    bound[i] = Some(v);
                }
                None if varkw.is_some() => {
                    kwdict.insert(HashKey(Value::Str(k.into())), v);
                }
                None => {
                    let is_pos_only = params
                        .iter()
                        .enumerate()
                        .any(|(i, p)| pos_only(i) && p.kind == K::Normal && p.name == k);
                    if is_pos_only {
                        pos_as_kw.push(k);
                        continue;
                    }
                    return Err(self.err(
                        "TypeError",
                        format!("{fname}() got an unexpected keyword argument '{k}'"),
                    ));
                }
            }
        }
        if !pos_as_kw.is_empty() {
            // CPython quotes the whole list once: `'a, b'`.
            let names: Vec<String> = pos_as_kw.iter().map(|n| n.to_string()).collect();
            return Err(self.err(
                "TypeError",
                format!(
                    "{fname}() got some positional-only arguments passed as keyword arguments: '{}'",
                    names.join(", ")
                ),
            ));
        }
        // Defaults, evaluated in the function's closure scope; then missing ones.
        let mut missing_pos: Vec<Rc<str>> = Vec::new();
        let mut missing_kw: Vec<Rc<str>> = Vec::new();
        for (i, p) in params.iter().enumerate() {
            if bound[i].is_some() || p.kind != K::Normal {
                continue;
            }
            match &p.default {
                Some(d) => {
                    // Evaluated once per function object and kept (`Function::defaults`):
                    // a mutable default is shared by every call, as Python's are.
                    if let Some(Some(v)) = func.defaults.borrow().get(i) {
                        bound[i] = Some(v.clone());
                        continue;
                    }
                    let ctx = Ctx {
                        scope: func.closure.clone(),
                        this: None,
                        here: None,
                        visitor: None,
                        class: None,
                        file: func.file,
                    };
                    let v = self.eval(d, &ctx)?;
                    let mut cache = func.defaults.borrow_mut();
                    if cache.len() < params.len() {
                        cache.resize(params.len(), None);
                    }
                    cache[i] = Some(v.clone());
                    bound[i] = Some(v);
                }
                None if kw_only[i] => missing_kw.push(p.name.clone()),
                None => missing_pos.push(p.name.clone()),
            }
        }
        for (missing, what) in [
            (&missing_pos, "positional argument"),
            (&missing_kw, "keyword-only argument"),
        ] {
            if !missing.is_empty() {
                return Err(self.err(
                    "TypeError",
                    format!(
                        "{fname}() missing {} required {}: {}",
                        missing.len(),
                        if missing.len() == 1 {
                            what.to_string()
                        } else {
                            format!("{what}s")
                        },
                        name_list(missing)
                    ),
                ));
            }
        }
        let mut s = scope.borrow_mut();
        for (i, p) in params.iter().enumerate() {
            match p.kind {
                K::Normal => {
                    if let Some(v) = bound[i].take() {
                        s.vars.insert(p.name.clone(), v);
                    }
                }
                K::KwArgs => {
                    s.vars
                        .insert(p.name.clone(), Value::dict(std::mem::take(&mut kwdict)));
                }
                K::VarArgs | K::KwOnlyMarker | K::PosOnlyMarker => {}
            }
        }
        if let Some(p) = varargs {
            s.vars.insert(p.name.clone(), Value::tuple(extra));
        }
        Ok(())
    }
}
