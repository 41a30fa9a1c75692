//! OpenAI-compatible Chat Completions: `messages` with the instructions as
//! the first system message, assistant `tool_calls`, one `tool` message
//! per result, `tools` as functions.

use serde_json::{Map, Value, json};

use pai_runtime::{
    ModelRequest, Role,
    message::{ModelContent, ModelMessage},
    model::ToolChoice,
};

use super::{openai_settings, output_text, schema};
use crate::http::HttpConfig;

pub(super) fn body(config: &HttpConfig, request: &ModelRequest) -> Map<String, Value> {
    let mut messages = Vec::new();
    if !request.instructions.is_empty() {
        messages.push(json!({ "role": "system", "content": request.instructions }));
    }
    for message in &request.messages {
        push_message(&mut messages, message);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    openai_settings(&mut body, request, "max_tokens");
    if let Some(stop) = &request.route.settings.stop_sequences {
        body.insert("stop".into(), json!(stop));
    }
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({ "type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": schema(config, t),
            }})
        })
        .collect();
    tools.extend(request.route.provider_tools.iter().flatten().cloned());
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.route.tool_choice {
        body.insert("tool_choice".into(), tool_choice(choice));
    }
    body
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({ "type": "function", "function": { "name": name } }),
    }
}

/// One runtime message: its text and calls as one message of its role,
/// then each tool result as a `tool` message. Several texts (a response's
/// items, S6) stay apart as content parts, never glued into one string.
fn push_message(out: &mut Vec<Value>, message: &ModelMessage) {
    let mut texts: Vec<&str> = Vec::new();
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for content in &message.content {
        match content {
            ModelContent::Text { text: t } if t.is_empty() => {}
            ModelContent::Text { text: t } => texts.push(t),
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => calls.push(json!({
                "id": call_id, "type": "function",
                "function": { "name": tool, "arguments": input.to_string() },
            })),
            ModelContent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => results.push(json!({
                "role": "tool", "tool_call_id": call_id,
                "content": result_text(output, *is_error),
            })),
        }
    }
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant | Role::Tool => "assistant",
    };
    let content = match texts[..] {
        [] => Value::Null,
        [one] => json!(one),
        _ => Value::Array(
            texts
                .iter()
                .map(|t| json!({ "type": "text", "text": t }))
                .collect(),
        ),
    };
    if !calls.is_empty() {
        out.push(json!({ "role": role, "content": content, "tool_calls": calls }));
    } else if !content.is_null() {
        out.push(json!({ "role": role, "content": content }));
    }
    out.extend(results);
}

/// A result's content; a failed call's output is marked as an error,
/// since the format has no flag for it.
pub(super) fn result_text(output: &Value, is_error: bool) -> String {
    match is_error {
        true => format!("error: {}", output_text(output)),
        false => output_text(output),
    }
}
