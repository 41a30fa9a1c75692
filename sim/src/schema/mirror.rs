//! Simulator-side mirrors of the runtime types that scenario files and the
//! event log contain. The runtime has no schema dependency: these types carry
//! the same serde shape and derive the schema; scenario fields point at them
//! with `#[schemars(with = "...")]`, and the event log serializes them. Each
//! conversion from the runtime type is exhaustive, so a runtime change that
//! the format must follow does not compile until the mirror follows it.

use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde_json::json;

/// Sampling settings. Every field is optional, so a patch names only what it
/// changes (SPEC P2: field by field, the later patch wins).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The most tokens the model may produce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass to sample from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sample from the `top_k` likeliest tokens only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// The provider's sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Sequences that stop the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
}

impl From<&pai_runtime::ModelSettings> for ModelSettings {
    fn from(s: &pai_runtime::ModelSettings) -> Self {
        let pai_runtime::ModelSettings {
            max_output_tokens,
            temperature,
            top_p,
            top_k,
            seed,
            stop_sequences,
        } = s.clone();
        ModelSettings {
            max_output_tokens,
            temperature,
            top_p,
            top_k,
            seed,
            stop_sequences,
        }
    }
}

/// How the model may choose tools: `"auto"`, `"none"`, `"required"`, or
/// `{ tool = "name" }` for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool may be called.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called.
    Tool(String),
}

impl From<&pai_runtime::ToolChoice> for ToolChoice {
    fn from(c: &pai_runtime::ToolChoice) -> Self {
        match c {
            pai_runtime::ToolChoice::Auto => ToolChoice::Auto,
            pai_runtime::ToolChoice::None => ToolChoice::None,
            pai_runtime::ToolChoice::Required => ToolChoice::Required,
            pai_runtime::ToolChoice::Tool(t) => ToolChoice::Tool(t.clone()),
        }
    }
}

/// How a run ended, as far as the user is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The run did what it was asked.
    Completed,
    /// A guard stopped the run on purpose.
    Blocked,
    /// A client cancelled the run.
    Cancelled,
    /// Something went wrong.
    Failed,
}

impl From<pai_runtime::Outcome> for Outcome {
    fn from(o: pai_runtime::Outcome) -> Self {
        match o {
            pai_runtime::Outcome::Completed => Outcome::Completed,
            pai_runtime::Outcome::Blocked => Outcome::Blocked,
            pai_runtime::Outcome::Cancelled => Outcome::Cancelled,
            pai_runtime::Outcome::Failed => Outcome::Failed,
        }
    }
}

/// Provider key → that provider's options object (passed through as is).
pub type ProviderOptions = pai_runtime::ProviderOptions;

/// The grammar `pai_runtime::Pattern::parse` accepts: a literal prefix
/// (other characters than `\ [ + * ? ( ) | . { } ^ $`, or any character
/// escaped with `\`), then at most one class of ASCII characters and ranges,
/// followed by `+`, as the last item. The ranges must ascend, which only
/// the loader checks.
pub const REDACT_PATTERN: &str =
    r"^(?:[^\\\[+*?()|.{}^$]|\\[\s\S])*(?:\[(?:[\x00-\x5B\x5E-\x7F]|\\[\x00-\x7F])*\]\+)?$";

/// The schema of a redaction pattern: a string of [`REDACT_PATTERN`]'s
/// grammar (`hooks::RedactPattern` derives a string and points here).
pub fn redact_pattern(schema: &mut Schema) {
    schema.insert(
        "description".into(),
        "A redaction pattern: a literal prefix, then at most one class of ASCII characters and ascending ranges followed by `+` (`sk-[A-Za-z0-9_-]+`); `\\` escapes the next character. Parsed when the scenario loads.".into(),
    );
    schema.insert("minLength".into(), 1.into());
    schema.insert("pattern".into(), REDACT_PATTERN.into());
    schema.insert("examples".into(), json!(["sk-[A-Za-z0-9_-]+", "password"]));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pattern grammar of the schema accepts what the runtime parses
    /// and refuses what it refuses (but for descending ranges).
    #[test]
    fn the_pattern_grammar_matches_the_parser() {
        let re = regex::Regex::new(REDACT_PATTERN).expect("a valid regex");
        for source in [
            "sk-[A-Za-z0-9_-]+",
            "password",
            "a\\.b",
            "[0-9]+",
            "x]y",
            "[]+",
            "\\[x\\]",
            "[\\]]+",
        ] {
            assert!(pai_runtime::Pattern::parse(source).is_ok(), "{source}");
            assert!(re.is_match(source), "the schema refuses {source:?}");
        }
        for source in [
            "sk-(a|b)", "a.b", "a+", "[a-z]", "[a-z]+x", "[é]+", "\\", "[a-z", "^a", "a{2}",
        ] {
            assert!(pai_runtime::Pattern::parse(source).is_err(), "{source}");
            assert!(!re.is_match(source), "the schema accepts {source:?}");
        }
    }

    /// Every field of the runtime's settings has a mirror field of the
    /// same name.
    #[test]
    fn settings_mirror_every_runtime_field() {
        let full = pai_runtime::ModelSettings {
            max_output_tokens: Some(1),
            temperature: Some(0.5),
            top_p: Some(0.5),
            top_k: Some(1),
            seed: Some(1),
            stop_sequences: Some(vec![]),
        };
        let runtime = serde_json::to_value(&full).unwrap_or_default();
        let mirror = serde_json::to_value(ModelSettings::from(&full)).unwrap_or_default();
        assert_eq!(runtime, mirror);
        for (o, c) in [
            (pai_runtime::Outcome::Completed, "completed"),
            (pai_runtime::Outcome::Blocked, "blocked"),
            (pai_runtime::Outcome::Cancelled, "cancelled"),
            (pai_runtime::Outcome::Failed, "failed"),
        ] {
            assert_eq!(serde_json::to_value(o).ok(), Some(c.into()));
            assert_eq!(serde_json::to_value(Outcome::from(o)).ok(), Some(c.into()));
        }
        let tool = pai_runtime::ToolChoice::Tool("t".into());
        assert_eq!(
            serde_json::to_value(&tool).ok(),
            serde_json::to_value(ToolChoice::from(&tool)).ok()
        );
    }
}
