//! The grammar reference: an EBNF of what `parser` accepts and the token table of `lexer`.
//!
//! Both are kept in step with the code by tests (`tools::tests`): every hard keyword and
//! every punctuation spelling of `lexer::TokenKind` must appear in [`TOKENS`] (and so in
//! the table), every keyword of the table must lex to its kind, and every keyword must be
//! quoted somewhere in the EBNF. The binding powers of the precedence table mirror
//! `parser/expr.rs`.

use crate::lexer::{TokenKind, keyword};

/// One row of the token table: the kind, its category and what it is for.
pub struct TokenRow {
    pub kind: TokenKind,
    pub category: &'static str,
    pub meaning: &'static str,
}

macro_rules! rows {
    ($( $kind:ident, $cat:literal, $meaning:literal; )*) => {
        &[ $( TokenRow { kind: TokenKind::$kind, category: $cat, meaning: $meaning }, )* ]
    };
}

/// Every token kind with a fixed spelling, by category.
pub const TOKENS: &[TokenRow] = rows![
    KwObj, "declaration", "object archetype";
    KwClass, "declaration", "class archetype (Python-style class)";
    KwEnum, "declaration", "enumeration";
    KwNode, "declaration", "node archetype (graph vertex)";
    KwEdge, "declaration", "edge archetype; also `[edge ...]` to yield edges";
    KwWalker, "declaration", "walker archetype (graph visitor)";
    KwHas, "declaration", "field declaration";
    KwCan, "declaration", "event ability `can name with T entry`";
    KwDef, "declaration", "function or method";
    KwStatic, "modifier", "static field or method";
    KwOverride, "modifier", "overriding ability";
    KwImpl, "declaration", "body of a declared member given elsewhere";
    KwAbst, "modifier", "abstract ability";
    KwGlob, "declaration", "module-level global";
    KwImport, "module", "import a module or names";
    KwInclude, "module", "include a module's names";
    KwFrom, "module", "`import from m { ... }`, `raise e from c`";
    KwAs, "module", "alias; also the cast `x as T`";
    KwIf, "control", "conditional, comprehension filter, match guard";
    KwElif, "control", "else-if branch";
    KwElse, "control", "else branch (also `visit ... else { }`)";
    KwFor, "control", "for loop, comprehension";
    KwWhile, "control", "while loop; iter-for condition";
    KwForever, "control", "endless loop";
    KwMatch, "control", "match statement";
    KwTry, "control", "try block";
    KwExcept, "control", "exception handler";
    KwFinally, "control", "cleanup block";
    KwWith, "control", "entry blocks, event clauses, iter-for step";
    KwReturn, "control", "return from a function";
    KwYield, "control", "reserved (generators are not supported)";
    KwBreak, "control", "leave a loop";
    KwContinue, "control", "next loop iteration";
    KwRaise, "control", "raise an exception";
    KwDel, "control", "delete a name, item or node; disconnect `a del --> b`";
    KwAssert, "control", "assertion";
    KwSkip, "object-spatial", "stop the walker at this node";
    KwReport, "object-spatial", "add a value to the walker's reports";
    KwVisit, "object-spatial", "queue nodes for the walker";
    KwSpawn, "object-spatial", "start a walker on a node";
    KwEntry, "object-spatial", "entry event (`with entry`)";
    KwExit, "object-spatial", "exit event (`with exit`)";
    KwDisengage, "object-spatial", "stop the walker entirely";
    KwAsync, "modifier", "async function, walker or for";
    KwAwait, "expression", "await a value";
    KwAnd, "operator", "boolean and";
    KwOr, "operator", "boolean or";
    KwNot, "operator", "boolean not; `not in`";
    KwIn, "operator", "membership; for-in";
    KwIs, "operator", "identity; `is not`";
    KwLambda, "expression", "anonymous function `lambda (params) -> T { ... }`";
    KwTrue, "literal", "boolean true";
    KwFalse, "literal", "boolean false";
    KwNone, "literal", "the null value";
    KwSelf, "reference", "the current instance";
    KwSuper, "reference", "the base class";
    KwHere, "reference", "the walker's current node";
    KwRoot, "reference", "the caller's root node";
    KwVisitor, "reference", "the visiting walker (in node abilities)";
    KwInit, "reference", "constructor name `def init(...)`";
    KwPostinit, "reference", "post-constructor hook; `has x: T postinit;`";
    KwProps, "reference", "reserved reference";
    LParen, "delimiter", "group, call, parameters";
    RParen, "delimiter", "";
    LBracket, "delimiter", "list, index, edge reference";
    LBracketQ, "delimiter", "filter `[?:T, field > v]`";
    RBracket, "delimiter", "";
    LBrace, "delimiter", "block, dict, set, import list";
    RBrace, "delimiter", "";
    Comma, "delimiter", "separator";
    Semi, "delimiter", "statement end";
    Colon, "delimiter", "annotation, slice, access tag `:pub`, dict pair";
    Dot, "delimiter", "attribute access";
    Ellipsis, "literal", "`...`";
    Question, "delimiter", "reserved";
    QDot, "operator", "null-safe attribute access";
    At, "operator", "decorator; matrix multiplication";
    Assign, "assignment", "assignment, default value, keyword argument";
    Walrus, "assignment", "assignment expression";
    EqEq, "comparison", "equal";
    NotEq, "comparison", "not equal";
    Lt, "comparison", "less than";
    Gt, "comparison", "greater than";
    LtE, "comparison", "less or equal";
    GtE, "comparison", "greater or equal";
    Plus, "arithmetic", "add, unary plus";
    Minus, "arithmetic", "subtract, negate";
    Star, "arithmetic", "multiply; unpack `*xs`";
    Slash, "arithmetic", "divide";
    DoubleSlash, "arithmetic", "floor divide";
    Percent, "arithmetic", "modulo, `%` formatting";
    DoubleStar, "arithmetic", "power; `**kwargs`";
    Tilde, "bitwise", "invert";
    Amp, "bitwise", "and";
    Pipe, "bitwise", "or; type union `A | B`";
    Caret, "bitwise", "xor";
    LShift, "bitwise", "shift left";
    RShift, "bitwise", "shift right";
    PlusEq, "assignment", "augmented assignment";
    MinusEq, "assignment", "augmented assignment";
    StarEq, "assignment", "augmented assignment";
    SlashEq, "assignment", "augmented assignment";
    DoubleSlashEq, "assignment", "augmented assignment";
    PercentEq, "assignment", "augmented assignment";
    DoubleStarEq, "assignment", "augmented assignment";
    AtEq, "assignment", "augmented assignment";
    AmpEq, "assignment", "augmented assignment";
    PipeEq, "assignment", "augmented assignment";
    CaretEq, "assignment", "augmented assignment";
    LShiftEq, "assignment", "augmented assignment";
    RShiftEq, "assignment", "augmented assignment";
    Arrow, "delimiter", "return type; typed context block";
    PipeFwd, "pipe", "`a |> f` = `f(a)`";
    PipeBack, "pipe", "`f <| a` = `f(a)`";
    APipeFwd, "pipe", "atomic forward pipe";
    APipeBack, "pipe", "atomic backward pipe";
    ArrowR, "edge", "outgoing edges `-->`";
    ArrowL, "edge", "incoming edges `<--`";
    ArrowBi, "edge", "edges either way `<-->`";
    ArrowRP1, "edge", "typed outgoing edge opener `->:E:->`";
    ArrowRP2, "edge", "typed outgoing edge closer";
    ArrowLP1, "edge", "typed incoming edge opener `<-:E:<-`";
    ArrowLP2, "edge", "typed incoming edge closer";
    CArrowR, "connect", "connect `a ++> b`";
    CArrowL, "connect", "connect `a <++ b` (edge b to a)";
    CArrowBi, "connect", "connect both ways `a <++> b`";
    CArrowRP1, "connect", "typed connect opener `+>:E:+>`";
    CArrowRP2, "connect", "typed connect closer";
    CArrowLP1, "connect", "typed incoming connect opener `<+:E:<+`";
    CArrowLP2, "connect", "typed incoming connect closer";
];

