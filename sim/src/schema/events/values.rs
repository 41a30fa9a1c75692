//! Values events carry: routes, patches, messages, parts, tool results.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use pai_runtime::{ModelContent, ModelMessage, Part};

use super::names::*;
use crate::schema::mirror::{ModelSettings, ProviderOptions, ToolChoice};

/// The effective configuration of one model call.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Route")]
pub struct RouteRecord {
    /// The model.
    pub model: String,
    /// Sampling settings.
    pub settings: ModelSettings,
    /// Provider key → that provider's options.
    pub provider_options: ProviderOptions,
    /// Provider-native tools (opaque JSON descriptions).
    pub provider_tools: Option<Vec<Value>>,
    /// How the model may choose tools.
    pub tool_choice: Option<ToolChoice>,
    /// Names of the registered tools offered; null offers every registered tool.
    pub tools: Option<Vec<String>>,
}

impl From<&pai_runtime::Route> for RouteRecord {
    fn from(r: &pai_runtime::Route) -> Self {
        let pai_runtime::Route {
            model,
            settings,
            provider_options,
            provider_tools,
            tool_choice,
            tools,
        } = r.clone();
        RouteRecord {
            model,
            settings: (&settings).into(),
            provider_options,
            provider_tools,
            tool_choice: tool_choice.as_ref().map(ToolChoice::from),
            tools,
        }
    }
}

/// A sparse route patch: only the fields given change the route (SPEC P1–P3).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RoutePatch")]
pub struct RoutePatchRecord {
    /// A model: starts a fresh route (SPEC P1).
    pub model: Option<String>,
    /// Settings merged field by field.
    pub settings: ModelSettings,
    /// Provider options, replaced per provider.
    pub provider_options: ProviderOptions,
    /// Provider-native tools.
    pub provider_tools: Option<Vec<Value>>,
    /// How the model may choose tools.
    pub tool_choice: Option<ToolChoice>,
    /// The registered tools offered.
    pub tools: Option<Vec<String>>,
}

impl From<&pai_runtime::RoutePatch> for RoutePatchRecord {
    fn from(r: &pai_runtime::RoutePatch) -> Self {
        let pai_runtime::RoutePatch {
            model,
            settings,
            provider_options,
            provider_tools,
            tool_choice,
            tools,
        } = r.clone();
        RoutePatchRecord {
            model,
            settings: (&settings).into(),
            provider_options,
            provider_tools,
            tool_choice: tool_choice.as_ref().map(ToolChoice::from),
            tools,
        }
    }
}

/// A patch of `prepare_run` (the episode) or `prepare_model_step` (one step), SPEC P5.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Patch")]
pub struct PatchRecord {
    /// What the patch does to the route.
    pub route: RoutePatchRecord,
    /// Model-only messages appended after whatever the phase would send (SPEC P4).
    pub append_model_messages: Vec<MessageRecord>,
    /// Replaces the messages the phase would send (SPEC P4).
    pub replace_model_messages: Option<Vec<MessageRecord>>,
}

impl From<&pai_runtime::Patch> for PatchRecord {
    fn from(p: &pai_runtime::Patch) -> Self {
        let pai_runtime::Patch {
            route,
            append_model_messages,
            replace_model_messages,
        } = p;
        PatchRecord {
            route: route.into(),
            append_model_messages: append_model_messages.iter().map(Into::into).collect(),
            replace_model_messages: replace_model_messages
                .as_ref()
                .map(|m| m.iter().map(Into::into).collect()),
        }
    }
}

/// A message as the model receives it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ModelMessage")]
pub struct MessageRecord {
    /// Who speaks.
    pub role: RoleName,
    /// What the message holds.
    pub content: Vec<ContentRecord>,
}

impl From<&ModelMessage> for MessageRecord {
    fn from(m: &ModelMessage) -> Self {
        MessageRecord {
            role: m.role.into(),
            content: m.content.iter().map(Into::into).collect(),
        }
    }
}

/// One piece of a model-facing message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "ModelContent")]
pub enum ContentRecord {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call of the model.
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its input.
        input: Value,
    },
    /// A tool's result.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The output, failure value or error text the model sees.
        output: Value,
        /// The call failed.
        is_error: bool,
    },
}

impl From<&ModelContent> for ContentRecord {
    fn from(c: &ModelContent) -> Self {
        match c.clone() {
            ModelContent::Text { text } => ContentRecord::Text { text },
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => ContentRecord::ToolCall {
                call_id,
                tool,
                input,
            },
            ModelContent::ToolResult {
                call_id,
                tool,
                output,
                is_error,
            } => ContentRecord::ToolResult {
                call_id,
                tool,
                output,
                is_error,
            },
        }
    }
}

/// One part of a stored message.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(rename = "Part")]
pub enum PartRecord {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call.
    ToolCall {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Its input.
        input: Value,
    },
    /// A tool result.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Whether the tool produced an output.
        status: StatusOfTool,
        /// Where the result came from.
        source: SourceName,
        /// The output, the failure value, or the error detail.
        output: Value,
    },
}

impl From<&Part> for PartRecord {
    fn from(p: &Part) -> Self {
        match p.clone() {
            Part::Text { text } => PartRecord::Text { text },
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => PartRecord::ToolCall {
                call_id,
                tool,
                input,
            },
            Part::ToolResult {
                call_id,
                tool,
                status,
                source,
                output,
            } => PartRecord::ToolResult {
                call_id,
                tool,
                status: status.into(),
                source: source.into(),
                output,
            },
        }
    }
}
