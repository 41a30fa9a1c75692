//! Redacting personal data from what the model streams.

use std::borrow::Cow;

use pai_runtime::text::{Pattern, redact_text_deltas};
use pai_runtime::{Lifecycle, hook};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Redacts every match of `patterns` in the model's text to `replacement`,
/// before anything is stored, streamed to a client or sent back to the
/// model, however the provider cut the text into deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PiiRedactor {
    /// What personal data looks like: a literal prefix and an optional
    /// trailing `[class]+` (`ACCT-[0-9]+`, `+44[0-9 ]+`).
    #[schemars(length(min = 1))]
    pub patterns: Vec<PiiPattern>,
    /// What each match becomes.
    pub replacement: String,
}

impl PiiRedactor {
    /// The hook, named `name` in the event log.
    pub fn hook<C: Send + Sync + 'static>(&self, name: &str) -> impl Lifecycle<C> + use<C> {
        let patterns: Vec<Pattern> = self.patterns.iter().map(|p| p.pattern.clone()).collect();
        let replacement = self.replacement.clone();
        hook::transform_step_stream(name, move |_, _| {
            Some(redact_text_deltas(patterns.clone(), replacement.clone()))
        })
    }
}

/// A redaction pattern, checked when it is read: a configuration with a
/// pattern the runtime cannot redact in a stream is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PiiPattern {
    pattern: Pattern,
}

impl TryFrom<String> for PiiPattern {
    type Error = String;

    fn try_from(source: String) -> Result<PiiPattern, String> {
        let pattern = Pattern::parse(&source).map_err(|e| e.to_string())?;
        Ok(PiiPattern { pattern })
    }
}

impl From<PiiPattern> for String {
    fn from(p: PiiPattern) -> String {
        p.pattern.to_string()
    }
}

impl JsonSchema for PiiPattern {
    fn schema_name() -> Cow<'static, str> {
        "PiiPattern".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = String::json_schema(generator);
        schema.insert("minLength".into(), 1.into());
        schema
    }
}
