//! The request bodies and headers the model sent, per format: model,
//! instructions, messages with tool calls and results, tools with their
//! schemas, settings, `stream: true`.

use pai_providers::{Format, HttpConfig, HttpModel};
use pai_runtime::{
    ModelRequest, Role,
    message::{ModelContent, ModelMessage},
    model::{Route, ToolChoice},
    tool::ToolSpec,
};
use serde_json::{Value, json};

use super::server::{End, Reply, Server};
use super::{MS, collect, config};
use crate::common::recording;

/// A conversation with a tool call and its result, offering one tool.
fn conversation() -> ModelRequest {
    let mut route = Route::new("m");
    route.settings.temperature = Some(0.5);
    route.settings.max_output_tokens = Some(100);
    route.tool_choice = Some(ToolChoice::Auto);
    let messages = vec![
        ModelMessage::user("Weather in Zürich?"),
        ModelMessage {
            role: Role::Assistant,
            content: vec![
                ModelContent::Text {
                    text: "Looking.".into(),
                },
                ModelContent::ToolCall {
                    call_id: "call_1".into(),
                    tool: "get_weather".into(),
                    input: json!({ "city": "Zürich" }),
                },
            ],
        },
        ModelMessage {
            role: Role::Tool,
            content: vec![ModelContent::ToolResult {
                call_id: "call_1".into(),
                tool: "get_weather".into(),
                output: json!({ "c": 21 }),
                is_error: false,
            }],
        },
    ];
    let tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "The weather in a city".into(),
    }];
    ModelRequest::new(route, "Be brief.", messages, tools)
}

fn city_schema() -> Value {
    json!({ "type": "object", "properties": { "city": { "type": "string" } } })
}

/// Sends `conversation()` in `format`; returns the body and headers the
/// server received.
async fn sent(format: Format, recording_name: &str) -> (Value, axum::http::HeaderMap) {
    let body = recording(format, recording_name);
    let server = Server::start(vec![Reply::stream(&body, 64, MS, End::Finish)]).await;
    let config = config(&server, format).tool_schema("get_weather", city_schema());
    let model = HttpModel::new(config).unwrap();
    let request = conversation();
    let stream = model.start(&request).await.unwrap();
    collect(stream).await;
    let received = server.received().remove(0);
    assert_eq!(
        received.body,
        model.body(&request),
        "body() is what is sent"
    );
    (received.body, received.headers)
}

#[tokio::test]
async fn chat_completions_body() {
    let (body, headers) = sent(Format::OpenAiChat, "text-multibyte.sse").await;
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "messages": [
                { "role": "system", "content": "Be brief." },
                { "role": "user", "content": "Weather in Zürich?" },
                { "role": "assistant", "content": "Looking.", "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": { "name": "get_weather", "arguments": "{\"city\":\"Zürich\"}" },
                }]},
                { "role": "tool", "tool_call_id": "call_1", "content": "{\"c\":21}" },
            ],
            "stream": true,
            "stream_options": { "include_usage": true },
            "max_tokens": 100,
            "temperature": 0.5,
            "tools": [{ "type": "function", "function": {
                "name": "get_weather", "description": "The weather in a city",
                "parameters": city_schema(),
            }}],
            "tool_choice": "auto",
        })
    );
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(headers["accept"], "text/event-stream");
    assert_eq!(headers["content-type"], "application/json");
}

#[tokio::test]
async fn responses_body() {
    let (body, headers) = sent(Format::OpenAiResponses, "text-multibyte.sse").await;
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "instructions": "Be brief.",
            "input": [
                { "role": "user", "content": "Weather in Zürich?" },
                { "role": "assistant", "content": "Looking." },
                { "type": "function_call", "call_id": "call_1", "name": "get_weather",
                  "arguments": "{\"city\":\"Zürich\"}" },
                { "type": "function_call_output", "call_id": "call_1", "output": "{\"c\":21}" },
            ],
            "stream": true,
            "max_output_tokens": 100,
            "temperature": 0.5,
            "tools": [{ "type": "function", "name": "get_weather",
                "description": "The weather in a city", "parameters": city_schema() }],
            "tool_choice": "auto",
        })
    );
    assert_eq!(headers["authorization"], "Bearer sk-test");
}

#[tokio::test]
async fn anthropic_messages_body() {
    let (body, headers) = sent(Format::Anthropic, "text-multibyte.sse").await;
    assert_eq!(
        body,
        json!({
            "model": "test-model",
            "system": "Be brief.",
            "messages": [
                { "role": "user", "content": [{ "type": "text", "text": "Weather in Zürich?" }] },
                { "role": "assistant", "content": [
                    { "type": "text", "text": "Looking." },
                    { "type": "tool_use", "id": "call_1", "name": "get_weather",
                      "input": { "city": "Zürich" } },
                ]},
                { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "call_1",
                    "content": "{\"c\":21}", "is_error": false }] },
            ],
            "stream": true,
            "max_tokens": 100,
            "temperature": 0.5,
            "tools": [{ "name": "get_weather", "description": "The weather in a city",
                "input_schema": city_schema() }],
            "tool_choice": { "type": "auto" },
        })
    );
    assert_eq!(headers["x-api-key"], "sk-test");
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert!(headers.get("authorization").is_none());
}

#[test]
fn a_tool_without_a_schema_is_offered_an_open_object() {
    let config = pai_providers::HttpConfig::new(Format::OpenAiChat, "http://127.0.0.1:9/v1", "m");
    let sent = HttpModel::new(config).unwrap().body(&conversation());
    assert_eq!(
        sent["tools"][0]["function"]["parameters"],
        json!({ "type": "object" })
    );
}

/// SPEC S6: an assistant message of two texts (a response's two output
/// items) goes back to the provider as two texts in every format, never
/// glued into one string.
#[test]
fn s6_two_texts_of_one_message_stay_apart_in_every_format() {
    let messages = vec![
        ModelMessage::user("News?"),
        ModelMessage {
            role: Role::Assistant,
            content: vec![
                ModelContent::Text {
                    text: "Got it.".into(),
                },
                ModelContent::Text {
                    text: "Here they are.".into(),
                },
            ],
        },
    ];
    let request = ModelRequest::new(Route::new("m"), "", messages, Vec::new());
    let body = |format| {
        let config = HttpConfig::new(format, "http://127.0.0.1:9", "m");
        HttpModel::new(config).unwrap().body(&request)
    };
    let chat = body(Format::OpenAiChat);
    assert_eq!(
        chat["messages"][1]["content"],
        json!([{ "type": "text", "text": "Got it." }, { "type": "text", "text": "Here they are." }])
    );
    let responses = body(Format::OpenAiResponses);
    assert_eq!(responses["input"][1]["content"], "Got it.");
    assert_eq!(responses["input"][2]["content"], "Here they are.");
    let anthropic = body(Format::Anthropic);
    assert_eq!(
        anthropic["messages"][1]["content"],
        json!([{ "type": "text", "text": "Got it." }, { "type": "text", "text": "Here they are." }])
    );
}
