//! The OpenAI Responses API: `instructions`, `input` items (messages,
//! `function_call`, `function_call_output`), `tools` as functions.

use serde_json::{Map, Value, json};

use pai_runtime::{
    ModelRequest, Role,
    message::{ModelContent, ModelMessage},
    model::ToolChoice,
};

use super::{chat::result_text, openai_settings, schema};
use crate::http::HttpConfig;

pub(super) fn body(config: &HttpConfig, request: &ModelRequest) -> Map<String, Value> {
    let mut input = Vec::new();
    for message in &request.messages {
        push_items(&mut input, message);
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    if !request.instructions.is_empty() {
        body.insert("instructions".into(), json!(request.instructions));
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("stream".into(), json!(true));
    openai_settings(&mut body, request, "max_output_tokens");
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| {
            json!({
                "type": "function", "name": t.name, "description": t.description,
                "parameters": schema(config, t),
            })
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
        ToolChoice::Tool(name) => json!({ "type": "function", "name": name }),
    }
}

/// One runtime message as input items, in order: text runs as messages
/// of its role, calls and results as items of their own.
fn push_items(out: &mut Vec<Value>, message: &ModelMessage) {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant | Role::Tool => "assistant",
    };
    for content in &message.content {
        out.push(match content {
            ModelContent::Text { text } => json!({ "role": role, "content": text }),
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => json!({
                "type": "function_call", "call_id": call_id, "name": tool,
                "arguments": input.to_string(),
            }),
            ModelContent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => json!({
                "type": "function_call_output", "call_id": call_id,
                "output": result_text(output, *is_error),
            }),
        });
    }
}
