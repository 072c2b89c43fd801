//! Lexer unit tests: tokens, comments, numbers, strings and f-string pieces.

use super::*;
use TokenKind as T;

fn kinds(src: &str) -> Vec<TokenKind> {
    let l = lex(src);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    l.tokens
        .iter()
        .map(|t| t.kind)
        .filter(|k| *k != T::Eof)
        .collect()
}

fn texts(src: &str) -> Vec<&str> {
    lex(src)
        .tokens
        .iter()
        .filter(|t| t.kind != T::Eof)
        .map(|t| &src[t.span.start as usize..t.span.end as usize])
        .collect()
}

#[test]
fn edge_and_connect_operators() {
    assert_eq!(
        kinds("--> <-- <--> ->: :-> <-: :<- ++> <++ <++> +>: :+> <+: :<+"),
        vec![
            T::ArrowR,
            T::ArrowL,
            T::ArrowBi,
            T::ArrowRP1,
            T::ArrowRP2,
            T::ArrowLP1,
            T::ArrowLP2,
            T::CArrowR,
            T::CArrowL,
            T::CArrowBi,
            T::CArrowRP1,
            T::CArrowRP2,
            T::CArrowLP1,
            T::CArrowLP2
        ]
    );
    assert_eq!(texts("[->:E:->]"), vec!["[", "->:", "E", ":->", "]"]);
    assert_eq!(
        texts("[->::w>0:->]"),
        vec!["[", "->:", ":", "w", ">", "0", ":->", "]"]
    );
    assert_eq!(texts("a<-1"), vec!["a", "<", "-", "1"]);
    assert_eq!(texts("a[::-1]"), vec!["a", "[", ":", ":", "-", "1", "]"]);
    assert_eq!(texts("{\"a\":+1}"), vec!["{", "\"a\"", ":", "+", "1", "}"]);
}

#[test]
fn punctuation() {
    assert_eq!(
        kinds("[? := |> <| :> <: ** // ?. ... @ -> != == <= >= << >> ~"),
        vec![
            T::LBracketQ,
            T::Walrus,
            T::PipeFwd,
            T::PipeBack,
            T::APipeFwd,
            T::APipeBack,
            T::DoubleStar,
            T::DoubleSlash,
            T::QDot,
            T::Ellipsis,
            T::At,
            T::Arrow,
            T::NotEq,
            T::EqEq,
            T::LtE,
            T::GtE,
            T::LShift,
            T::RShift,
            T::Tilde
        ]
    );
    assert_eq!(
        kinds("+= -= *= /= //= %= **= @= &= |= ^= <<= >>="),
        vec![
            T::PlusEq,
            T::MinusEq,
            T::StarEq,
            T::SlashEq,
            T::DoubleSlashEq,
            T::PercentEq,
            T::DoubleStarEq,
            T::AtEq,
            T::AmpEq,
            T::PipeEq,
            T::CaretEq,
            T::LShiftEq,
            T::RShiftEq
        ]
    );
}

#[test]
fn keywords_names_and_specials() {
    assert_eq!(
        kinds("node walker edge obj can def has self here root visitor True None to by int list"),
        vec![
            T::KwNode,
            T::KwWalker,
            T::KwEdge,
            T::KwObj,
            T::KwCan,
            T::KwDef,
            T::KwHas,
            T::KwSelf,
            T::KwHere,
            T::KwRoot,
            T::KwVisitor,
            T::KwTrue,
            T::KwNone,
            T::Name,
            T::Name,
            T::Name,
            T::Name
        ]
    );
    assert_eq!(kinds("`list café"), vec![T::Name, T::Name]);
    assert_eq!(texts("x_1 _y"), vec!["x_1", "_y"]);
}

#[test]
fn comments() {
    assert_eq!(texts("a # line\nb #* block\n *# c"), vec!["a", "b", "c"]);
    assert_eq!(texts("a #**# b"), vec!["a", "b"]);
    let l = lex("a #* open");
    assert_eq!(l.diagnostics.len(), 1);
    assert_eq!(l.diagnostics[0].code, "E0101");
}