/// The token kinds without a fixed spelling.
const OPEN_TOKENS: &[(&str, &str, &str)] = &[
    (
        "Name",
        "name",
        "identifier `[A-Za-z_][A-Za-z0-9_]*` (Unicode letters allowed); `` `kw `` escapes a keyword; soft keywords `case`, `to`, `by`, `test`, `sv`, `global`, `nonlocal`, `pub`, `priv`, `protect` are names",
    ),
    ("Int", "literal", "`123`, `1_000`, `0x1f`, `0o17`, `0b101`"),
    ("Float", "literal", "`1.5`, `1e-3`, `2.`, `.5`"),
    (
        "Str",
        "literal",
        "`\"...\"`, `'...'`, triple-quoted, prefixes `r`, `f`, `b`, `u` (and `rf`, `rb`); adjacent strings concatenate",
    ),
    ("Eof", "end", "end of input"),
];

/// The token table as Markdown.
pub fn grammar_tokens() -> String {
    let mut out = String::from(
        "# svc tokens\n\nGenerated from the lexer's token kinds. Comments are `# ...` to the \
         end of the line and `#* ... *#` blocks; whitespace and newlines only separate tokens \
         (a `\\` before a newline is allowed).\n\n| Token | Spelling | Category | Meaning |\n|---|---|---|---|\n",
    );
    for (name, cat, meaning) in OPEN_TOKENS {
        out.push_str(&format!("| {name} | | {cat} | {meaning} |\n"));
    }
    for row in TOKENS {
        let spelling = row.kind.text().unwrap_or("");
        let shown = spelling.replace('|', "\\|");
        out.push_str(&format!(
            "| {:?} | `{}` | {} | {} |\n",
            row.kind,
            shown,
            row.category,
            row.meaning.replace('|', "\\|")
        ));
    }
    out.push_str("\n## Hard keywords\n\n");
    let kws: Vec<String> = TOKENS
        .iter()
        .filter(|r| r.kind.is_keyword())
        .filter_map(|r| r.kind.text())
        .filter(|t| keyword(t).is_some())
        .map(|t| format!("`{t}`"))
        .collect();
    out.push_str(&kws.join(", "));
    out.push_str(
        "\n\nA hard keyword cannot be a variable name; it can be an attribute or keyword-argument \
         name (`x.entry`, `f(node=1)`), or escaped with a backtick.\n",
    );
    out
}

