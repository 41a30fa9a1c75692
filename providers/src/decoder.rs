//! The decoder: bytes in arbitrary chunks → UTF-8 check and error-body
//! sniffing → the SSE parser (`sse-parse`) → the format's event decoder →
//! stream parts, with a report beside them.

use pai_runtime::StreamPart;
use sse_parse::SseParser;

use crate::anthropic::{self, Anthropic};
use crate::body::{Boundary, Sniff, Utf8Check};
use crate::error::{Cut, DecodeError};
use crate::event::{Flow, Out, Raw};
use crate::openai_chat::{self, Chat};
use crate::openai_responses::{self, Responses};
use crate::report::StreamReport;

/// A provider's streaming format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenAI-compatible Chat Completions (`stream: true`): OpenAI, vLLM,
    /// llama.cpp's server, Ollama's OpenAI endpoint.
    OpenAiChat,
    /// The OpenAI Responses API (`stream: true`).
    OpenAiResponses,
    /// Anthropic Messages (`stream: true`).
    Anthropic,
}

impl Format {
    /// The format's name as recordings are filed under it
    /// (`openai-chat`, `openai-responses`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAiChat => "openai-chat",
            Format::OpenAiResponses => "openai-responses",
            Format::Anthropic => "anthropic",
        }
    }

    fn terminal(self) -> &'static str {
        match self {
            Format::OpenAiChat => openai_chat::TERMINAL,
            Format::OpenAiResponses => openai_responses::TERMINAL,
            Format::Anthropic => anthropic::TERMINAL,
        }
    }
}

/// The format-specific decoder.
#[derive(Debug)]
enum Dialect {
    Chat(Chat),
    Responses(Responses),
    Anthropic(Anthropic),
}

impl Dialect {
    fn event(&mut self, raw: &Raw<'_>, out: &mut Out<'_>) -> Result<Flow, DecodeError> {
        match self {
            Dialect::Chat(d) => d.event(raw, out),
            Dialect::Responses(d) => d.event(raw, out),
            Dialect::Anthropic(d) => d.event(raw, out),
        }
    }

    fn is_terminal(&self, raw: &Raw<'_>) -> bool {
        match self {
            Dialect::Chat(_) => Chat::is_terminal(raw),
            Dialect::Responses(_) => Responses::is_terminal(raw),
            Dialect::Anthropic(_) => Anthropic::is_terminal(raw),
        }
    }

    fn open_call(&self) -> Option<String> {
        match self {
            Dialect::Chat(d) => d.open_call(),
            Dialect::Responses(d) => d.open_call(),
            Dialect::Anthropic(d) => d.open_call(),
        }
    }
}

/// Decodes one response body, fed in chunks as they arrive, into stream
/// parts. Parts come out of [`feed`](Decoder::feed) as soon as their event
/// is complete; [`finish`](Decoder::finish) checks the stream ended well
/// and returns the [`StreamReport`]. Any chunking of a body gives the same
/// parts, report and error.
///
/// A provider's failure reported inside the stream is a
/// [`StreamPart::Error`] (the stream then ends well); a stream that is
/// itself broken is a [`DecodeError`].
#[derive(Debug)]
pub struct Decoder {
    format: Format,
    utf8: Utf8Check,
    sniff: Sniff,
    sse: SseParser,
    /// Whether the body so far ends inside an event, for a cut's report.
    boundary: Boundary,
    bytes: u64,
    dialect: Dialect,
    report: StreamReport,
    events: u64,
    /// Events the format knew (not skipped as unknown).
    known: u64,
    flow: Flow,
    error: Option<DecodeError>,
}

impl Decoder {
    /// A decoder for one body in `format`.
    pub fn new(format: Format) -> Decoder {
        let dialect = match format {
            Format::OpenAiChat => Dialect::Chat(Chat::default()),
            Format::OpenAiResponses => Dialect::Responses(Responses::default()),
            Format::Anthropic => Dialect::Anthropic(Anthropic::default()),
        };
        Decoder {
            format,
            utf8: Utf8Check::default(),
            sniff: Sniff::default(),
            sse: SseParser::new(),
            boundary: Boundary::default(),
            bytes: 0,
            dialect,
            report: StreamReport::default(),
            events: 0,
            known: 0,
            flow: Flow::Continue,
            error: None,
        }
    }

