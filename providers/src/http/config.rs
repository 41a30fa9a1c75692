//! [`HttpConfig`]: where a model lives, how to reach it, and how long to
//! wait for it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::decoder::Format;
use crate::report::StreamReport;

/// What is called with the report of each stream that ended well.
pub(crate) type ReportHook = Arc<dyn Fn(&StreamReport) + Send + Sync>;

/// An [`HttpModel`](super::HttpModel)'s configuration: a format, an
/// endpoint and a model id, with builder methods for the rest.
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) format: Format,
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) connect_timeout: Duration,
    pub(crate) first_byte_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) tool_schemas: BTreeMap<String, Value>,
    pub(crate) options_key: String,
    pub(crate) default_max_tokens: u32,
    pub(crate) on_report: Option<ReportHook>,
}

impl HttpConfig {
    /// A model `model` (the provider's id, sent as `model`) at `base_url`,
    /// the API's root: requests go to `{base_url}/chat/completions`,
    /// `/responses` or `/messages` by `format`
    /// (`https://api.openai.com/v1`, `https://api.anthropic.com/v1`,
    /// `http://127.0.0.1:8080/v1` for a local server).
    ///
    /// Defaults: no API key; 10 s to connect, 60 s for the response
    /// headers, 60 s between two chunks of the body; the route's
    /// `provider_options` under `"openai"` (`"anthropic"` for Anthropic)
    /// merged into the body; Anthropic's `max_tokens` 4096 when the route
    /// sets none.
    pub fn new(format: Format, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let options_key = match format {
            Format::Anthropic => "anthropic",
            Format::OpenAiChat | Format::OpenAiResponses => "openai",
        };
        HttpConfig {
            format,
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            headers: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            tool_schemas: BTreeMap::new(),
            options_key: options_key.to_owned(),
            default_max_tokens: 4096,
            on_report: None,
        }
    }

    /// The API key, sent as `Authorization: Bearer` (`x-api-key` for
    /// Anthropic); `None` sends none (a local server).
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// An extra request header (an organization, a proxy's token).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// How long connecting (TCP and TLS) may take.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long the response headers may take after the request is sent
    /// (connecting included): past it the attempt fails with
    /// [`ModelError::Timeout`](pai_runtime::ModelError::Timeout).
    pub fn first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.first_byte_timeout = timeout;
        self
    }

    /// How long the body may go without a byte once it streams: past it
    /// the stream ends with an error part.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The JSON schema of tool `name`'s input, sent with the tool (the
    /// runtime's tools carry none; a tool without one is offered an open
    /// object, `{"type":"object"}`).
    pub fn tool_schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.tool_schemas.insert(name.into(), schema);
        self
    }

    /// The `provider_options` key whose entries are merged into the body.
    pub fn options_key(mut self, key: impl Into<String>) -> Self {
        self.options_key = key.into();
        self
    }

    /// Anthropic's `max_tokens` when the route sets no `max_output_tokens`.
    pub fn default_max_tokens(mut self, tokens: u32) -> Self {
        self.default_max_tokens = tokens;
        self
    }

    /// Called with the [`StreamReport`] (usage, stop reason, refusal,
    /// skipped events) of every stream that ends well: the runtime's
    /// stream parts carry none of it.
    pub fn on_report(mut self, hook: impl Fn(&StreamReport) + Send + Sync + 'static) -> Self {
        self.on_report = Some(Arc::new(hook));
        self
    }
}

impl fmt::Debug for HttpConfig {
    /// Everything but the API key's value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("format", &self.format)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field(
                "tool_schemas",
                &self.tool_schemas.keys().collect::<Vec<_>>(),
            )
            .field("options_key", &self.options_key)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish_non_exhaustive()
    }
}