/// The EBNF of the language as our parser accepts it.
pub fn grammar_spec() -> String {
    let mut out = String::from(GRAMMAR);
    out.push_str("\n(* Operator precedence, loosest first (parser/expr.rs binding powers):\n");
    for (level, ops) in PRECEDENCE.iter().enumerate() {
        out.push_str(&format!("   {:>2}. {ops}\n", level + 1));
    }
    out.push_str("   Unary `-x` binds tighter than `**`: `-2 ** 2 == 4`. *)\n");
    out
}

/// Binary operator levels, loosest first.
const PRECEDENCE: &[&str] = &[
    "lambda, ternary `a if c else b`",
    "`|>` (forward pipe)",
    "`<|` (backward pipe)",
    "`or`",
    "`and`",
    "`not` (prefix)",
    "comparisons `== != < > <= >= in not in is is not` (chained)",
    "`as` (cast)",
    "`|`",
    "`^`",
    "`&`",
    "`<< >>`",
    "`+ -`",
    "`* / // % @`",
    "unary `- + ~`",
    "`**` (right-associative)",
    "connect `++> <++ <++> +>:E:+> <+:E:<+`, disconnect `del -->`",
    "`:>` (atomic forward pipe)",
    "`<:` (atomic backward pipe)",
    "`spawn`",
    "postfix: `.name`, `?.name`, call `( )`, index `[ ]`, filter `[? ]`, `(= a=1 )`",
];

const GRAMMAR: &str = r#"(* svc grammar (Jac syntax), as accepted by svc's parser.
   Notation: ISO EBNF — [ x ] optional, { x } repeated, ( a | b ) choice, "x" a token.
   Whitespace and newlines are insignificant; statements end with ";" or a block. *)

module        = [ docstring ] { item } ;
docstring     = STRING { STRING } ;
item          = [ docstring ] { decorator } declaration
              | import | global | entry_block | test_block ;
