//! Stream stages shared by canonical hooks and watchers' live transforms:
//! redaction with patterns parsed once, when the scenario loads, and an
//! upper-casing stage.

use pai_runtime::{
    StreamPart,
    stream::{Emit, StreamTransform},
    text::{Pattern, PatternError, redact_text_deltas},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A redaction pattern as a scenario writes it (`sk-[A-Za-z0-9_-]+`),
/// parsed when the scenario is read, so a bad one is a load error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "String", into = "String")]
#[schemars(transform = crate::schema::pattern::redact_pattern)]
pub struct RedactPattern(Pattern);

impl RedactPattern {
    /// The parsed pattern.
    pub fn pattern(&self) -> &Pattern {
        &self.0
    }
}

impl TryFrom<String> for RedactPattern {
    type Error = PatternError;

    fn try_from(source: String) -> Result<Self, PatternError> {
        Pattern::parse(&source).map(RedactPattern)
    }
}

impl From<RedactPattern> for String {
    fn from(p: RedactPattern) -> String {
        p.0.to_string()
    }
}

/// A redaction stage over already parsed patterns.
pub(crate) fn redactor(patterns: &[RedactPattern], replacement: &str) -> Box<dyn StreamTransform> {
    let patterns = patterns.iter().map(|p| p.0.clone()).collect();
    redact_text_deltas(patterns, replacement)
}

/// A live or canonical stage that upper-cases text.
#[derive(Debug)]
pub(crate) struct UppercaseStage;

impl StreamTransform for UppercaseStage {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        match part {
            StreamPart::TextDelta(t) => out.text(t.to_uppercase()),
            other => out.part(other),
        }
    }
}

/// A live (presentation-only) transform of a watcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(transform = crate::schema::checks::by_kind)]
pub enum TransformSpec {
    /// Redact what matches `patterns` (a literal prefix and an optional
    /// trailing `[class]+`) into `replacement`.
    Redact {
        /// The patterns.
        patterns: Vec<RedactPattern>,
        /// What each match becomes.
        replacement: String,
    },
    /// Upper-case text.
    Uppercase,
}

/// A watcher's live stages, in order.
pub(crate) fn live_stages(specs: &[TransformSpec]) -> Vec<Box<dyn StreamTransform>> {
    specs
        .iter()
        .map(|s| match s {
            TransformSpec::Redact {
                patterns,
                replacement,
            } => redactor(patterns, replacement),
            TransformSpec::Uppercase => Box::new(UppercaseStage) as Box<dyn StreamTransform>,
        })
        .collect()
}
