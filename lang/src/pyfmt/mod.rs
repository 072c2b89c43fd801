//! Pure functions reproducing CPython 3.12's text conversions byte for byte: `repr` of float
//! and str, `format()` specs, the `%` operator, `round`, `int()`/`float()` parsing, float
//! floor division and modulo, `str` methods and slice indexing.
//!
//! Nothing here knows the interpreter's value types. Fallible functions return CPython's
//! exception message as `Err(String)`; [`error_kind`] tells which exception class CPython
//! raises with that message.

mod bytesmethods;
mod float;
mod int;
mod printf;
mod slice;
mod spec;
mod strmethods;
mod tables;
pub mod unicode;

#[cfg(test)]
mod tests;

pub use bytesmethods::{
    bytes_capitalize, bytes_fromhex, bytes_hex, bytes_is_case, bytes_istitle, bytes_repr,
    bytes_rsplit_ws, bytes_split_ws, bytes_splitlines, bytes_strip, bytes_swapcase, bytes_title,
    from_latin1, is_bytes_space, latin1, push_bytearray_repr, push_bytes_repr,
};
pub use float::{
    float_divmod, float_floordiv, float_is_integer, float_mod, float_repr, float_to_i64,
    float_to_int, float_to_int_checked, int_float_cmp, int_to_float, int_true_div, parse_float,
    parse_float_ex, push_float_repr, round_float, round_half_even, round_to_int,
};
pub use int::{INT_MAX_STR_DIGITS, int_to_str_checked, parse_int, parse_int_ex};
pub use printf::{
    PrintfArg, PrintfArgs, PrintfLookup, printf_bytes_bounded, printf_format, printf_format_args,
    printf_format_bounded,
};
pub use slice::{normalize_index, slice_indices, slice_range};
pub use spec::{
    FormatSpec, MAX_SPEC_NUMBER, format_float, format_float_spec, format_i64, format_i64_spec,
    format_int, format_int_spec, format_str, format_str_spec, parse_format_spec,
    parse_format_spec_for,
};
pub use strmethods::{
    MAX_PAD, ascii_escape, char_len, push_str_repr, py_capitalize, py_center, py_count,
    py_count_range, py_endswith, py_expandtabs, py_find, py_isalnum, py_isalpha, py_isascii,
    py_isdecimal, py_isdigit, py_islower, py_isnumeric, py_isprintable, py_isspace, py_istitle,
    py_isupper, py_join, py_ljust, py_lower, py_lstrip, py_partition, py_removeprefix,
    py_removesuffix, py_replace, py_rfind, py_rjust, py_rpartition, py_rsplit, py_rstrip, py_split,
    py_splitlines, py_startswith, py_strip, py_swapcase, py_title, py_upper, py_zfill, str_repr,
};

/// The CPython exception class raised with a message produced by this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyErrorKind {
    ValueError,
    TypeError,
    OverflowError,
    /// The result would exceed a size bound (see [`too_large`]); svc's own bound, where
    /// CPython would try to allocate.
    MemoryError,
}

/// The message of a string result refused for its size: `bytes` (a lower bound of what
/// the operation would build) is over `max`. [`error_kind`] classifies it as MemoryError.
pub fn too_large(bytes: usize, max: usize) -> String {
    format!("string would have {bytes} bytes (limit {max})")
}

/// Classifies an error message returned by this module into CPython's exception class.
pub fn error_kind(msg: &str) -> PyErrorKind {
    const TYPE_ERRORS: &[&str] = &[
        "not enough arguments for format string",
        "not all arguments converted during string formatting",
        "%c requires int or char",
        "%c requires an integer in range(256) or a single byte",
        "%b requires a bytes-like object",
        "* wants int",
        "format requires a mapping",
        "must be real number, not ",
    ];
    const OVERFLOW_ERRORS: &[&str] = &[
        "%c arg not in range(0x110000)",
        "%c arg not in range(256)",
        "int too large to convert to float",
        "cannot convert float infinity to integer",
        "Python int too large to convert to C",
        "rounded value too large to represent",
    ];
    if msg.starts_with("string would have ") {
        return PyErrorKind::MemoryError;
    }
    if TYPE_ERRORS.iter().any(|p| msg.starts_with(p))
        || (msg.starts_with('%')
            && (msg.contains(" format: a real number is required, not ")
                || msg.contains(" format: an integer is required, not ")))
    {
        PyErrorKind::TypeError
    } else if OVERFLOW_ERRORS.iter().any(|p| msg.starts_with(p)) {
        PyErrorKind::OverflowError
    } else {
        PyErrorKind::ValueError
    }
}
