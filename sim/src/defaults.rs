//! Predicates that keep default values out of written scenario files, so a
//! file the fuzzer writes reads like one a person wrote.

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
