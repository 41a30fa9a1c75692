//! Decoders from real model providers' streaming responses to
//! [`pai_runtime::StreamPart`]s.
//!
//! A response body — the raw bytes of a `text/event-stream`, exactly as
//! `curl -N` prints them — is fed to a [`Decoder`] in whatever chunks the
//! network delivers; out come text deltas, tool calls (their arguments
//! assembled from fragments and parsed as JSON once whole), a finish part,
//! or a provider's error part. Usage, the provider's own stop reason, a
//! refusal and the events skipped (counted by type) come beside the parts
//! in a [`StreamReport`].
//!
//! Three formats ([`Format`]): OpenAI-compatible Chat Completions, the
//! OpenAI Responses API and Anthropic Messages.
//!
//! With the cargo feature `http`, [`HttpModel`] is the runtime's model
//! over HTTP in any of the three formats: requests built from the
//! runtime's `ModelRequest`, bodies streamed through these decoders.
//! With the feature `record`, [`Recorder`] is a recording proxy that
//! writes each response body streamed through it to a file, for the
//! simulator to replay.
//!
//! A provider stream means what the provider's own SDK reads from it
//! (SPEC S6): a refusal or a content filter is a finish of its own after
//! the provider's words ([`StreamPart::Refusal`](pai_runtime::StreamPart));
//! a response's separate output items stay apart
//! ([`StreamPart::TextEnd`](pai_runtime::StreamPart)); a body that ends
//! after its answer finished but without its terminal event is whole.
//!
//! Bad streams are [`DecodeError`]s, never panics or silent loss: a body
//! cut before its answer finished ([`DecodeError::Truncated`], saying
//! where: mid-event or between events, [`Cut`]), an event whose JSON is
//! malformed, a tool call whose arguments are not JSON, bytes that are not
//! UTF-8, a JSON error body where a stream was expected (with the HTTP
//! status its error stands for). Any chunking of a body decodes to the
//! same parts.
//!
//! ```
//! use pai_providers::{Format, decode};
//! use pai_runtime::{StreamPart, model::FinishReason};
//!
//! let body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\
//!              data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
//!              data: [DONE]\n\n";
//! let decoded = decode(Format::OpenAiChat, body).unwrap();
//! assert_eq!(
//!     decoded.parts,
//!     [StreamPart::text("Hi"), StreamPart::Finish(FinishReason::Stop)]
//! );
//! ```
#![warn(missing_docs)]

mod anthropic;
mod body;
mod calls;
mod decoder;
mod error;
mod event;
#[cfg(feature = "http")]
mod http;
mod openai_chat;
mod openai_responses;
#[cfg(feature = "record")]
mod record;
mod report;
mod samples;

pub use decoder::{Decoded, Decoder, Format, decode};
pub use error::{Cut, DecodeError};
#[cfg(feature = "http")]
pub use http::{HttpConfig, HttpError, HttpModel};
#[cfg(feature = "record")]
pub use record::{RecordConfig, RecordError, Recorder, Turn};
pub use report::{StreamReport, Usage};
pub use samples::{SAMPLES, Sample, sample};
