//! Anthropic Messages: `system` (the instructions and any system
//! messages), `messages` of content blocks (`text`, `tool_use`, and
//! `tool_result` in a user message), `tools` with `input_schema`, and the
//! `max_tokens` the API requires.

use serde_json::{Map, Value, json};

use pai_runtime::{
    ModelRequest, Role,
    message::{ModelContent, ModelMessage},
    model::ToolChoice,
};

use super::{output_text, put, schema};
use crate::http::HttpConfig;

pub(super) fn body(config: &HttpConfig, request: &ModelRequest) -> Map<String, Value> {
    let mut system = vec![request.instructions.clone()];
    let mut messages: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        if message.role == Role::System {
            system.push(message.text());
            continue;
        }
        let (role, blocks) = blocks(message);
        // Consecutive messages of one role become one (results after a
        // user's text, several results), as the API wants turns to alternate.
        match messages.last_mut() {
            Some((last, b)) if *last == role => b.extend(blocks),
            _ if blocks.is_empty() => {}
            _ => messages.push((role, blocks)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    let system: Vec<String> = system.into_iter().filter(|s| !s.is_empty()).collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    settings(&mut body, config, request);
    tools(&mut body, config, request);
    body
}

fn settings(body: &mut Map<String, Value>, config: &HttpConfig, request: &ModelRequest) {
    let s = &request.route.settings;
    let max = s.max_output_tokens.unwrap_or(config.default_max_tokens);
    body.insert("max_tokens".into(), json!(max));
    put(body, "temperature", s.temperature);
    put(body, "top_p", s.top_p);
    put(body, "top_k", s.top_k);
    if let Some(stop) = &s.stop_sequences {
        body.insert("stop_sequences".into(), json!(stop));
    }
}

fn tools(body: &mut Map<String, Value>, config: &HttpConfig, request: &ModelRequest) {
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({ "name": t.name, "description": t.description, "input_schema": schema(config, t) })
        })
        .collect();
    tools.extend(request.route.provider_tools.iter().flatten().cloned());
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &request.route.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!({ "type": "auto" }),
            ToolChoice::None => json!({ "type": "none" }),
            ToolChoice::Required => json!({ "type": "any" }),
            ToolChoice::Tool(name) => json!({ "type": "tool", "name": name }),
        };
        body.insert("tool_choice".into(), choice);
    }
}

/// A message's role and content blocks; tool results go in a user turn.
fn blocks(message: &ModelMessage) -> (&'static str, Vec<Value>) {
    let role = match message.role {
        Role::User | Role::Tool => "user",
        Role::Assistant | Role::System => "assistant",
    };
    let mut role = role;
    let blocks = message
        .content
        .iter()
        .filter_map(|content| match content {
            ModelContent::Text { text } if text.is_empty() => None,
            ModelContent::Text { text } => Some(json!({ "type": "text", "text": text })),
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => Some(json!({ "type": "tool_use", "id": call_id, "name": tool, "input": input })),
            ModelContent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                role = "user";
                Some(json!({
                    "type": "tool_result", "tool_use_id": call_id,
                    "content": output_text(output), "is_error": is_error,
                }))
            }
        })
        .collect();
    (role, blocks)
}
