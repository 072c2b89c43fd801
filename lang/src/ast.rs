//! The abstract syntax tree: plain data, every node spanned, no I/O.
//!
//! The parser always produces a `Module`, even for broken input (with error nodes where
//! recovery skipped tokens). The checker and interpreter read the same tree.

pub mod binds;
pub mod impls;
pub mod locals;
pub mod visit;

use crate::span::Span;
use std::rc::Rc;

/// An identifier with its span. Names are reference-counted so the interpreter can keep
/// them as map keys without copying.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    pub name: Rc<str>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Pub,
    Priv,
    Protect,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// Module docstring, if the file starts with one.
    pub doc: Option<String>,
    pub items: Vec<Item>,
    pub span: Span,
    /// Names of the generic parameters the parser erased (`obj Box[T]`, `def f[T]`,
    /// `type A[T] = ...`), so the checker knows them in annotations.
    pub type_params: Vec<Rc<str>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Import(Import),
    Archetype(Archetype),
    Enum(EnumDecl),
    /// A `def` or `can` at module level (or nested in a block).
    Ability(Ability),
    Glob(Glob),
    Impl(ImplBlock),
    Entry(EntryBlock),
    Test(TestBlock),
}

// ---------------------------------------------------------------------------------------
// Declarations
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportKind {
    Import,
    Include,
}