#[test]
fn numbers() {
    assert_eq!(
        kinds("1 1.5 1e-3 .5 2. 0xFF 0b1 0o7 1_000 1E+9"),
        vec![
            T::Int,
            T::Float,
            T::Float,
            T::Float,
            T::Float,
            T::Int,
            T::Int,
            T::Int,
            T::Int,
            T::Float
        ]
    );
    assert_eq!(texts("x.0"), vec!["x", ".0"]);
    assert_eq!(texts("1.real"), vec!["1", ".", "real"]);
    assert_eq!(texts("a[1:]"), vec!["a", "[", "1", ":", "]"]);
}

#[test]
fn string_literals() {
    let l = lex(r#"'a' "b" """c""" r"\d" f"{x}" rf'{y}' b"z" '''q'''"#);
    assert!(l.diagnostics.is_empty());
    assert_eq!(l.tokens.len(), 9);
    assert_eq!(l.lits.len(), 8);
    assert!(matches!(&l.lits[3], StrLit::Plain { value, .. } if value == "\\d"));
    assert!(matches!(&l.lits[4], StrLit::Format(p) if p.len() == 1));
    assert!(matches!(&l.lits[6], StrLit::Plain { bytes: true, .. }));
    let l = lex("\"unterminated\nx");
    assert_eq!(l.diagnostics.len(), 1);
    assert_eq!(texts("\"a\" x"), vec!["\"a\"", "x"]);
}

#[test]
fn fstring_pieces() {
    let src = r#"f"a{b!r:>{w}}c{{d}}{e=}""#;
    let l = lex(src);
    assert!(l.diagnostics.is_empty(), "{:#?}", l.diagnostics);
    let Some(StrLit::Format(p)) = l.lits.first() else {
        panic!()
    };
    assert_eq!(p.len(), 4);
    assert_eq!(p[0], FPiece::Lit("a".into()));
    let FPiece::Field {
        expr,
        conversion,
        spec,
        debug,
        ..
    } = &p[1]
    else {
        panic!()
    };
    assert_eq!(&src[expr.start as usize..expr.end as usize], "b");
    assert_eq!(*conversion, Some('r'));
    assert_eq!(spec.as_ref().map(Vec::len), Some(2));
    assert!(debug.is_none());
    assert_eq!(p[2], FPiece::Lit("c{d}".into()));
    let FPiece::Field {
        debug, conversion, ..
    } = &p[3]
    else {
        panic!()
    };
    assert_eq!(debug.as_deref(), Some("e="));
    assert_eq!(*conversion, Some('r'));
    // Nested quotes of either kind, nested f-strings, dicts in fields.
    for ok in [
        r#"f"{d["k"]}""#,
        r#"f'{d["k"]}'"#,
        r#"f"{f'{x}'}""#,
        r#"f"{ {1: 2}[1] }""#,
        "f\"\"\"{x}\n\"\"\"",
    ] {
        let l = lex(ok);
        assert!(l.diagnostics.is_empty(), "{ok}: {:#?}", l.diagnostics);
        assert_eq!(l.tokens.len(), 2, "{ok}");
    }
}

#[test]
fn bad_input_never_panics_and_is_reported() {
    for src in [
        "$", "!", "\u{0}", "\"", "f\"{", "f\"{x", "'\\", "`", "#*", "f'{x!", "f'{x:{'",
    ] {
        let l = lex(src);
        assert!(!l.diagnostics.is_empty(), "{src:?}");
        assert_eq!(l.tokens.last().map(|t| t.kind), Some(T::Eof));
    }
}

#[test]
fn lex_range_uses_file_offsets() {
    let src = "xx foo + 1 yy";
    let l = lex_range(src, 3, 10, 0);
    let spans: Vec<_> = l
        .tokens
        .iter()
        .map(|t| (t.span.start, t.span.end))
        .collect();
    assert_eq!(spans, vec![(3, 6), (7, 8), (9, 10), (10, 10)]);
}
