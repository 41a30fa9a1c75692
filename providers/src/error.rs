//! What goes wrong decoding a provider stream: every bad stream is one of
//! these, located by the number of the SSE event (from 0) where it showed.

/// A stream that could not be decoded. Once a decoder has returned one, it
/// returns the same error from every later call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The body ended before the answer did: before its finish
    /// (`finish_reason`, `stop_reason`) and the format's terminal event
    /// (`[DONE]`, `message_stop`, `response.completed`, ...). A real
    /// dropped connection: `cut` says where the body stopped.
    #[error("the stream was cut after {bytes} bytes, {cut}, after {events} events without {expected}{}", describe_call(.open_call))]
    Truncated {
        /// The events decoded before the end.
        events: u64,
        /// The body's length.
        bytes: u64,
        /// Where the body stopped.
        cut: Cut,
        /// The terminal event the format requires.
        expected: &'static str,
        /// A tool call still being streamed when the body ended, if any.
        open_call: Option<String>,
    },
    /// An event's data is not JSON, or not the JSON the format promises.
    #[error("event {event} ({name}): {detail}")]
    Malformed {
        /// The event's number, from 0.
        event: u64,
        /// The event's type (its `event:` field, or the JSON `type`).
        name: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A tool call's assembled arguments are not one JSON value.
    #[error("event {event}: the arguments of tool call {call_id} ({tool}) are not JSON: {detail}")]
    ToolArguments {
        /// The event that closed the call.
        event: u64,
        /// The call's id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The JSON parser's complaint.
        detail: String,
    },
    /// The body holds bytes that are not UTF-8 (an event stream is UTF-8).
    #[error("the body is not UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// The offset of the first bad byte in the body.
        offset: u64,
    },
    /// The body is a JSON error (as an HTTP error response carries) where
    /// an event stream was expected.
    #[error("the provider answered with an error instead of a stream: {message}")]
    ErrorBody {
        /// The provider's message (or the whole body when it names none).
        message: String,
        /// The HTTP status the error stands for, where the body names one
        /// (a numeric `code`) or its type is one a provider documents with
        /// a status (Anthropic's `overloaded_error` is 529, OpenAI's
        /// `rate_limit_exceeded` 429, ...); a replay fails its attempt
        /// with it, so a retry hook can tell a 429 from a 400.
        status: Option<u16>,
    },
    /// The body is neither an event stream nor a JSON error.
    #[error("the body is not an event stream: {detail}")]
    NotAStream {
        /// Why not.
        detail: String,
    },
    /// An event came after the stream's terminal event.
    #[error("event {event} ({name}) came after the end of the stream")]
    AfterEnd {
        /// The event's number, from 0.
        event: u64,
        /// Its type.
        name: String,
    },
}

/// Where a cut body stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cut {
    /// Between two events: after a blank line, the last event whole.
    BetweenEvents,
    /// Inside an event: its lines began but the blank line that ends it
    /// never came, so it was lost.
    MidEvent,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cut::BetweenEvents => "between events",
            Cut::MidEvent => "mid-event",
        })
    }
}

fn describe_call(call: &Option<String>) -> String {
    match call {
        Some(call) => format!(" (tool call {call} never closed)"),
        None => String::new(),
    }
}
