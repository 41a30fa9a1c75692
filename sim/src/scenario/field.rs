//! Where a check of a parsed scenario failed (`timeline[0].at`), and the
//! error that says so.

use std::fmt;

/// Where in a spec a check failed: `timeline[0]`, `agent.tools[2]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A field of the format, by its name in the file (`timeline`, `at`).
    Key(&'static str),
    /// A key the file chose: a `[docs]` keyword, a model name.
    Name(String),
    /// A position in an array of the file, from 0.
    Index(usize),
}

impl FieldPath {
    pub(super) fn at(segments: &[Segment]) -> FieldPath {
        FieldPath(segments.to_vec())
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => write!(f, "{k}")?,
                Segment::Key(k) => write!(f, ".{k}")?,
                // A configuration's field, after an entry's index: as a key.
                Segment::Name(k)
                    if i > 0 && matches!(self.0[i - 1], Segment::Index(_)) && plain(k) =>
                {
                    write!(f, ".{k}")?
                }
                Segment::Name(k) => write!(f, "[{k:?}]")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Whether `k` reads as a key (letters, digits, `_`, not first a digit).
fn plain(k: &str) -> bool {
    k.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A spec that parsed but does not make sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if at.0.is_empty() { String::new() } else { format!("{at}: ") })]
pub struct CheckError {
    /// Where (empty: the scenario as a whole).
    pub at: FieldPath,
    /// What is wrong, in words.
    pub message: String,
}

pub(super) fn fail<T>(at: &[Segment], message: impl Into<String>) -> Result<T, CheckError> {
    Err(CheckError {
        at: FieldPath::at(at),
        message: message.into(),
    })
}
