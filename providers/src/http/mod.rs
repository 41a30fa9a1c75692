//! [`HttpModel`]: the runtime's model seam ([`LanguageModel`]) over HTTP,
//! for the three formats the decoders read (cargo feature `http`).
//!
//! One call of [`LanguageModel::stream`] is one HTTP request: the
//! [`ModelRequest`] as the format's JSON body with `stream: true`, sent
//! with reqwest over rustls (ring; no OpenSSL). The attempt resolves once
//! the response headers are in: an error status, a body that is not an
//! event stream, no connection or no headers within the first-byte
//! timeout is the attempt's error ([`HttpError`] as a
//! [`ModelError`](pai_runtime::ModelError)), seen by `around_model_call`
//! hooks. After that, the body streams chunk by chunk into the format's
//! [`Decoder`](crate::Decoder); a cut connection, a stall past the idle
//! timeout or a body that does not decode ends the stream with an error
//! part (P7). Dropping the stream closes the connection.
//!
//! **No retries.** The provider sends each request once. Retrying is the
//! runtime's: an `around_model_call` hook calls `next()` again, a new
//! attempt (P6); [`HttpError::is_transient`] names the failures worth it.
//!
//! **Time.** The runtime's own attempt timeout (`timeout_ms`) runs on its
//! injected clock and covers the whole attempt. The connect, first-byte
//! and idle timeouts here guard a real socket and run on tokio's timer:
//! the model must be polled inside a tokio runtime with I/O and time
//! enabled. The simulator never uses this model, so its runs stay
//! deterministic.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::time::{Duration, SystemTime, UNIX_EPOCH};
//!
//! use pai_providers::{Format, HttpConfig, HttpModel};
//! use pai_runtime::{Agent, Clock, HookFuture, IdKind, IdSource, Millis, Runtime, model::ModelMap};
//!
//! /// Wall-clock time: the runtime's clock is injected (the simulator's is virtual).
//! struct SystemClock;
//!
//! impl Clock for SystemClock {
//!     fn now(&self) -> Millis {
//!         let since = SystemTime::now().duration_since(UNIX_EPOCH);
//!         since.map_or(0, |d| d.as_millis() as Millis)
//!     }
//!
//!     fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
//!         HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
//!     }
//! }
//!
//! /// Counted ids (an application would use random ones).
//! #[derive(Default)]
//! struct Counter(AtomicU64);
//!
//! impl IdSource for Counter {
//!     fn next_id(&self, kind: IdKind) -> String {
//!         format!("{}_{}", kind.prefix(), self.0.fetch_add(1, Ordering::Relaxed))
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Any OpenAI-compatible server: OpenAI, vLLM, llama.cpp, Ollama.
//!     let base_url = std::env::var("OPENAI_BASE_URL")
//!         .unwrap_or_else(|_| "http://127.0.0.1:11434/v1".into());
//!     let config = HttpConfig::new(Format::OpenAiChat, base_url, "llama3.2")
//!         .api_key(std::env::var("OPENAI_API_KEY").ok());
//!     let agent = Agent::new("assistant", "local").instructions("Answer briefly.");
//!     let rt = Runtime::builder(agent, ())
//!         .models(ModelMap::new().with("local", Arc::new(HttpModel::new(config)?)))
//!         .clock(Arc::new(SystemClock))
//!         .ids(Arc::new(Counter::default()))
//!         .build()?;
//!     let thread = rt.client("alice").thread("demo");
//!     thread.send("What is the capital of France?").await?;
//!     let state = thread.wait_until_idle().await?;
//!     let answer = state.messages.last().map(|m| m.text()).unwrap_or_default();
//!     eprintln!("{answer}");
//!     Ok(())
//! }
//! ```

mod config;
mod error;
mod request;
mod stream;

use pai_runtime::{HookFuture, LanguageModel, ModelError, ModelRequest, model::BoxStream};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};

pub use config::HttpConfig;
pub(crate) use config::ReportHook;
pub use error::HttpError;

use crate::body::error_message;
use crate::decoder::{Decoder, Format};
pub(crate) use error::chain;
use stream::HttpStream;

