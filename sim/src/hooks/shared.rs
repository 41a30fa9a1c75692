//! What the hooks of the library share: the runtime context they run with,
//! the hook type, scenario-written messages and small helpers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pai_runtime::{
    Lifecycle, Role,
    message::{ModelContent, ModelMessage},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The run metadata of a scenario's agent: a JSON object that hooks and
/// `on_output` handlers read and write (SPEC T6, seed: typed run metadata).
pub type SimMetadata = BTreeMap<String, serde_json::Value>;

/// The runtime context scenarios run with.
#[derive(Debug, Clone, Default)]
pub struct SimContext {
    /// The scenario's `[docs]`: keyword → text, for the `rag` hook.
    pub docs: BTreeMap<String, String>,
    /// Where history probes record what they read (SPEC M1, M3).
    pub reads: Arc<Mutex<Vec<HistoryRead>>>,
    /// The author's own context, for the hooks of a harness made with
    /// `Harness::with_context` (one per runtime, from its maker).
    pub(crate) author: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

/// One history read a hook made, as it made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRead {
    /// The run the read was made in.
    pub run_id: String,
    /// The episode it was read in (a step begun again after a takeover is
    /// another episode's).
    pub episode: u32,
    /// The step it was read at, numbered from 0 across the run's episodes as
    /// the event log numbers steps.
    pub step: u32,
    /// The anchor the history view reported.
    pub anchor: u64,
    /// What the read was: `collect`, `model_messages`, `before`.
    pub read: &'static str,
    /// Sequence numbers of the stored messages it returned (for
    /// `model_messages`, of the range it asked for, clipped by the view).
    pub seqs: Vec<u64>,
    /// The ids of the stored messages it returned (SPEC M3: all of its
    /// run's incarnation).
    pub ids: Vec<String>,
}

/// A hook of the scenario library, as one `[[lifecycle]]` entry.
pub type SimHook = Box<dyn Lifecycle<SimContext>>;

/// A model-facing message written in a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageSpec {
    /// Who speaks.
    pub role: MessageRole,
    /// The message's text.
    pub text: String,
}

/// Roles a scenario may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// A system message.
    System,
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
}

impl MessageSpec {
    /// The message as the model sees it.
    pub(crate) fn model_message(&self) -> ModelMessage {
        ModelMessage {
            role: match self.role {
                MessageRole::System => Role::System,
                MessageRole::User => Role::User,
                MessageRole::Assistant => Role::Assistant,
            },
            content: vec![ModelContent::Text {
                text: self.text.clone(),
            }],
        }
    }
}

/// The text of the newest user message among model messages.
pub(super) fn latest_user_text(messages: &[ModelMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(ModelMessage::text)
}

/// Whether a hook limited to `only` applies at `step`.
pub(super) fn applies_at(only: Option<u32>, step: u32) -> bool {
    only.is_none_or(|s| s == step)
}