    /// The format this decoder reads.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The report so far (skipped events are counted as they come).
    pub fn report(&self) -> &StreamReport {
        &self.report
    }

    /// Takes the next chunk of the body; appends the parts it completed.
    pub fn feed(&mut self, bytes: &[u8], parts: &mut Vec<StreamPart>) -> Result<(), DecodeError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let result = self.feed_inner(bytes, parts);
        if let Err(error) = &result {
            self.error = Some(error.clone());
        }
        result
    }

    fn feed_inner(&mut self, bytes: &[u8], parts: &mut Vec<StreamPart>) -> Result<(), DecodeError> {
        self.utf8.check(bytes)?;
        self.bytes += bytes.len() as u64;
        let bytes = self.sniff.take(bytes)?;
        self.boundary.feed(bytes);
        self.sse.feed(bytes);
        while let Some(event) = self.sse.next_event() {
            self.event(&event, parts)?;
        }
        Ok(())
    }

    fn event(
        &mut self,
        event: &sse_parse::Event,
        parts: &mut Vec<StreamPart>,
    ) -> Result<(), DecodeError> {
        let raw = Raw {
            index: self.events,
            name: &event.event,
            data: &event.data,
        };
        self.events += 1;
        let after_end = match self.flow {
            Flow::End => true,
            Flow::Failed => !self.dialect.is_terminal(&raw),
            Flow::Continue | Flow::Finished => false,
        };
        if after_end {
            return Err(DecodeError::AfterEnd {
                event: raw.index,
                name: raw.name.to_owned(),
            });
        }
        if self.flow == Flow::Failed {
            self.flow = Flow::End;
            return Ok(());
        }
        let mut out = Out {
            parts,
            report: &mut self.report,
            foreign: false,
        };
        self.flow = self.dialect.event(&raw, &mut out)?;
        self.known += u64::from(!out.foreign);
        Ok(())
    }

    /// The body ended: appends nothing more but checks it ended well (a
    /// terminal event, the answer's finish, or a provider error part), and
    /// returns the report. A body that ends before its answer finished is
    /// [`DecodeError::Truncated`], saying where it was cut.
    pub fn finish(mut self) -> Result<StreamReport, DecodeError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        self.utf8.finish()?;
        self.sniff.finish()?;
        self.sse.finish();
        let cut = self.sse.next_event().is_some() || self.flow == Flow::Continue;
        if cut && self.events > 0 && self.known == 0 {
            // Not a cut stream of this format: none of its events is one.
            return Err(DecodeError::NotAStream {
                detail: format!(
                    "none of its {} events is a {} event",
                    self.events,
                    self.format.as_str()
                ),
            });
        }
        if cut {
            return Err(DecodeError::Truncated {
                events: self.events,
                bytes: self.bytes,
                cut: match self.boundary.mid_event() {
                    true => Cut::MidEvent,
                    false => Cut::BetweenEvents,
                },
                expected: self.format.terminal(),
                open_call: self.dialect.open_call(),
            });
        }
        if self.flow == Flow::Finished {
            // As the provider's SDK reads it: the answer is whole.
            let cut = match self.boundary.mid_event() {
                true => ", the last event cut",
                false => "",
            };
            self.report.note(format!(
                "the body ended after the finish without {}{cut}",
                self.format.terminal()
            ));
        }
        Ok(self.report)
    }
}

/// A whole body decoded: its parts and the report beside them.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The stream parts, in order.
    pub parts: Vec<StreamPart>,
    /// Usage, the provider's stop reason, a refusal, skipped events.
    pub report: StreamReport,
}

/// Decodes a whole body (a recording) at once.
pub fn decode(format: Format, body: &[u8]) -> Result<Decoded, DecodeError> {
    let mut decoder = Decoder::new(format);
    let mut parts = Vec::new();
    decoder.feed(body, &mut parts)?;
    let report = decoder.finish()?;
    Ok(Decoded { parts, report })
}
