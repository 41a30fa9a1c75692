//! [`Turn`]: one request through the recorder, what came back, where it
//! was written, and whether it decodes.

use std::fmt;
use std::path::PathBuf;

use crate::decoder::{Format, decode};
use crate::error::DecodeError;

/// One request through the recorder and its recorded response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Turn {
    /// From 1, in the order requests arrived.
    pub number: usize,
    /// The request's method.
    pub method: String,
    /// The request's path (without the query, which may hold a key).
    pub path: String,
    /// The file holding the request's body (none for an empty body).
    pub request: Option<PathBuf>,
    /// The file holding the response body (none when no response came).
    pub recording: Option<PathBuf>,
    /// The upstream's status (none when no response came).
    pub status: Option<u16>,
    /// The response body's bytes recorded.
    pub bytes: u64,
    /// The format the path names (`/chat/completions`, `/responses`,
    /// `/messages`), if any.
    pub format: Option<Format>,
    /// What decoding the recording whole in that format gave (none without
    /// a format or a recording).
    pub decoded: Option<Result<(), DecodeError>>,
    /// What went wrong: no response, a cut or stalled body, a file that
    /// could not be written. `None`: the body was recorded whole.
    pub error: Option<String>,
}

impl Turn {
    /// A turn for a request, before any response.
    pub(crate) fn new(number: usize, method: &str, path: &str) -> Turn {
        Turn {
            number,
            method: method.to_owned(),
            path: path.to_owned(),
            request: None,
            recording: None,
            status: None,
            bytes: 0,
            format: format_of(path),
            decoded: None,
            error: None,
        }
    }

    /// Decodes the recorded `body` in the turn's format.
    pub(crate) fn decode(&mut self, body: &[u8]) {
        if let (Some(format), Some(_)) = (self.format, &self.recording) {
            self.decoded = Some(decode(format, body).map(|_| ()));
        }
    }
}

/// The format a request path names.
fn format_of(path: &str) -> Option<Format> {
    let path = path.trim_end_matches('/');
    if path.ends_with("/chat/completions") {
        Some(Format::OpenAiChat)
    } else if path.ends_with("/responses") {
        Some(Format::OpenAiResponses)
    } else if path.ends_with("/messages") {
        Some(Format::Anthropic)
    } else {
        None
    }
}

impl fmt::Display for Turn {
    /// One line: `turn 1: POST /v1/chat/completions -> HTTP 200, 1234
    /// bytes in out/turn-001.sse (decodes as openai-chat)`, then the error
    /// if any.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "turn {}: {} {} -> ", self.number, self.method, self.path)?;
        match self.status {
            Some(status) => write!(f, "HTTP {status}, ")?,
            None => write!(f, "no response, ")?,
        }
        write!(f, "{} bytes", self.bytes)?;
        if let Some(recording) = &self.recording {
            write!(f, " in {}", recording.display())?;
        }
        match (&self.decoded, self.format) {
            (Some(Ok(())), Some(format)) => write!(f, " (decodes as {})", format.as_str())?,
            (Some(Err(DecodeError::ErrorBody { message, .. })), _) => {
                write!(f, " (an error body: {message})")?;
            }
            // Kept as it happened: a replay is the provider error the run
            // would have seen (S6).
            (Some(Err(e @ DecodeError::Truncated { .. })), Some(format)) => {
                write!(f, " (a cut {} stream: {e})", format.as_str())?;
            }
            (Some(Err(e)), Some(format)) => {
                write!(f, " (does not decode as {}: {e})", format.as_str())?;
            }
            _ => {}
        }
        if let Some(error) = &self.error {
            write!(f, "; error: {error}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_the_format() {
        assert_eq!(format_of("/v1/chat/completions"), Some(Format::OpenAiChat));
        assert_eq!(format_of("/v1/responses"), Some(Format::OpenAiResponses));
        assert_eq!(format_of("/v1/messages/"), Some(Format::Anthropic));
        assert_eq!(format_of("/v1/models"), None);
    }

    #[test]
    fn a_turn_is_one_line_naming_its_file_and_error() {
        let mut turn = Turn::new(3, "POST", "/v1/chat/completions");
        turn.status = Some(200);
        turn.bytes = 12;
        turn.recording = Some(PathBuf::from("out/turn-003.sse"));
        turn.decode(b"data: {\"choices\":[]}\n\n");
        turn.error = Some("the upstream connection failed mid-body".into());
        assert_eq!(
            turn.to_string(),
            "turn 3: POST /v1/chat/completions -> HTTP 200, 12 bytes in out/turn-003.sse \
             (a cut openai-chat stream: the stream was cut after 22 bytes, between events, after 1 events without data: [DONE]); \
             error: the upstream connection failed mid-body"
        );
    }
}
