//! Shared formatting: how values look wherever the simulator prints them
//! (transcripts, request expectations, oracle messages, diffs).

use std::fmt::Write as _;

use pai_runtime::{
    Role, StreamPart,
    event::EventKind,
    hook::{AttemptPatch, ToolCallDecision, ToolResult, ToolResultDecision},
    message::{ModelContent, ModelMessage, ToolStatus},
    model::{ModelSettings, Patch, ProviderOptions, Route, RoutePatch, ToolChoice},
    store::Answer,
};
use serde_json::Value;

pub(crate) fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "<unprintable>".into())
}

pub(crate) fn quoted(s: &str) -> String {
    json(&Value::String(s.to_string()))
}

pub(crate) fn opt<S: AsRef<str>>(s: &Option<S>) -> &str {
    s.as_ref().map_or("-", AsRef::as_ref)
}

/// The words of a route or a route patch, in one walk over its fields: the
/// model word first, then every setting, provider option, provider tools,
/// tool choice and tool selection that is set.
fn route_words(
    model: Option<String>,
    settings: &ModelSettings,
    provider_options: &ProviderOptions,
    provider_tools: Option<&Vec<Value>>,
    tool_choice: Option<&ToolChoice>,
    tools: Option<&Vec<String>>,
) -> String {
    let mut words: Vec<String> = model.into_iter().collect();
    if let Value::Object(m) = serde_json::to_value(settings).unwrap_or(Value::Null) {
        words.extend(m.iter().map(|(k, v)| format!("{k}={}", json(v))));
    }
    for (provider, options) in provider_options {
        words.push(format!(
            "{provider}={}",
            json(&Value::Object(options.clone()))
        ));
    }
    if let Some(t) = provider_tools {
        words.push(format!("provider_tools={}", json(&Value::Array(t.clone()))));
    }
    if let Some(c) = tool_choice {
        let c = serde_json::to_value(c).unwrap_or_default();
        words.push(format!("tool_choice={}", json(&c)));
    }
    if let Some(t) = tools {
        words.push(format!("tools=[{}]", t.join(",")));
    }
    words.join(" ")
}

/// `model=small temperature=0.2 openai={...} tool_choice="required" tools=[a,b]`
pub(crate) fn route(r: &Route) -> String {
    route_words(
        Some(format!("model={}", r.model)),
        &r.settings,
        &r.provider_options,
        r.provider_tools.as_ref(),
        r.tool_choice.as_ref(),
        r.tools.as_ref(),
    )
}

/// A route patch: like a route, and a model it names starts a fresh route.
pub(crate) fn route_patch(p: &RoutePatch) -> String {
    route_words(
        p.model.as_ref().map(|m| format!("model={m} (fresh route)")),
        &p.settings,
        &p.provider_options,
        p.provider_tools.as_ref(),
        p.tool_choice.as_ref(),
        p.tools.as_ref(),
    )
}

/// An attempt patch: its route patch and timeout (`-` when empty).
pub(crate) fn attempt_patch(p: &AttemptPatch) -> String {
    let mut words = route_patch(&p.route);
    if let Some(t) = p.timeout_ms {
        if !words.is_empty() {
            words.push(' ');
        }
        let _ = write!(words, "timeout={t}ms");
    }
    if words.is_empty() {
        words.push('-');
    }
    words
}

/// `continue route {...}, replace_messages[2], append system: "x"`
pub(crate) fn patch(p: &Patch) -> String {
    let mut parts = Vec::new();
    if !p.route.is_empty() {
        parts.push(format!("route {{{}}}", route_patch(&p.route)));
    }
    if let Some(r) = &p.replace_model_messages {
        parts.push(format!("replace_messages[{}]", r.len()));
    }
    for m in &p.append_model_messages {
        parts.push(format!("append {}", model_message(m)));
    }
    if parts.is_empty() {
        "continue".into()
    } else {
        format!("continue {}", parts.join(", "))
    }
}

pub(crate) fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// `user: "hi"`, `assistant: "x" call(c1 search {...})`
pub(crate) fn model_message(m: &ModelMessage) -> String {
    let mut out = format!("{}:", role(m.role));
    for c in &m.content {
        let _ = match c {
            ModelContent::Text { text } => write!(out, " {}", quoted(text)),
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => write!(out, " call({call_id} {tool} {})", json(input)),
            ModelContent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                let kind = if *is_error { "error" } else { "result" };
                write!(out, " {kind}({call_id} {})", json(output))
            }
        };
    }
    out
}

pub(crate) fn stream_part(p: &StreamPart) -> String {
    match p {
        StreamPart::TextDelta(t) => format!("text {}", quoted(t)),
        StreamPart::ToolCall(c) => format!("tool_call {} {} {}", c.call_id, c.tool, json(&c.input)),
        StreamPart::Finish(r) => format!("finish {}", r.as_str()),
        StreamPart::Error(e) => format!("error {}", quoted(e)),
        StreamPart::Refusal(words) => format!("refusal {}", quoted(words)),
        StreamPart::TextEnd => "text_end".to_string(),
    }
}

pub(crate) fn tool_call_decision(d: &ToolCallDecision) -> String {
    match d {
        ToolCallDecision::Continue => "continue".into(),
        ToolCallDecision::ReplaceInput(v) => format!("replace_input {}", json(v)),
        ToolCallDecision::Reject { message } => format!("reject {}", quoted(message)),
    }
}

pub(crate) fn tool_result_decision(d: &ToolResultDecision) -> String {
    match d {
        ToolResultDecision::Continue => "continue".into(),
        ToolResultDecision::ReplaceOutput(v) => format!("replace_output {}", json(v)),
    }
}

/// `output {...}` or `error(throw) "..."`
/// The events of waiting and resume, metadata and hidden messages (SPEC
/// T6, T7, T9, L13) as one line each.
pub(crate) fn waiting_event(kind: &EventKind) -> String {
    match kind {
        EventKind::OnOutput {
            call_id,
            tool,
            input,
            changed,
            ..
        } => match changed {
            true => format!(
                "on_output {call_id} {tool} {} -> run metadata staged",
                json(input)
            ),
            false => format!(
                "on_output {call_id} {tool} {} -> metadata unchanged",
                json(input)
            ),
        },
        EventKind::RunMetadata { version } => match version {
            Some(v) => format!("  · run metadata written v{v}"),
            None => "  · run metadata staged (commits with the results)".to_string(),
        },
        EventKind::ContextMessage { message, version } => {
            format!("  · hidden context message {message} stored v{version}")
        }
        EventKind::Waiting { calls, version } => {
            format!("wait on [{}] (lease released) v{version}", calls.join(", "))
        }
        EventKind::Awaiting { calls, version } => {
            format!(
                "awaiting [{}] (answerable now) v{version}",
                calls.join(", ")
            )
        }
        EventKind::CancelRequested { version } => format!("cancel_requested v{version}"),
        EventKind::Answered {
            call_id,
            answer,
            version,
        } => match answer {
            Answer::Approved => format!("answer {call_id} approved v{version}"),
            Answer::Denied { reason } => {
                format!("answer {call_id} denied {} v{version}", quoted(reason))
            }
            Answer::Submitted { output } => {
                format!("answer {call_id} submitted {} v{version}", json(output))
            }
        },
        other => other.name().to_string(),
    }
}

pub(crate) fn result(r: &ToolResult) -> String {
    match r.status {
        ToolStatus::Output => format!("output {}", json(&r.output)),
        ToolStatus::Error => format!("error({}) {}", r.source.as_str(), json(&r.output)),
    }
}

/// A unified diff of two texts.
pub fn diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}
