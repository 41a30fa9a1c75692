//! What goes wrong talking to a provider over HTTP, and how each failure
//! reaches the runtime: before the stream exists as a [`ModelError`] (an
//! attempt that failed, which an `around_model_call` hook may retry, P6),
//! after it as the stream's error part (P7).

use pai_runtime::ModelError;

use crate::error::DecodeError;

/// A failed HTTP attempt. The provider never retries: each of these ends
/// the attempt it happened in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The configuration could not make a client (a bad header, no TLS).
    #[error("the HTTP client could not be built: {0}")]
    Client(String),
    /// The request never got an answer: no connection (refused, DNS, TLS,
    /// the connect timeout), or it broke before the response headers.
    #[error("the request to {url} failed: {detail}")]
    Request {
        /// The endpoint.
        url: String,
        /// The transport's complaint, with its causes.
        detail: String,
    },
    /// No response headers within the first-byte timeout.
    #[error("no response within {0}ms")]
    FirstByte(u64),
    /// The provider answered with an error status.
    #[error("HTTP {status}: {message}")]
    Status {
        /// The status code.
        status: u16,
        /// The message of the provider's JSON error, or the body's text.
        message: String,
    },
    /// A success status whose body is not an event stream (a JSON error
    /// some servers send with status 200).
    #[error("the provider answered {content_type} instead of an event stream: {message}")]
    NotAStream {
        /// The response's content type.
        content_type: String,
        /// The message of the JSON error, or the body's text.
        message: String,
    },
    /// The connection failed while the body was streaming.
    #[error("the connection failed mid-stream: {0}")]
    Body(String),
    /// No bytes arrived for the idle timeout while the body was streaming.
    #[error("the stream stalled: no bytes for {0}ms")]
    Idle(u64),
    /// The body is not a well-formed stream of the format.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

impl HttpError {
    /// The HTTP status of a [`Status`](HttpError::Status) error.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether trying the same request again may succeed: no connection, no
    /// answer in time, 408, 409, 429 and 5xx. A hint for an
    /// `around_model_call` hook that retries; the provider itself never does.
    pub fn is_transient(&self) -> bool {
        match self {
            HttpError::Request { .. } | HttpError::FirstByte(_) => true,
            HttpError::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            _ => false,
        }
    }

    pub(crate) fn request(url: &str, error: &reqwest::Error) -> HttpError {
        HttpError::Request {
            url: url.to_owned(),
            detail: chain(error),
        }
    }
}

/// An error and its causes, joined: reqwest's own message alone says
/// little ("error sending request").
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl From<HttpError> for ModelError {
    /// No answer in time is the runtime's timeout; an error status, no
    /// connection or a body that is no stream is [`ModelError::Http`], with
    /// the status and whether a retry may help (SPEC P6: a retry hook reads
    /// them); anything else a provider error naming what happened.
    fn from(error: HttpError) -> ModelError {
        let retryable = error.is_transient();
        match error {
            HttpError::FirstByte(ms) => ModelError::Timeout(ms),
            HttpError::Status { status, message } => ModelError::Http {
                status: Some(status),
                retryable,
                message,
            },
            e @ (HttpError::Request { .. } | HttpError::NotAStream { .. }) => ModelError::Http {
                status: None,
                retryable,
                message: e.to_string(),
            },
            other => ModelError::Provider(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_transient_or_not() {
        let status = |status| HttpError::Status {
            status,
            message: String::new(),
        };
        assert!(status(429).is_transient());
        assert!(status(503).is_transient());
        assert!(!status(400).is_transient());
        assert!(!status(401).is_transient());
        assert_eq!(status(401).status(), Some(401));
        assert_eq!(
            ModelError::from(HttpError::FirstByte(5)),
            ModelError::Timeout(5)
        );
        let e = ModelError::from(HttpError::Status {
            status: 503,
            message: "overloaded".into(),
        });
        assert_eq!((e.status(), e.retryable()), (Some(503), true));
        assert_eq!(e.to_string(), "provider error: HTTP 503: overloaded");
        let e = ModelError::from(status(400));
        assert_eq!((e.status(), e.retryable()), (Some(400), false));
        let e = ModelError::from(HttpError::Request {
            url: "u".into(),
            detail: "refused".into(),
        });
        assert_eq!((e.status(), e.retryable()), (None, true));
    }
}
