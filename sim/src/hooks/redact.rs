//! `redact`: canonical redaction of every stream (SPEC S1, S3, L12), correct
//! for every chunking.

use pai_runtime::hook;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::SimHook;
use super::stages::{RedactPattern, redactor};

/// Canonical redaction: `patterns` (a literal prefix and an optional
/// trailing `[class]+`) become `replacement`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Redact {
    /// The hook's name in the event log; `<hook>#<index>` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(crate::schema::checks::NONBLANK))]
    pub name: Option<String>,
    /// The patterns: at least one.
    #[schemars(length(min = 1))]
    pub patterns: Vec<RedactPattern>,
    /// What each match becomes.
    pub replacement: String,
}

impl Redact {
    pub(super) fn hook(&self, name: &str) -> SimHook {
        let me = self.clone();
        Box::new(hook::transform_step_stream(name, move |_, _| {
            Some(redactor(&me.patterns, &me.replacement))
        }))
    }
}