/// A dotted module path; `dots` counts leading dots of a relative import.
#[derive(Clone, Debug, PartialEq)]
pub struct ModPath {
    pub dots: u32,
    pub parts: Vec<Name>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ImportItem {
    pub name: Name,
    pub alias: Option<Name>,
}

/// `import from mod { a, b as c };` (`from` is `Some`, `items` non-empty) or
/// `import mod as m;` (`from` is `None`, `modules` holds the paths).
#[derive(Clone, Debug, PartialEq)]
pub struct Import {
    pub kind: ImportKind,
    pub from: Option<ModPath>,
    pub items: Vec<ImportItem>,
    pub modules: Vec<(ModPath, Option<Name>)>,
    /// `sv import from provider { f, W }`: the names are service-to-service stubs (calls
    /// go to the provider over HTTP), the provider's code never runs here.
    pub remote: bool,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchKind {
    Obj,
    Node,
    Edge,
    Walker,
    Class,
}

impl ArchKind {
    pub fn keyword(self) -> &'static str {
        match self {
            ArchKind::Obj => "obj",
            ArchKind::Node => "node",
            ArchKind::Edge => "edge",
            ArchKind::Walker => "walker",
            ArchKind::Class => "class",
        }
    }
}

/// `node User(Base) { ... }`, `edge E: A --> B;`, `walker:pub W { ... }` ...
#[derive(Clone, Debug, PartialEq)]
pub struct Archetype {
    pub kind: ArchKind,
    pub name: Name,
    pub access: Option<Access>,
    pub decorators: Vec<Expr>,
    pub is_async: bool,
    pub bases: Vec<Expr>,
    /// The typed-endpoint clause `: Src --> Dst` (only valid on edges: E2027 elsewhere).
    pub endpoints: Option<(Expr, Expr)>,
    pub members: Vec<Member>,
    /// False for the bodiless form `edge E;`.
    pub has_body: bool,
    pub doc: Option<String>,
    /// Declared in a function body: the qualified name of the function with
    /// `.<locals>` (`make.<locals>`), the start of the class's `__qualname__`
    /// (`ast::locals::mark_local_archetypes`).
    pub locals: Option<std::rc::Rc<str>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Member {
    Has(HasDecl),
    Ability(Ability),
    Archetype(Archetype),
    Enum(EnumDecl),
    Impl(ImplBlock),
    Entry(EntryBlock),
    /// A stray statement inside an archetype body (kept so nothing is lost).
    Stmt(Stmt),
}

#[derive(Clone, Debug, PartialEq)]
pub struct HasDecl {
    pub is_static: bool,
    pub access: Option<Access>,
    pub vars: Vec<HasVar>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct HasVar {
    pub name: Name,
    pub ty: Expr,
    pub default: Option<Expr>,
    /// `has x: T postinit;`: set in `postinit`, not a constructor parameter.
    pub postinit: bool,
    /// `has v: T { getter { } setter(x: T) { } }`: a property, not a stored field.
    pub accessors: Option<Box<Accessors>>,
    pub span: Span,
}

/// The accessors of a property field: `getter`, `setter`, `deleter`.
#[derive(Clone, Debug, PartialEq)]
pub struct Accessors {
    pub getter: Option<Accessor>,
    pub setter: Option<Accessor>,
    pub deleter: Option<Accessor>,
}

/// One accessor: `getter -> T { }`, `setter(v: T) { }`, `setter { value }`, `deleter;`.
#[derive(Clone, Debug, PartialEq)]
pub struct Accessor {
    /// The parameters: none for a getter or deleter, one for a setter (the shorthand
    /// `setter { }` gets `value`, as jaclang synthesises it).
    pub params: Vec<Param>,
    pub ret: Option<Expr>,
    /// `None` when only declared (`getter;`): `impl Arch.prop.getter { }` gives it.
    pub body: Option<Vec<Stmt>>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbilityKind {
    /// `def name(params) -> T { }`
    Def,
    /// `can name with T entry { }`
    Can,
}

/// A function, method or event ability.
#[derive(Clone, Debug, PartialEq)]
pub struct Ability {
    pub kind: AbilityKind,
    pub decorators: Vec<Expr>,
    pub is_override: bool,
    pub is_static: bool,
    /// `class def f { }`: a class method (`cls` is bound to the class).
    pub is_class_method: bool,
    pub is_async: bool,
    pub access: Option<Access>,
    /// `None` for an anonymous ability `can with T entry { }`.
    pub name: Option<Name>,
    /// The parameter list of a `def` (`None` for `can`).
    pub signature: Option<Signature>,
    /// The event clause of a `can` (`None` for `def`).
    pub event: Option<EventClause>,
    /// `None` when the body is given elsewhere (`;` or `abst;`), filled by an `impl`.
    pub body: Option<Vec<Stmt>>,
    pub is_abstract: bool,
    pub doc: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub params: Vec<Param>,
    pub ret: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    Normal,
    /// `*args`
    VarArgs,
    /// `**kwargs`
    KwArgs,
    /// A bare `*` separator (following params are keyword-only); `name` is `*`.
    KwOnlyMarker,
    /// A bare `/` separator (preceding params are positional-only); `name` is `/`.
    PosOnlyMarker,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub kind: ParamKind,
    pub name: Name,
    pub ty: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

/// `with [Trigger] entry|exit`.
#[derive(Clone, Debug, PartialEq)]
pub struct EventClause {
    /// The trigger type expression (`A | B` for a union); `None` = untyped.
    pub trigger: Option<Expr>,
    pub is_exit: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ImplKind {
    /// `impl Arch.method(params) -> T { }` or `impl Arch.method { }`.
    Signature(Option<Signature>),
    /// `impl Arch.ability with T entry { }`.
    Event(EventClause),
    /// `impl Arch(Base) { }` (LATER).
    Bases(Vec<Expr>),
}

/// `impl Target.member ... { body }`: gives the body of a declared member.
#[derive(Clone, Debug, PartialEq)]
pub struct ImplBlock {
    pub decorators: Vec<Expr>,
    pub target: Vec<Name>,
    pub kind: ImplKind,
    pub body: Vec<Stmt>,
    /// The body read as archetype members (`impl Vehicle { has ...; def ...; }`): the
    /// body of an archetype declared elsewhere, merged into it by
    /// `ast::impls::merge_arch_impls`. A body of methods only is read both ways (here
    /// and as `body`); the merge keeps one.
    pub members: Option<Vec<Member>>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnumMember {
    pub name: Name,
    pub value: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EnumDecl {
    pub decorators: Vec<Expr>,
    pub access: Option<Access>,
    pub name: Name,
    pub bases: Vec<Expr>,
    pub members: Vec<EnumMember>,
    /// Nested `def`s / `with entry` blocks (LATER; parsed and kept).
    pub extra: Vec<Member>,
    pub has_body: bool,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct GlobVar {
    pub name: Name,
    pub ty: Option<Expr>,
    pub value: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Glob {
    pub access: Option<Access>,
    pub vars: Vec<GlobVar>,
    /// `type Pair[T] = tuple[T, T];`: the alias's type parameters (erased: each is
    /// `any` while the value is evaluated). Empty for a `glob`.
    pub type_params: Vec<Name>,
    /// Written `type Alias = T;` (not `glob`): the name is bound to a type alias object
    /// whose value Python evaluates lazily, so it may name the alias itself or a later name.
    pub is_alias: bool,
    pub span: Span,
}

/// `with entry { }`, `with entry:__main__ { }`, `with exit { }`.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryBlock {
    pub is_exit: bool,
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TestBlock {
    pub name: Option<String>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

// ---------------------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ExceptHandler {
    /// `None` for a bare `except { }`.
    pub ty: Option<Expr>,
    pub name: Option<Name>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MatchCase {
    pub pattern: Expr,
    pub guard: Option<Expr>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

/// One `case v:` (or `default:` when `value` is `None`) of a `switch`.
#[derive(Clone, Debug, PartialEq)]
pub struct SwitchCase {
    pub value: Option<Expr>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `;` on its own.
    Empty,
    Expr(Expr),
    /// `a = b = value;` and the typed form `x: T = value;` (then `targets.len() == 1`).
    Assign {
        targets: Vec<Expr>,
        ty: Option<Expr>,
        value: Expr,
    },
    /// `x: T;` without a value.
    Declare {
        target: Expr,
        ty: Expr,
    },
    AugAssign {
        target: Expr,
        op: BinOp,
        value: Expr,
    },
    If {
        cond: Expr,
        body: Vec<Stmt>,
        elifs: Vec<(Expr, Vec<Stmt>)>,
        orelse: Option<Vec<Stmt>>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
        orelse: Option<Vec<Stmt>>,
    },
    For {
        target: Expr,
        iter: Expr,
        body: Vec<Stmt>,
        orelse: Option<Vec<Stmt>>,
    },
    /// `for i = 0 while i < n with i += 1 { }` (also the older `to ... by ...`).
    /// `init` is the assignment statement, `step` the step statement.
    IterFor {
        init: Box<Stmt>,
        cond: Expr,
        step: Box<Stmt>,
        body: Vec<Stmt>,
        orelse: Option<Vec<Stmt>>,
    },
    Forever {
        body: Vec<Stmt>,
    },
    Try {
        body: Vec<Stmt>,
        handlers: Vec<ExceptHandler>,
        orelse: Option<Vec<Stmt>>,
        finally: Option<Vec<Stmt>>,
    },
    Match {
        subject: Expr,
        cases: Vec<MatchCase>,
    },
    /// `switch x { case v: ... default: ... }`: C-style, execution falls through the
    /// following cases until a `break` (jaclang 0.16.7 behaviour).
    Switch {
        subject: Expr,
        cases: Vec<SwitchCase>,
    },
    Return(Option<Expr>),
    Raise {
        exc: Option<Expr>,
        cause: Option<Expr>,
    },
    Assert {
        cond: Expr,
        msg: Option<Expr>,
    },
    /// `del x;`, `del d[k];`, `del node;`, `del [a, b];`.
    Delete(Expr),
    Break,
    Continue,
    Skip,
    Disengage,
    /// `visit :index: target else { ... }`.
    Visit {
        index: Option<Expr>,
        target: Expr,
        orelse: Option<Vec<Stmt>>,
    },
    Report(Expr),
    /// `with a as x, b { ... }`: context managers entered in order, exited in reverse.
    With {
        items: Vec<WithItem>,
        body: Vec<Stmt>,
        /// `async with`: `__aenter__`/`__aexit__`, awaited.
        is_async: bool,
    },
    /// Typed context block `->Type { ... }`.
    TypedContext {
        ty: Expr,
        body: Vec<Stmt>,
    },
    /// A declaration inside a block (nested def, archetype, glob, import, impl).
    Item(Box<Item>),
    /// What recovery skipped; the interpreter never runs a module with errors.
    Error,
}

/// One context manager of a `with` statement and the target its `__enter__` result is
/// bound to.
#[derive(Clone, Debug, PartialEq)]
pub struct WithItem {
    pub manager: Expr,
    pub target: Option<Expr>,
}

// ---------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    MatMul,
    BitAnd,
    BitOr,
    BitXor,
    LShift,
    RShift,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Pos,
    Not,
    Invert,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoolOp {
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    Gt,
    LtE,
    GtE,
    In,
    NotIn,
    Is,
    IsNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeOp {
    /// `a |> f` = `f(a)`
    Forward,
    /// `f <| a` = `f(a)`
    Backward,
    /// `a :> f` = `f(a)` (atomic)
    AtomicForward,
    /// `f <: a` = `f(a)` (atomic)
    AtomicBackward,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialRef {
    SelfRef,
    Super,
    Here,
    Root,
    Visitor,
    Init,
    PostInit,
    Props,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeDir {
    /// `-->`, `->:E:->`
    Out,
    /// `<--`, `<-:E:<-`
    In,
    /// `<-->`, `<-:E:->`
    Any,
}

/// One `field op value` condition in a filter `[?:T, age > 3]` or an edge hop predicate
/// `->:E:since > 2020:->`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldCond {
    pub field: Name,
    pub op: CmpOp,
    pub value: Expr,
    pub span: Span,
}

/// `[?:T, a > 1]` applied to a list (or inside an edge reference after a hop).
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    /// Type filter `:T` (may be a `|` union).
    pub ty: Option<Box<Expr>>,
    pub conds: Vec<FieldCond>,
    pub span: Span,
}

/// One edge operator in an edge reference: direction, optional edge type, predicates.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeOp {
    pub dir: EdgeDir,
    pub edge_type: Option<Box<Expr>>,
    pub conds: Vec<FieldCond>,
    pub span: Span,
}

/// A hop `-->` with an optional node filter `[?...]` and an optional pinned endpoint
/// (`[a --> b]`: `b` is the pin).
#[derive(Clone, Debug, PartialEq)]
pub struct Hop {
    pub op: EdgeOp,
    pub filter: Option<Filter>,
    pub pin: Option<Box<Expr>>,
    pub span: Span,
}

/// `[edge a ->:E:-> b]` style reference.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeRef {
    /// `edge` keyword: yield edge objects instead of nodes.
    pub edges: bool,
    /// Start anchor; `None` = `here` in walker abilities, `self` in node/edge abilities.
    pub anchor: Option<Box<Expr>>,
    pub hops: Vec<Hop>,
}

/// How a connect operator links its operands.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectOp {
    /// `Out`: `a ++> b` (edge a→b); `In`: `a <++ b` (edge b→a); `Any`: `a <++> b`.
    pub dir: EdgeDir,
    /// The edge constructor of a typed connect `+>: E(args) :+>`, or the bare type `E`.
    pub edge: Option<Box<Expr>>,
    /// Field assignments of the form `+>: E : f=v, g=w :+>`.
    pub assigns: Vec<(Name, Expr)>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Positional(Expr),
    Keyword(Name, Expr),
    Star(Expr),
    DoubleStar(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub enum DictItem {
    Pair(Expr, Expr),
    Spread(Expr),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comprehension {
    pub target: Expr,
    pub iter: Expr,
    pub conds: Vec<Expr>,
    pub span: Span,
}

/// A piece of an f-string.
#[derive(Clone, Debug, PartialEq)]
pub enum FStringPart {
    Literal(String),
    Expr {
        expr: Expr,
        /// `!r`, `!s` or `!a`.
        conversion: Option<char>,
        /// The format spec after `:`, itself possibly holding nested `{expr}` parts.
        spec: Option<Vec<FStringPart>>,
        /// `{x=}` self-documenting form: the source text to print before the value.
        debug_text: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    // --- literals ---
    None,
    Bool(bool),
    Int(i64),
    /// An integer literal too large for `i64`, as decimal digits.
    BigInt(String),
    Float(f64),
    /// A (possibly implicitly concatenated) plain string literal.
    Str(Rc<str>),
    /// A (possibly implicitly concatenated) bytes literal `b"..."`.
    Bytes(Rc<[u8]>),
    /// An f-string; adjacent plain strings are merged into its parts.
    FString(Vec<FStringPart>),
    /// `...`
    Ellipsis,

    // --- names ---
    /// An identifier, including builtin type words (`int`, `list`, ...) used as values.
    Name(Rc<str>),
    Special(SpecialRef),

    // --- containers ---
    List(Vec<Expr>),
    Tuple(Vec<Expr>),
    Set(Vec<Expr>),
    Dict(Vec<DictItem>),
    ListComp {
        elt: Box<Expr>,
        gens: Vec<Comprehension>,
    },
    SetComp {
        elt: Box<Expr>,
        gens: Vec<Comprehension>,
    },
    DictComp {
        key: Box<Expr>,
        value: Box<Expr>,
        gens: Vec<Comprehension>,
    },
    GenExp {
        elt: Box<Expr>,
        gens: Vec<Comprehension>,
    },
    /// `*xs` in a list/tuple/call or an assignment target.
    Starred(Box<Expr>),

    // --- access and calls ---
    Attr {
        obj: Box<Expr>,
        name: Name,
        null_safe: bool,
    },
    Index {
        obj: Box<Expr>,
        index: Box<Expr>,
        null_safe: bool,
    },
    /// Only valid as the `index` of an `Index`.
    Slice {
        lower: Option<Box<Expr>>,
        upper: Option<Box<Expr>>,
        step: Option<Box<Expr>>,
    },
    Call {
        func: Box<Expr>,
        args: Vec<Arg>,
    },

    // --- operators ---
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    BoolOp {
        op: BoolOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// A comparison chain `a < b <= c`.
    Compare {
        left: Box<Expr>,
        ops: Vec<(CmpOp, Expr)>,
    },
    Ternary {
        cond: Box<Expr>,
        then: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `(name := value)`
    Walrus {
        name: Name,
        value: Box<Expr>,
    },
    /// `lambda (params) -> T { body }`; the value is the sole expression statement or a
    /// `return`.
    Lambda {
        params: Vec<Param>,
        ret: Option<Box<Expr>>,
        body: Vec<Stmt>,
    },
    /// `x as T`
    Cast {
        expr: Box<Expr>,
        ty: Box<Expr>,
    },
    Pipe {
        op: PipeOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Await(Box<Expr>),
    /// `&x`: the anchor named by a jid string (`&"…"`, like `jobj`), or `x` itself when
    /// it already is a node, edge or object.
    Ref(Box<Expr>),
    /// `yield v` / `yield` / `yield from it`; only a statement or the right side of an
    /// assignment (the generator machine in `interp/generator.rs` runs those).
    Yield {
        value: Option<Box<Expr>>,
        from: bool,
    },

    // --- object-spatial ---
    /// `a spawn b` in either order; the interpreter decides which side is the walker.
    Spawn {
        left: Box<Expr>,
        right: Box<Expr>,
    },
    /// `a ++> b`, `a <++ b`, `a <++> b`, typed forms.
    Connect {
        left: Box<Expr>,
        right: Box<Expr>,
        op: ConnectOp,
    },
    /// `a del --> b`, `a del ->:E:-> b`.
    Disconnect {
        left: Box<Expr>,
        right: Box<Expr>,
        op: EdgeOp,
    },
    /// `[-->]`, `[edge here ->:E:-> ]`, ...
    EdgeRef(EdgeRef),
    /// `xs[?:T, a > 1]` applied to a value.
    Filter {
        obj: Box<Expr>,
        filter: Filter,
    },
    /// `objs(=a=5, b=7)` assign-comprehension (LATER).
    AssignComp {
        obj: Box<Expr>,
        assigns: Vec<(Name, Expr)>,
    },

    /// What recovery put in place of an unparsable expression.
    Error,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    pub fn error(span: Span) -> Expr {
        Expr {
            kind: ExprKind::Error,
            span,
        }
    }
}