decorator     = "@" expression ;
declaration   = archetype | enum | ability | impl ;

(* --- modules --- *)
import        = [ "sv" ] ( "import" | "include" ) import_body ";" ;
import_body   = "from" mod_path "{" import_name { "," import_name } [ "," ] "}"
              | mod_path [ "as" NAME ] { "," mod_path [ "as" NAME ] } ;
import_name   = NAME [ "as" NAME ] ;
mod_path      = { "." } NAME { "." NAME } ;
global        = "glob" [ access ] glob_var { "," glob_var } ";" ;
glob_var      = NAME [ ":" type ] [ "=" expression ] ;
entry_block   = "with" ( "entry" | "exit" ) [ ":" NAME ] block ;
test_block    = "test" [ NAME | STRING ] block ;
access        = ":" ( "pub" | "priv" | "protect" ) ;

(* --- archetypes --- *)
archetype     = [ "async" ] ( "obj" | "node" | "edge" | "walker" | "class" ) [ access ] NAME
                [ "[" type_params "]" ] [ "(" [ expression { "," expression } ] ")" ]
                [ ":" type "-->" type ]          (* typed edge endpoints, edges only *)
                ( "{" { member } "}" | ";" ) ;
member        = [ docstring ] { decorator }
                ( has | ability | archetype | enum | impl | entry_block ) ;
has           = [ "static" ] "has" [ access ] has_var { "," has_var } ";" ;
has_var       = NAME ":" type [ "=" expression | "postinit" ] ;
enum          = "enum" [ access ] NAME [ ":" type | "(" type { "," type } ")" ]
                ( "{" [ enum_member { "," enum_member } [ "," ] ] { member } "}" | ";" ) ;
enum_member   = NAME [ "=" expression ] ;

(* --- abilities --- *)
ability       = { "override" | "static" | "async" }
                ( "def" [ access ] ( NAME | "init" | "postinit" ) [ signature ]
                | "can" [ access ] [ NAME ] event_clause )
                ( block | ";" | "abst" ";" ) ;
signature     = [ "(" [ param { "," param } [ "," ] ] ")" ] [ "->" type ] ;
param         = NAME [ ":" type ] [ "=" expression ]
              | "*" NAME [ ":" type ] | "**" NAME [ ":" type ]
              | "*" | "/" ;
event_clause  = "with" [ type ] ( "entry" | "exit" ) ;
impl          = "impl" NAME { "." NAME }
                ( signature | event_clause | "(" [ expression { "," expression } ] ")" )
                block ;

(* --- statements --- *)
block         = "{" { statement } "}" ;
statement     = ";"
              | expression [ ";" ]            (* ";" may be left out before "}" *)
              | target { "=" target } "=" expression ";"
              | target ":" type [ "=" expression ] ";"
              | target aug_op expression ";"
              | if | while | for | try | match
              | "forever" block
              | "return" [ expression ] ";"
              | "raise" [ expression [ "from" expression ] ] ";"
              | "assert" expression [ "," expression ] ";"
              | "del" expression ";"
              | ( "break" | "continue" | "skip" | "disengage" ) ";"
              | "visit" [ ":" expression ":" ] expression ( ";" | "else" block )
              | "report" expression ";"
              | "yield" [ expression ] ";"      (* parsed, rejected: no generators *)
              | "->" type block                 (* typed context block *)
              | [ docstring ] { decorator } declaration
              | import | global ;
aug_op        = "+=" | "-=" | "*=" | "/=" | "//=" | "%=" | "**=" | "@=" | "&=" | "|="
              | "^=" | "<<=" | ">>=" ;
if            = "if" expression block { "elif" expression block } [ "else" block ] ;
while         = "while" expression block [ "else" block ] ;
for           = [ "async" ] "for" target "in" expression block [ "else" block ]
              | "for" target "=" expression ( "while" | "to" ) expression
                ( "with" | "by" ) statement_step block [ "else" block ] ;
statement_step = target ( "=" | aug_op ) expression | expression ;
try           = "try" block { "except" [ expression [ "as" NAME ] ] block }
                [ "else" block ] [ "finally" block ] ;
