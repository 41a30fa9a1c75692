//! Default values of scenario fields, and predicates that keep them out of
//! written scenario files, so a file the fuzzer writes reads like one a
//! person wrote.

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The client a timeline entry acts for when it names none.
pub(crate) fn default_client() -> String {
    "alice".into()
}

pub(crate) fn is_default_client(s: &str) -> bool {
    s == default_client()
}

/// The thread a timeline entry or a fault names when it names none.
pub(crate) fn default_thread() -> String {
    "main".into()
}

pub(crate) fn is_default_thread(s: &str) -> bool {
    s == default_thread()
}

/// The first of something counted from 1.
pub(crate) fn first() -> usize {
    1
}

pub(crate) fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}
