//! Walker traversal: spawn, the shared queue, entry/exit order, visit, report, skip and
//! disengage, exactly as language.md §8 and the spec's rules 1–17 describe.

use super::value::*;
use super::{Ctx, Interp, R};
use crate::ast;
use std::collections::VecDeque;
use std::rc::Rc;

/// The state of one spawn.
pub struct Walk {
    /// The locations still to visit: every location is an anchor (`seed` and
    /// `locations` queue nothing else), so the queue holds handles, 8 bytes an entry
    /// instead of a value's 32 (a walk over 100,000 nodes can queue most of them).
    pub queue: VecDeque<Handle>,
    pub disengaged: bool,
    /// The walker's `reports` list, shared with its `reports` attribute.
    pub reports: Rc<std::cell::RefCell<Vec<Value>>>,
}

impl Interp<'_> {
    /// `a spawn b`: whichever operand is a walker runs from the other.
    pub(crate) fn spawn(&mut self, left: Value, right: Value) -> R<Value> {
        let (walker, loc) = match (&left, &right) {
            (Value::Instance(i), _) if i.class.is_walker() => (i.clone(), right),
            (_, Value::Instance(i)) if i.class.is_walker() => (i.clone(), left),
            (Value::Class(c), _) if c.is_walker() => match self.construct(c, vec![], vec![])? {
                Value::Instance(i) => (i, right),
                _ => return Err(self.err("TypeError", "spawn needs a walker")),
            },
            (_, Value::Class(c)) if c.is_walker() => match self.construct(c, vec![], vec![])? {
                Value::Instance(i) => (i, left),
                _ => return Err(self.err("TypeError", "spawn needs a walker")),
            },
            _ => {
                let (a, b) = (self.type_name_of(&left), self.type_name_of(&right));
                return Err(self.err(
                    "TypeError",
                    format!("spawn needs a walker and a location, got '{a}' and '{b}'"),
                ));
            }
        };
        let mut queue = VecDeque::new();
        self.seed(&loc, &mut queue)?;
        let outermost = self.walks.is_empty();
        let reports = Rc::new(std::cell::RefCell::new(Vec::new()));
        match walker.class.field_index.get("reports") {
            // `has reports: list[T]` only adds typing: the field is the report list.
            Some(&i) => walker.fields.borrow_mut()[i] = Value::List(reports.clone()),
            None => walker.set_extra(Rc::from("reports"), Value::List(reports.clone())),
        }
        self.walks.push(Walk {
            queue,
            disengaged: false,
            reports,
        });
        let result = self.run_walk(&walker);
        self.walks.pop();
        result?;
        // `svc run`: each top-level spawn commits. A served call commits once at its end,
        // so walkers spawned inside it join its transaction.
        if outermost && !self.serving {
            self.commit()?;
        }
        Ok(Value::Instance(walker))
    }

    /// Queue seeding: node → [node]; edge → [edge, target]; list → items in order, each
    /// edge followed by its target.
    fn seed(&mut self, loc: &Value, queue: &mut VecDeque<Handle>) -> R<()> {
        match loc {
            Value::Anchor(h) => {
                let h = *h;
                queue.push_back(h);
                if let Some(ends) = self.graph.slot(h).ends()
                    && let Some(t) = self.handle_of(ends.target())?
                {
                    queue.push_back(t);
                }
                Ok(())
            }
            Value::List(items) => {
                let items = items.borrow().clone();
                for i in &items {
                    self.seed(i, queue)?;
                }
                Ok(())
            }
            Value::Tuple(items) => {
                for i in items.iter() {
                    self.seed(i, queue)?;
                }
                Ok(())
            }
            other => {
                let t = self.type_name_of(other);
                Err(self.err("TypeError", format!("cannot spawn a walker on '{t}'")))
            }
        }
    }

    fn disengaged(&self) -> bool {
        self.walks.last().is_some_and(|w| w.disengaged)
    }

    fn run_walk(&mut self, walker: &Rc<Instance>) -> R<()> {
        let wclass = walker.class.clone();
        let wval = Value::Instance(walker.clone());
        let abilities: Vec<Rc<AbilityDef>> = wclass.abilities.borrow().clone();
        // Untyped walker entry: once, before any location, with here = first location.
        let first = self
            .walks
            .last()
            .and_then(|w| w.queue.front().map(|&h| Value::Anchor(h)));
        for ab in abilities
            .iter()
            .filter(|a| a.trigger.is_none() && !a.is_exit)
        {
            self.run_ability(ab, wval.clone(), first.clone(), None)?;
            if self.disengaged() {
                return Ok(());
            }
        }
        // The locations entered, for their exit pass: handles (every location is an
        // anchor; anything else would have no exit abilities to run).
        let mut stack: Vec<Handle> = Vec::new();
        let mut last: Option<Value> = None;
        loop {
            if self.disengaged() {
                return Ok(());
            }
            let next = self.walks.last_mut().and_then(|w| w.queue.pop_front());
            if let Some(h) = next {
                if !self.graph.is_live(h) {
                    continue;
                }
                let loc = Value::Anchor(h);
                self.enter(&abilities, &wval, &loc)?;
                stack.push(h);
                last = Some(loc);
                continue;
            }
            match stack.pop() {
                Some(h) => self.exit(&abilities, &wval, &Value::Anchor(h))?,
                None => break,
            }
        }
        if self.disengaged() || last.is_none() {
            return Ok(());
        }
        for ab in abilities
            .iter()
            .filter(|a| a.trigger.is_none() && a.is_exit)
        {
            self.run_ability(ab, wval.clone(), last.clone(), None)?;
            if self.disengaged() {
                break;
            }
        }
        Ok(())
    }

    fn loc_class(&self, loc: &Value) -> Option<Rc<Class>> {
        match loc {
            Value::Anchor(h) => Some(self.graph.slot(*h).class.clone()),
            _ => None,
        }
    }

    /// Entering a location: (a) walker abilities typed for it, (b) its untyped entry
    /// abilities, (c) its entry abilities typed for the walker.
    fn enter(&mut self, wabs: &[Rc<AbilityDef>], wval: &Value, loc: &Value) -> R<()> {
        let Some(lclass) = self.loc_class(loc) else {
            return Ok(());
        };
        let wclass = self.class_of(wval);
        for ab in wabs.iter().filter(|a| a.trigger.is_some() && !a.is_exit) {
            for _ in 0..self.trigger_matches(ab, &lclass)? {
                self.run_ability(ab, wval.clone(), Some(loc.clone()), None)?;
                if self.disengaged() {
                    return Ok(());
                }
            }
        }
        // Decision 3: abilities declared on edges are not triggered.
        if lclass.is_edge() {
            return Ok(());
        }
        let labs: Vec<Rc<AbilityDef>> = lclass.abilities.borrow().clone();
        for ab in labs.iter().filter(|a| a.trigger.is_none() && !a.is_exit) {
            self.run_ability(ab, loc.clone(), Some(loc.clone()), Some(wval.clone()))?;
            if self.disengaged() {
                return Ok(());
            }
        }
        for ab in labs.iter().filter(|a| a.trigger.is_some() && !a.is_exit) {
            for _ in 0..self.trigger_matches(ab, &wclass)? {
                self.run_ability(ab, loc.clone(), Some(loc.clone()), Some(wval.clone()))?;
                if self.disengaged() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Leaving a location: (a) its exit abilities typed for the walker, (b) its untyped
    /// exit abilities, (c) walker exit abilities typed for it.
    fn exit(&mut self, wabs: &[Rc<AbilityDef>], wval: &Value, loc: &Value) -> R<()> {
        let Some(lclass) = self.loc_class(loc) else {
            return Ok(());
        };
        let wclass = self.class_of(wval);
        if !lclass.is_edge() {
            let labs: Vec<Rc<AbilityDef>> = lclass.abilities.borrow().clone();
            for ab in labs.iter().filter(|a| a.trigger.is_some() && a.is_exit) {
                for _ in 0..self.trigger_matches(ab, &wclass)? {
                    self.run_ability(ab, loc.clone(), Some(loc.clone()), Some(wval.clone()))?;
                    if self.disengaged() {
                        return Ok(());
                    }
                }
            }
            for ab in labs.iter().filter(|a| a.trigger.is_none() && a.is_exit) {
                self.run_ability(ab, loc.clone(), Some(loc.clone()), Some(wval.clone()))?;
                if self.disengaged() {
                    return Ok(());
                }
            }
        }
        for ab in wabs.iter().filter(|a| a.trigger.is_some() && a.is_exit) {
            for _ in 0..self.trigger_matches(ab, &lclass)? {
                self.run_ability(ab, wval.clone(), Some(loc.clone()), None)?;
                if self.disengaged() {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// How many members of the ability's trigger union `class` matches (a union is one
    /// slot per member, so a node matching two members fires twice).
    fn trigger_matches(&mut self, ab: &AbilityDef, class: &Class) -> R<usize> {
        if ab.resolved.borrow().is_none() {
            let Some(t) = &ab.trigger else { return Ok(1) };
            let scope = ab
                .func
                .owner
                .borrow()
                .as_ref()
                .and_then(std::rc::Weak::upgrade)
                .and_then(|c| c.scope.borrow().clone())
                .unwrap_or_else(|| ab.func.closure.clone());
            let ctx = Ctx {
                scope,
                this: None,
                here: None,
                visitor: None,
                class: None,
                file: ab.func.file,
            };
            let v = self.eval(t, &ctx)?;
            let mut types = Vec::new();
            self.collect_trigger_types(&v, &mut types)?;
            *ab.resolved.borrow_mut() = Some(types);
        }
        let r = ab.resolved.borrow();
        Ok(r.as_ref()
            .map_or(0, |ts| ts.iter().filter(|t| class.is_sub(t)).count()))
    }

    fn collect_trigger_types(&mut self, v: &Value, out: &mut Vec<Rc<Class>>) -> R<()> {
        match v {
            Value::Class(c) => {
                out.push(c.clone());
                Ok(())
            }
            Value::Tuple(items) => {
                for i in items.iter() {
                    self.collect_trigger_types(i, out)?;
                }
                Ok(())
            }
            other => {
                let t = self.type_name_of(other);
                Err(self.err(
                    "TypeError",
                    format!(
                        "Ability trigger must be a class, not an instance of `{t}`. Use `with {t} entry` instead."
                    ),
                ))
            }
        }
    }

    fn run_ability(
        &mut self,
        ab: &AbilityDef,
        this: Value,
        here: Option<Value>,
        visitor: Option<Value>,
    ) -> R<()> {
        match self.call_function(&ab.func, Some(this), vec![], vec![], Some((here, visitor))) {
            Ok(_) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `visit :index: target`; returns whether anything was queued.
    pub(crate) fn exec_visit(
        &mut self,
        index: Option<&ast::Expr>,
        target: &ast::Expr,
        ctx: &Ctx,
    ) -> R<bool> {
        let mut items: Vec<Value> = Vec::new();
        if let ast::ExprKind::EdgeRef(r) = &target.kind
            && r.edges
        {
            // `[edge ...]` in a visit yields each edge followed by its far node.
            let (_, pairs) = self.eval_edge_ref(r, ctx)?;
            let mut seen = FxHashMap::default();
            for (e, n) in pairs {
                items.push(Value::Anchor(e));
                if seen.insert(n, ()).is_none() {
                    items.push(Value::Anchor(n));
                }
            }
        } else {
            let v = self.eval(target, ctx)?;
            self.locations(&v, &mut items)?;
        }
        let idx = match index {
            Some(e) => Some(self.eval(e, ctx)?),
            None => None,
        };
        self.queue_visit(items, idx)
    }

    /// Queue the locations `items` of a `visit` on the running walk at index `idx`
    /// (the value of `visit :idx:`, checked here); whether anything was queued.
    pub(crate) fn queue_visit(&mut self, items: Vec<Value>, idx: Option<Value>) -> R<bool> {
        let idx = match idx {
            Some(Value::Int(i)) => Some(i),
            Some(other) => {
                let t = self.type_name_of(&other);
                return Err(self.err(
                    "TypeError",
                    format!("visit index must be an int, not '{t}'"),
                ));
            }
            None => None,
        };
        if items.is_empty() {
            return Ok(false);
        }
        let Some(walk) = self.walks.last_mut() else {
            return Ok(false);
        };
        let n = walk.queue.len() as i64;
        // Decision 4: 0 = front, -1 = end, N = position N; out of range appends.
        let pos = match idx {
            None | Some(-1) => None,
            Some(i) if i >= 0 && i <= n => Some(i as usize),
            Some(i) if i < -1 && i + n + 1 >= 0 => Some((i + n + 1) as usize),
            Some(_) => None,
        };
        // Every item is an anchor (`locations`, and the compiled core's visit, which
        // builds its items the same way).
        let handles = items.into_iter().filter_map(|it| match it {
            Value::Anchor(h) => Some(h),
            _ => None,
        });
        match pos {
            None => walk.queue.extend(handles),
            Some(p) => {
                for (k, h) in handles.enumerate() {
                    walk.queue.insert(p + k, h);
                }
            }
        }
        Ok(true)
    }

    /// Convert a visit target to locations: nodes, edges (followed by their target),
    /// lists of either.
    pub(crate) fn locations(&mut self, v: &Value, out: &mut Vec<Value>) -> R<()> {
        match v {
            Value::Anchor(h) => {
                let h = *h;
                out.push(Value::Anchor(h));
                if let Some(ends) = self.graph.slot(h).ends()
                    && let Some(t) = self.handle_of(ends.target())?
                {
                    out.push(Value::Anchor(t));
                }
                Ok(())
            }
            Value::List(items) => {
                let items = items.borrow().clone();
                for i in &items {
                    self.locations(i, out)?;
                }
                Ok(())
            }
            Value::Tuple(items) => {
                for i in items.iter() {
                    self.locations(i, out)?;
                }
                Ok(())
            }
            Value::None => Ok(()),
            other => {
                let t = self.type_name_of(other);
                Err(self.err("TypeError", format!("cannot visit '{t}'")))
            }
        }
    }

    /// `report v`: print it, then append it to the running walk (or the run's report list).
    pub(crate) fn report(&mut self, v: Value) -> R<()> {
        let mut s = self.to_str(&v)?;
        s.push('\n');
        self.write_stdout(&s);
        match self.walks.last_mut() {
            Some(w) => w.reports.borrow_mut().push(v),
            None => self.top_reports.push(v),
        }
        Ok(())
    }
}
