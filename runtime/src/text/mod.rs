//! Text helpers for streams (SPEC S3, S4, S5): redaction that is correct for
//! every chunking, inspection of the text so far, and a buffering guard.

mod guard;
mod needles;
mod pattern;
mod redactor;
mod scan;
#[cfg(test)]
mod tests;

pub use guard::{Verdict, guard_text, inspect_text_deltas};
pub use pattern::{Pattern, PatternError, matches_any, patterns, redact};
pub use redactor::redact_text_deltas;