/// The largest error body read to name a failure.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A model behind an HTTP endpoint, speaking one [`Format`].
#[derive(Debug, Clone)]
pub struct HttpModel {
    config: HttpConfig,
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
}

impl HttpModel {
    /// A model for `config`. Installs rustls' ring crypto provider as the
    /// process default unless one is installed already.
    pub fn new(config: HttpConfig) -> Result<HttpModel, HttpError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| HttpError::Client(chain(&e)))?;
        let path = match config.format {
            Format::OpenAiChat => "/chat/completions",
            Format::OpenAiResponses => "/responses",
            Format::Anthropic => "/messages",
        };
        let url = format!("{}{path}", config.base_url.trim_end_matches('/'));
        let headers = headers(&config)?;
        Ok(HttpModel {
            config,
            client,
            url,
            headers,
        })
    }

    /// The endpoint requests go to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON body this model sends for `request`.
    pub fn body(&self, request: &ModelRequest) -> serde_json::Value {
        request::body(&self.config, request)
    }

    /// One attempt: sends the request and waits for the response headers.
    pub async fn start(&self, request: &ModelRequest) -> Result<BoxStream, HttpError> {
        let body = serde_json::to_vec(&self.body(request)).expect("a JSON value serializes");
        let send = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let first_byte = self.config.first_byte_timeout;
        let response = tokio::time::timeout(first_byte, send)
            .await
            .map_err(|_| HttpError::FirstByte(first_byte.as_millis() as u64))?
            .map_err(|e| HttpError::request(&self.url, &e))?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !status.is_success() {
            let message = self.error_body(response).await;
            return Err(HttpError::Status {
                status: status.as_u16(),
                message,
            });
        }
        if content_type.starts_with("application/json") {
            let message = self.error_body(response).await;
            return Err(HttpError::NotAStream {
                content_type,
                message,
            });
        }
        let decoder = Decoder::new(self.config.format);
        let (idle, hook) = (self.config.idle_timeout, self.config.on_report.clone());
        Ok(Box::new(HttpStream::new(response, decoder, idle, hook)))
    }

    /// The message of an error response: its JSON error's message, or its
    /// text (at most [`MAX_ERROR_BODY`] bytes, read within the idle timeout).
    async fn error_body(&self, mut response: reqwest::Response) -> String {
        let mut body = Vec::new();
        let read = async {
            while let Ok(Some(chunk)) = response.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_ERROR_BODY {
                    break;
                }
            }
        };
        let complete = tokio::time::timeout(self.config.idle_timeout, read)
            .await
            .is_ok();
        let text = match serde_json::from_slice(&body)
            .ok()
            .as_ref()
            .and_then(error_message)
        {
            Some(message) => message,
            None => String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BODY)]).into_owned(),
        };
        match (text.is_empty(), complete) {
            (true, _) => "(no body)".to_owned(),
            (false, true) => text,
            (false, false) => format!("{text} (body cut short: it stalled)"),
        }
    }
}

/// The request headers: JSON in, an event stream out, the format's
/// authentication, then the configured extra headers.
fn headers(config: &HttpConfig) -> Result<HeaderMap, HttpError> {
    let mut map = HeaderMap::new();
    let mut insert = |name: &str, value: &str| -> Result<(), HttpError> {
        let name = HeaderName::try_from(name)
            .map_err(|e| HttpError::Client(format!("header {name:?}: {e}")))?;
        let mut value = HeaderValue::try_from(value)
            .map_err(|e| HttpError::Client(format!("header {name}: {e}")))?;
        value.set_sensitive(name == header::AUTHORIZATION || name.as_str() == "x-api-key");
        map.insert(name, value);
        Ok(())
    };
    insert("content-type", "application/json")?;
    insert("accept", "text/event-stream")?;
    if let Some(key) = &config.api_key {
        match config.format {
            Format::Anthropic => insert("x-api-key", key)?,
            _ => insert("authorization", &format!("Bearer {key}"))?,
        }
    }
    if config.format == Format::Anthropic {
        insert("anthropic-version", "2023-06-01")?;
    }
    for (name, value) in &config.headers {
        insert(name, value)?;
    }
    Ok(map)
}

impl LanguageModel for HttpModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        HookFuture::new(async move { self.start(request).await.map_err(ModelError::from) })
    }
}
