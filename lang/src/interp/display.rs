//! `str()` and `repr()` of every value, following CPython and language.md §9: archetypes
//! print as `Name(field=repr, ...)`, walkers omit `reports`, enums as `Color.RED`.

use super::value::*;
use super::{Interp, R};
use crate::pyfmt;
use std::fmt::Write as _;

impl Interp<'_> {
    #[allow(clippy::wrong_self_convention)] // `self` is the interpreter doing the conversion, not the value converted
    pub fn to_str(&mut self, v: &Value) -> R<String> {
        match v {
            Value::Str(s) => Ok(s.to_string()),
            Value::EnumMember(m) if let Some(t) = super::stdlib::flag_text(m) => Ok(t),
            Value::EnumMember(m) if super::decl_later::enum_value_type(&m.class).is_some() => {
                let v = m.value.clone();
                self.to_str(&v)
            }
            Value::EnumMember(m) => Ok(format!("{}.{}", m.class.name, m.name)),
            Value::Instance(i) if i.class.is_exception() => {
                if let Some(f) = i.class.find_method("__str__") {
                    let r = self.call_function(&f, Some(v.clone()), vec![], vec![], None)?;
                    return self.to_str(&r);
                }
                if let Some(t) = super::builtins::bytes::codec_error_text(i) {
                    return Ok(t);
                }
                match i.get_extra("args") {
                    Some(Value::Tuple(args)) => match args.len() {
                        0 => Ok(String::new()),
                        1 => {
                            let a = args[0].clone();
                            // KeyError shows the repr of its key.
                            if i.class.is_sub_named("KeyError") {
                                return self.repr(&a);
                            }
                            self.to_str(&a)
                        }
                        _ => self.repr(&Value::Tuple(args)),
                    },
                    _ => Ok(String::new()),
                }
            }
            Value::Instance(i) => {
                if let Some(r) = self.stdlib_str(v) {
                    return r;
                }
                if let Some(f) = i.class.find_method("__str__") {
                    let r = self.call_function(&f, Some(v.clone()), vec![], vec![], None)?;
                    return self.to_str(&r);
                }
                self.repr(v)
            }
            Value::Anchor(h) => {
                let class = self.graph.slot(*h).class.clone();
                if let Some(f) = class.find_method("__str__")
                    && self.can_read(*h)?
                {
                    let r = self.call_function(&f, Some(v.clone()), vec![], vec![], None)?;
                    return self.to_str(&r);
                }
                self.repr(v)
            }
            _ => self.repr(v),
        }
    }

    /// The longest text `repr`/`str` may build.
    pub(crate) fn max_text_bytes(&self) -> usize {
        self.limits.max_string_bytes
    }

    pub fn repr(&mut self, v: &Value) -> R<String> {
        // Each top-level repr expands every anchor once.
        if self.repr_path.is_empty() {
            self.repr_seen.clear();
        }
        let mut out = String::new();
        self.write_repr(v, &mut out, 0)?;
        Ok(out)
    }

    fn write_repr(&mut self, v: &Value, out: &mut String, depth: usize) -> R<()> {
        if depth > 200 {
            out.push_str("...");
            return Ok(());
        }
        // Shared structure (18 nodes that each refer to two others) must not print
        // exponentially: text is bounded like any other string.
        if out.len() > self.max_text_bytes() {
            return Err(self.err(
                "MemoryError",
                format!(
                    "repr() would exceed {} bytes (shared or cyclic structure?)",
                    self.max_text_bytes()
                ),
            ));
        }
        match v {
            Value::None => out.push_str("None"),
            Value::Bool(true) => out.push_str("True"),
            Value::Bool(false) => out.push_str("False"),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::BigInt(b) => {
                let _ = write!(out, "{b}");
            }
            Value::Float(f) => out.push_str(&pyfmt::float_repr(*f)),
            Value::Str(s) => out.push_str(&pyfmt::str_repr(s)),
            Value::Bytes(b) => pyfmt::push_bytes_repr(out, b),
            Value::ByteArray(b) => pyfmt::push_bytearray_repr(out, &b.borrow()),
            Value::Complex(re, im) => out.push_str(&super::complex::complex_repr(*re, *im)),
            Value::Slice(s) => {
                out.push_str("slice(");
                for (i, x) in s.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_repr(x, out, depth + 1)?;
                }
                out.push(')');
            }
            Value::List(l) => {
                let items = l.borrow().clone();
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    if let Value::List(inner) = x
                        && std::rc::Rc::ptr_eq(inner, l)
                    {
                        out.push_str("[...]");
                        continue;
                    }
                    self.write_repr(x, out, depth + 1)?;
                }
                out.push(']');
            }
            Value::Tuple(t) => {
                out.push('(');
                for (i, x) in t.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_repr(x, out, depth + 1)?;
                }
                if t.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            Value::Dict(d) => {
                let items: Vec<(Value, Value)> = d
                    .borrow()
                    .iter()
                    .map(|(k, v)| (k.0.clone(), v.clone()))
                    .collect();
                out.push('{');
                for (i, (k, x)) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_repr(k, out, depth + 1)?;
                    out.push_str(": ");
                    self.write_repr(x, out, depth + 1)?;
                }
                out.push('}');
            }
            Value::Set(s) => {
                let items = super::ops::set_items(&s.borrow());
                if items.is_empty() {
                    out.push_str("set()");
                    return Ok(());
                }
                out.push('{');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    self.write_repr(x, out, depth + 1)?;
                }
                out.push('}');
            }
            Value::FrozenSet(s) => {
                let items = super::ops::set_items(&s.borrow());
                out.push_str("frozenset(");
                if !items.is_empty() {
                    out.push('{');
                    for (i, x) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        self.write_repr(x, out, depth + 1)?;
                    }
                    out.push('}');
                }
                out.push(')');
            }
            Value::Range(a, b, s) => {
                if *s == 1 {
                    let _ = write!(out, "range({a}, {b})");
                } else {
                    let _ = write!(out, "range({a}, {b}, {s})");
                }
            }
            Value::Func(f) => {
                let _ = write!(
                    out,
                    "<function {} at 0x{:012x}>",
                    f.name,
                    std::rc::Rc::as_ptr(f) as usize
                );
            }
            // CPython's `<bound method P.m of P(x=1)>`: the method's qualified name (its
            // defining class's) and the receiver's repr.
            Value::Bound(b) => {
                out.push_str("<bound method ");
                let owner = b.1.owner.borrow().as_ref().and_then(std::rc::Weak::upgrade);
                if let Some(class) = owner {
                    out.push_str(&class.qualname());
                    out.push('.');
                }
                out.push_str(&b.1.name);
                out.push_str(" of ");
                self.write_repr(&b.0, out, depth + 1)?;
                out.push('>');
            }
            Value::Builtin(n) if &**n == NOT_IMPLEMENTED => out.push_str(NOT_IMPLEMENTED),
            Value::Builtin(n) => {
                let _ = write!(out, "<built-in function {n}>");
            }
            Value::BuiltinMethod(b) => {
                let _ = write!(out, "<built-in method {}>", b.1);
            }
            Value::Class(c) => {
                if super::stdlib::is_flag_class(c) {
                    let _ = write!(out, "<flag '{}'>", c.name);
                } else if c.kind == ClassKind::Enum {
                    let _ = write!(out, "<enum '{}'>", c.name);
                } else if c.module.as_ref() == "builtins" {
                    let _ = write!(out, "<class '{}'>", c.name);
                } else {
                    let _ = write!(out, "<class '{}.{}'>", c.module, c.qualname());
                }
            }
            Value::EnumMember(m) if let Some(t) = super::stdlib::flag_text(m) => out.push_str(&t),
            Value::EnumMember(m) => {
                let mut val = String::new();
                self.write_repr(&m.value, &mut val, depth + 1)?;
                let _ = write!(out, "<{}.{}: {}>", m.class.name, m.name, val);
            }
            Value::Module(m) => {
                let _ = write!(out, "<module '{}'>", m.name);
            }
            Value::Iter(_, k) => {
                let _ = write!(out, "<{} object>", k.name());
            }
            Value::Super(_) => out.push_str("<super>"),
            Value::Generator(g) => {
                let _ = write!(out, "<generator object {}>", g.name);
            }
            Value::Coroutine(c) => {
                let _ = write!(out, "<coroutine object {}>", c.name);
            }
            Value::Lazy(l) => {
                let _ = write!(out, "<{} object>", l.kind.name());
            }
            Value::View(view) => {
                out.push_str(view.type_name());
                out.push_str("([");
                for (i, x) in view.items().iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    // A view inside its own dict prints as `...`, as in CPython.
                    if let Value::View(inner) = x
                        && std::rc::Rc::ptr_eq(inner, view)
                    {
                        out.push_str("...");
                        continue;
                    }
                    self.write_repr(x, out, depth + 1)?;
                }
                out.push_str("])");
            }
            Value::Instance(i) if is_traceback(i) => {
                let _ = write!(out, "<traceback object at 0x{:012x}>", i.id);
            }
            Value::Instance(i) => {
                if i.class.is_exception() && !i.class.has_record_repr() {
                    let args = match i.get_extra("args") {
                        Some(a) => a,
                        None => Value::tuple(vec![]),
                    };
                    let _ = write!(out, "{}", i.class.name);
                    match &args {
                        Value::Tuple(t) if t.len() == 1 => {
                            out.push('(');
                            self.write_repr(&t[0], out, depth + 1)?;
                            out.push(')');
                        }
                        other => self.write_repr(other, out, depth + 1)?,
                    }
                    return Ok(());
                }
                if let Some(f) = i.class.user_repr() {
                    let r = self.call_function(&f, Some(v.clone()), vec![], vec![], None)?;
                    out.push_str(&self.to_str(&r)?);
                    return Ok(());
                }
                if let Some(r) = self.stdlib_repr(v) {
                    out.push_str(&r?);
                    return Ok(());
                }
                let key = std::rc::Rc::as_ptr(i) as usize;
                if self.repr_path.contains(&key) {
                    let _ = write!(out, "{}(...)", i.class.name);
                    return Ok(());
                }
                let fields = i.fields.borrow().clone();
                let class = i.class.clone();
                self.repr_path.push(key);
                let r = self.write_fields(&class, &fields, out, depth);
                self.repr_path.pop();
                r?;
            }
            Value::Anchor(h) => {
                let h = *h;
                let class = self.graph.slot(h).class.clone();
                // A node the caller may not read prints without its fields.
                if !self.can_read(h)? {
                    let _ = write!(out, "{}(<no access>)", class.name);
                    return Ok(());
                }
                if let Some(f) = class.user_repr() {
                    let r = self.call_function(&f, Some(v.clone()), vec![], vec![], None)?;
                    out.push_str(&self.to_str(&r)?);
                    return Ok(());
                }
                // A node printed already by this repr (a cycle, or shared structure)
                // prints as `Name(...)`: the text stays proportional to the graph.
                let key = usize::MAX - (h as usize);
                if self.repr_path.contains(&key) || self.repr_seen.insert(key, ()).is_some() {
                    let _ = write!(out, "{}(...)", class.name);
                    return Ok(());
                }
                self.decode_fields(h)?;
                let fields = self.graph.slot(h).fields.clone();
                self.repr_path.push(key);
                let r = self.write_fields(&class, &fields, out, depth);
                self.repr_path.pop();
                r?;
            }
        }
        Ok(())
    }

    fn write_fields(
        &mut self,
        class: &Class,
        fields: &[Value],
        out: &mut String,
        depth: usize,
    ) -> R<()> {
        out.push_str(&class.qualname());
        out.push('(');
        let mut first = true;
        for (f, v) in class.fields.iter().zip(fields.iter()) {
            if f.is_static || (&*f.name == "reports" && class.is_walker()) {
                continue;
            }
            if !first {
                out.push_str(", ");
            }
            first = false;
            out.push_str(&f.name);
            out.push('=');
            self.write_repr(v, out, depth + 1)?;
        }
        out.push(')');
        Ok(())
    }
}

impl Class {
    /// Is this class (or an ancestor) the builtin named `name`?
    pub fn is_sub_named(&self, name: &str) -> bool {
        &*self.name == name || self.mro.iter().any(|c| &*c.name == name)
    }
}

/// A traceback object (`e.__traceback__`, made by `Interp::set_traceback`).
pub(super) fn is_traceback(i: &Instance) -> bool {
    i.class.kind == ClassKind::Builtin && &*i.class.name == "traceback"
}
