//! Request bodies: a [`ModelRequest`] as each format's JSON body, with
//! `stream: true`. The runtime's tools carry a name and a description; a
//! JSON schema for a tool's input comes from the model's configuration
//! (`HttpConfig::tool_schema`), and a tool without one is offered an open
//! object.

mod anthropic;
mod chat;
mod responses;

use serde_json::{Map, Value, json};

use pai_runtime::{ModelRequest, tool::ToolSpec};

use super::HttpConfig;
use crate::decoder::Format;

/// The JSON body of one attempt in the configured format.
pub(crate) fn body(config: &HttpConfig, request: &ModelRequest) -> Value {
    let mut body = match config.format {
        Format::OpenAiChat => chat::body(config, request),
        Format::OpenAiResponses => responses::body(config, request),
        Format::Anthropic => anthropic::body(config, request),
    };
    merge_options(&mut body, config, request);
    Value::Object(body)
}

/// The route's `provider_options` entry for this model's key, merged
/// over the body's top level (a key it names replaces the body's own).
fn merge_options(body: &mut Map<String, Value>, config: &HttpConfig, request: &ModelRequest) {
    if let Some(options) = request.route.provider_options.get(&config.options_key) {
        for (key, value) in options {
            body.insert(key.clone(), value.clone());
        }
    }
}

/// A tool's input schema: the configured one, or an open object.
fn schema(config: &HttpConfig, tool: &ToolSpec) -> Value {
    config
        .tool_schemas
        .get(&tool.name)
        .cloned()
        .unwrap_or_else(|| json!({ "type": "object" }))
}

/// A tool result's output as the text a provider takes: a string as it
/// is, anything else as JSON.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Inserts `value` under `key` when there is one.
fn put<T: Into<Value>>(body: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(value) = value {
        body.insert(key.to_owned(), value.into());
    }
}

/// The settings OpenAI's two APIs share (`max_tokens` named per API).
fn openai_settings(body: &mut Map<String, Value>, request: &ModelRequest, max_key: &str) {
    let s = &request.route.settings;
    put(body, max_key, s.max_output_tokens);
    put(body, "temperature", s.temperature);
    put(body, "top_p", s.top_p);
    put(body, "seed", s.seed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::model::Route;

    #[test]
    fn provider_options_of_the_models_key_win() {
        let mut route = Route::new("m");
        let mut openai = Map::new();
        openai.insert("reasoning_effort".into(), json!("high"));
        openai.insert("stream".into(), json!(true));
        route.provider_options.insert("openai".into(), openai);
        let mut other = Map::new();
        other.insert("ignored".into(), json!(1));
        route.provider_options.insert("other".into(), other);
        let request = ModelRequest::new(route, "", vec![], vec![]);
        let config = HttpConfig::new(Format::OpenAiChat, "http://x", "gpt");
        let body = body(&config, &request);
        assert_eq!(body["reasoning_effort"], "high");
        assert!(body.get("ignored").is_none());
    }
}
