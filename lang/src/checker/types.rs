//! E2005: a literal that certainly does not match its declared type. Only the builtin
//! types `int float str bool list dict` (bare, subscripted, in `|` unions, `Optional[..]`)
//! are compared, and only against literal values; anything else is left alone.

use super::Cx;
use crate::ast::{BinOp, Expr, ExprKind, UnaryOp};
use crate::diag::Code;

const INT: u16 = 1;
const FLOAT: u16 = 2;
const STR: u16 = 4;
const BOOL: u16 = 8;
const LIST: u16 = 16;
const DICT: u16 = 32;
const NONE: u16 = 64;
const TUPLE: u16 = 128;
const SET: u16 = 256;

/// The literal kinds a declared type accepts; `None` when the type is not understood.
fn accepted(ty: &Expr) -> Option<u16> {
    match &ty.kind {
        ExprKind::Name(n) => match &**n {
            "int" => Some(INT | BOOL),
            "float" => Some(INT | FLOAT | BOOL),
            "str" => Some(STR),
            "bool" => Some(BOOL),
            "list" => Some(LIST),
            "dict" => Some(DICT),
            _ => None,
        },
        ExprKind::None => Some(NONE),
        ExprKind::Index { obj, index, .. } => match &obj.kind {
            ExprKind::Name(n) if &**n == "list" => Some(LIST),
            ExprKind::Name(n) if &**n == "dict" => Some(DICT),
            ExprKind::Name(n) if &**n == "Optional" => accepted(index).map(|k| k | NONE),
            _ => None,
        },
        ExprKind::Binary {
            op: BinOp::BitOr,
            left,
            right,
        } => Some(accepted(left)? | accepted(right)?),
        _ => None,
    }
}

/// The kind of a literal value and its name, if `v` is a literal.
fn literal(v: &Expr) -> Option<(u16, &'static str)> {
    Some(match &v.kind {
        ExprKind::Int(_) | ExprKind::BigInt(_) => (INT, "int"),
        ExprKind::Float(_) => (FLOAT, "float"),
        ExprKind::Str(_) | ExprKind::FString(_) => (STR, "str"),
        ExprKind::Bool(_) => (BOOL, "bool"),
        ExprKind::None => (NONE, "None"),
        ExprKind::List(_) | ExprKind::ListComp { .. } => (LIST, "list"),
        ExprKind::Dict(_) | ExprKind::DictComp { .. } => (DICT, "dict"),
        ExprKind::Tuple(_) => (TUPLE, "tuple"),
        ExprKind::Set(_) | ExprKind::SetComp { .. } => (SET, "set"),
        ExprKind::Unary {
            op: UnaryOp::Neg | UnaryOp::Pos,
            operand,
        } => match &operand.kind {
            ExprKind::Int(_) | ExprKind::BigInt(_) => (INT, "int"),
            ExprKind::Float(_) => (FLOAT, "float"),
            _ => return None,
        },
        _ => return None,
    })
}

/// The type as written, for messages.
fn show(ty: &Expr) -> String {
    match &ty.kind {
        ExprKind::Name(n) => n.to_string(),
        ExprKind::None => "None".into(),
        ExprKind::Index { obj, index, .. } => {
            let inner = match &index.kind {
                ExprKind::Tuple(xs) => xs.iter().map(show).collect::<Vec<_>>().join(", "),
                _ => show(index),
            };
            format!("{}[{inner}]", show(obj))
        }
        ExprKind::Binary {
            op: BinOp::BitOr,
            left,
            right,
        } => {
            format!("{} | {}", show(left), show(right))
        }
        ExprKind::Attr { obj, name, .. } => format!("{}.{}", show(obj), name.name),
        _ => "_".into(),
    }
}

impl Cx<'_, '_> {
    /// E2005 when literal `value` cannot have declared type `ty`.
    pub(super) fn type_check(&mut self, ty: &Expr, value: &Expr) {
        if let Some((expected, found)) = mismatch(ty, value) {
            self.error(
                Code::E2005,
                format!("mismatched types: expected `{expected}`, found `{found}`"),
                value.span,
            );
        }
    }

    /// E2005 when literal argument `value` cannot have the type declared for
    /// `param` of `callee` (a parameter or a constructor field).
    pub(super) fn type_check_arg(&mut self, ty: &Expr, value: &Expr, param: &str, callee: &str) {
        if let Some((expected, found)) = mismatch(ty, value) {
            self.error(
                Code::E2005,
                format!(
                    "mismatched types: `{param}` of `{callee}` expects `{expected}`, found `{found}`"
                ),
                value.span,
            );
        }
    }
}

/// The declared type as written and the literal's kind, when `value` is a literal that
/// `ty` certainly rejects.
fn mismatch(ty: &Expr, value: &Expr) -> Option<(String, &'static str)> {
    let (ok, (kind, found)) = (accepted(ty)?, literal(value)?);
    (ok & kind == 0).then(|| (show(ty), found))
}