match         = "match" expression "{" { "case" pattern [ "if" expression ] ":" { statement } } "}" ;
pattern       = expression ;
target        = expression ;                    (* a name, attribute, index, tuple or list *)

(* --- expressions --- *)
expression    = lambda | walrus | ternary ;
lambda        = "lambda" [ "(" [ param { "," param } ] ")" ] [ "->" type ] block ;
walrus        = NAME ":=" expression ;
ternary       = binary [ "if" binary "else" expression ] ;
binary        = unary { binary_op unary }      (* precedence table below *)
              | binary comparison { comparison }
              | binary ( connect_op | "del" edge_op ) binary
              | binary "spawn" binary
              | binary "as" type ;
binary_op     = "or" | "and" | "|" | "^" | "&" | "<<" | ">>" | "+" | "-" | "*" | "/"
              | "//" | "%" | "@" | "**" | "|>" | "<|" | ":>" | "<:" ;
comparison    = ( "==" | "!=" | "<" | ">" | "<=" | ">=" | "in" | "not" "in"
                | "is" | "is" "not" ) binary ;
unary         = ( "not" | "-" | "+" | "~" ) unary
              | "*" unary | "**" unary | "await" unary | ":>" postfix
              | postfix ;
postfix       = atom { "." name_or_kw | "?." name_or_kw | "(" [ arguments ] ")"
                     | "[" subscript "]" | "?" "[" subscript "]" | filter
                     | "(" "=" NAME "=" expression { "," NAME "=" expression } ")" } ;
arguments     = argument { "," argument } [ "," ] ;
argument      = expression | name_or_kw "=" expression | "*" expression | "**" expression
              | expression comp_for { comp_for } ;
subscript     = expression | [ expression ] ":" [ expression ] [ ":" [ expression ] ]
              | subscript { "," subscript } ;
atom          = NAME | INT | FLOAT | STRING { STRING } | "True" | "False" | "None" | "..."
              | "self" | "super" | "here" | "root" | "visitor" | "init" | "postinit" | "props"
              | "(" [ expression [ "," [ expression { "," expression } ] ] ] ")"
              | "(" expression comp_for { comp_for } ")"
              | "[" [ expression { "," expression } [ "," ] ] "]"
              | "[" expression comp_for { comp_for } "]"
              | "{" [ dict_item { "," dict_item } [ "," ] ] "}"
              | "{" expression { "," expression } [ "," ] "}"
              | "{" ( expression ":" expression | expression ) comp_for { comp_for } "}"
              | edge_ref ;
dict_item     = expression ":" expression | "**" expression ;
comp_for      = [ "async" ] "for" target "in" binary { "if" binary } ;
name_or_kw    = NAME | keyword ;

(* --- object-spatial --- *)
edge_ref      = "[" [ "edge" ] [ postfix ] hop { hop } "]" ;
hop           = edge_op [ filter ] [ postfix ] ;
edge_op       = "-->" | "<--" | "<-->"
              | "->:" [ type ] [ ":" field_cond { "," field_cond } ] ":->"
              | "<-:" [ type ] [ ":" field_cond { "," field_cond } ] ":<-" ;
filter        = "[?" [ ":" type ] [ [ "," ] field_cond { "," field_cond } ] "]" ;
field_cond    = NAME ( "==" | "!=" | "<" | ">" | "<=" | ">=" | "in" | "not" "in"
                     | "is" | "is" "not" ) expression ;
connect_op    = "++>" | "<++" | "<++>"
              | "+>:" [ expression ] [ ":" NAME "=" expression { "," NAME "=" expression } ] ":+>"
              | "<+:" [ expression ] [ ":" NAME "=" expression { "," NAME "=" expression } ] ":<+" ;

(* --- types --- *)
type          = binary ;                        (* `int`, `list[str]`, `A | B`, `mod.T`, `None` *)
type_params   = NAME { "," NAME } ;              (* parsed and ignored *)

(* Strings: f"...{expr!r:spec}..." fields are parsed as expressions; `{x=}` prints the
   text and the value. Lexical details are in svc://grammar/tokens. *)
"#;
