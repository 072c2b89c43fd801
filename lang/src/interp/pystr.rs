//! `PyStr`, the payload of `Value::Str`: an immutable-looking string that can grow in
//! place when nothing else holds it.
//!
//! Most strings are shared, immutable text (`Rc<str>`: literals from the tree, results of
//! methods and formatting), exactly as before. `s += t` on a variable turns the string into
//! a growable buffer (`Rc<String>`) and, on later appends, pushes onto it in place when the
//! variable holds the only reference (CPython resizes a uniquely referenced string the same
//! way), so building a string one piece at a time is linear instead of quadratic. Any other
//! holder (a list item, another variable, a dict key) sees an unchanged value: a shared
//! buffer is copied before it grows.
//!
//! Everything else sees a `&str` (`Deref`): hashing, equality, ordering and display are the
//! `str` ones, so a buffer and a shared string with the same text are the same dict key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::rc::Rc;

#[derive(Clone)]
pub struct PyStr(Repr);

#[derive(Clone)]
enum Repr {
    Shared(Rc<str>),
    Buf(Rc<String>),
}

impl PyStr {
    /// Append `tail`, in place when this is the only reference to a buffer; otherwise
    /// the text is copied into a new buffer (with room to grow) that this value owns.
    pub fn push_str(&mut self, tail: &str) {
        if let Repr::Buf(b) = &mut self.0
            && let Some(s) = Rc::get_mut(b)
        {
            s.push_str(tail);
            return;
        }
        let head: &str = self;
        let mut s = String::with_capacity((head.len() + tail.len()).max(2 * head.len()));
        s.push_str(head);
        s.push_str(tail);
        self.0 = Repr::Buf(Rc::new(s));
    }

    /// Same storage (not only the same text): a fast path before comparing bytes.
    pub fn ptr_eq(a: &PyStr, b: &PyStr) -> bool {
        a.len() == b.len() && std::ptr::eq(a.as_ptr(), b.as_ptr())
    }

    /// The text as a shared `Rc<str>` (a copy when this is a growable buffer).
    pub fn to_rc(&self) -> Rc<str> {
        match &self.0 {
            Repr::Shared(s) => s.clone(),
            Repr::Buf(b) => Rc::from(b.as_str()),
        }
    }
}

impl Deref for PyStr {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        match &self.0 {
            Repr::Shared(s) => s,
            Repr::Buf(b) => b.as_str(),
        }
    }
}

impl AsRef<str> for PyStr {
    fn as_ref(&self) -> &str {
        self
    }
}

impl Borrow<str> for PyStr {
    fn borrow(&self) -> &str {
        self
    }
}

impl From<Rc<str>> for PyStr {
    fn from(s: Rc<str>) -> PyStr {
        PyStr(Repr::Shared(s))
    }
}

impl From<&Rc<str>> for PyStr {
    fn from(s: &Rc<str>) -> PyStr {
        PyStr(Repr::Shared(s.clone()))
    }
}

impl From<&str> for PyStr {
    fn from(s: &str) -> PyStr {
        PyStr(Repr::Shared(Rc::from(s)))
    }
}

impl From<String> for PyStr {
    fn from(s: String) -> PyStr {
        PyStr(Repr::Shared(Rc::from(s)))
    }
}

impl From<&String> for PyStr {
    fn from(s: &String) -> PyStr {
        PyStr(Repr::Shared(Rc::from(s.as_str())))
    }
}

impl From<PyStr> for Rc<str> {
    fn from(s: PyStr) -> Rc<str> {
        match s.0 {
            Repr::Shared(s) => s,
            Repr::Buf(b) => Rc::from(b.as_str()),
        }
    }
}

impl PartialEq for PyStr {
    #[inline]
    fn eq(&self, other: &PyStr) -> bool {
        **self == **other
    }
}

impl Eq for PyStr {}

impl PartialEq<str> for PyStr {
    fn eq(&self, other: &str) -> bool {
        &**self == other
    }
}

impl PartialEq<&str> for PyStr {
    fn eq(&self, other: &&str) -> bool {
        &**self == *other
    }
}

impl PartialOrd for PyStr {
    fn partial_cmp(&self, other: &PyStr) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PyStr {
    fn cmp(&self, other: &PyStr) -> std::cmp::Ordering {
        (**self).cmp(&**other)
    }
}

impl Hash for PyStr {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl fmt::Display for PyStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

impl fmt::Debug for PyStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn h(s: &PyStr) -> u64 {
        let mut st = DefaultHasher::new();
        s.hash(&mut st);
        st.finish()
    }

    #[test]
    fn append_in_place_only_when_unique() {
        let mut a = PyStr::from("ab");
        a.push_str("c");
        let p = a.as_ptr();
        a.push_str("d");
        assert_eq!(&*a, "abcd");
        assert_eq!(a.as_ptr(), p, "a unique buffer grows in place");
        let b = a.clone();
        a.push_str("e");
        assert_eq!(&*a, "abcde");
        assert_eq!(&*b, "abcd", "another holder keeps its value");
    }

    #[test]
    fn buffer_and_shared_agree() {
        let mut a = PyStr::from("");
        a.push_str("key");
        let b = PyStr::from("key");
        assert!(a == b);
        assert_eq!(h(&a), h(&b));
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Equal);
        assert!(!PyStr::ptr_eq(&a, &b));
        assert_eq!(&*Rc::<str>::from(a), "key");
    }
}
