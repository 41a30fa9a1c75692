//! A recorded provider response replayed as a model's stream: the body is
//! fed to `pai-providers`' decoder in chunks of the script's size, lazily,
//! as the runtime polls, so the decoder meets the same chunk boundaries on
//! every run (D1). Each decoded tool call gets a seeded call id, as a
//! scripted one does: a recording's own ids repeat when it is replayed
//! twice in a thread, and ids are the world's to give (D1).
//!
//! A decode error met while streaming (the loader decoded every recording
//! whole, so only a decoder that broke its any-chunking promise gets here)
//! becomes a provider error part, ending the stream: the stream exists and
//! its earlier parts may be released to watchers already (S4), so it is
//! not a failed attempt that code around `next()` could retry (P7).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use pai_providers::Decoder;
use pai_runtime::{IdKind, IdSource, StreamPart, model::PartStream};

use super::seeded::SimIds;
use crate::scenario::Recording;

/// One recording's stream.
pub(super) struct ReplayStream {
    recording: Arc<Recording>,
    decoder: Option<Decoder>,
    /// The next byte of the body to feed.
    offset: usize,
    chunk: usize,
    ready: VecDeque<StreamPart>,
    delta_ms: u64,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
    ids: Arc<SimIds>,
}

impl ReplayStream {
    pub(super) fn new(
        recording: Arc<Recording>,
        chunk: Option<usize>,
        delta_ms: u64,
        ids: Arc<SimIds>,
    ) -> ReplayStream {
        let chunk = chunk.unwrap_or(recording.body.len()).max(1);
        ReplayStream {
            decoder: Some(Decoder::new(recording.format.decoder())),
            recording,
            offset: 0,
            chunk,
            ready: VecDeque::new(),
            delta_ms,
            sleep: None,
            ids,
        }
    }

    /// Feeds the next chunk (or ends the body); parts it completes join
    /// `ready`. Returns false once the decoder is done.
    fn refill(&mut self) -> bool {
        let Some(decoder) = self.decoder.as_mut() else {
            return false;
        };
        let body = &self.recording.body;
        let result = if self.offset < body.len() {
            let end = body.len().min(self.offset + self.chunk);
            let mut parts = Vec::new();
            let fed = decoder.feed(&body[self.offset..end], &mut parts);
            self.offset = end;
            for part in parts {
                self.ready.push_back(self.own_ids(part));
            }
            fed
        } else {
            let decoder = self.decoder.take().expect("checked above");
            decoder.finish().map(drop)
        };
        if let Err(e) = result {
            self.decoder = None;
            let file = &self.recording.file;
            self.ready
                .push_back(StreamPart::error(format!("recording {file}: {e}")));
        }
        true
    }

    /// A tool call with a seeded call id in place of the recorded one.
    fn own_ids(&self, part: StreamPart) -> StreamPart {
        match part {
            StreamPart::ToolCall(mut call) => {
                call.call_id = self.ids.next_id(IdKind::ToolCall).into();
                StreamPart::ToolCall(call)
            }
            other => other,
        }
    }
}

impl PartStream for ReplayStream {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        while self.ready.is_empty() {
            if !self.refill() {
                return Poll::Ready(None);
            }
        }
        if self.delta_ms > 0 && matches!(self.ready.front(), Some(StreamPart::TextDelta(_))) {
            let ms = self.delta_ms;
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(ms))));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        Poll::Ready(self.ready.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::task::Waker;

    use pai_runtime::model::FinishReason;

    use super::*;
    use crate::scenario::{RecordingKind, ReplayFormat};
    use crate::world::Rng;

    fn stream(body: &str, chunk: Option<usize>) -> Vec<StreamPart> {
        let recording = Recording {
            file: "x.sse".into(),
            format: ReplayFormat::OpenAiChat,
            body: body.as_bytes().into(),
            kind: RecordingKind::ErrorBody {
                message: String::new(),
                status: None,
            },
        };
        let ids = Arc::new(SimIds::new(Arc::new(Mutex::new(Rng::new(1)))));
        let mut s = ReplayStream::new(Arc::new(recording), chunk, 0, ids);
        let mut cx = Context::from_waker(Waker::noop());
        let mut out = Vec::new();
        while let Poll::Ready(Some(p)) = s.poll_next(&mut cx) {
            out.push(p);
        }
        out
    }

    const CHAT: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Grüße\"}}]}\n\n\
        data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
        data: [DONE]\n\n";

    /// Every chunk size gives the parts of the whole body.
    #[test]
    fn every_chunk_size_gives_the_same_parts() {
        let whole = stream(CHAT, None);
        assert_eq!(
            whole,
            [
                StreamPart::text("Grüße"),
                StreamPart::Finish(FinishReason::Stop)
            ]
        );
        for chunk in 1..CHAT.len() {
            assert_eq!(stream(CHAT, Some(chunk)), whole, "chunk {chunk}");
        }
    }

    /// A body cut before its finish ends in an error part naming the file
    /// and where it was cut, after the parts decoded before it (P7: the
    /// stream already exists; S6: a cut stream is the provider error the
    /// run sees). One cut after its finish is whole.
    #[test]
    fn p7_s6_a_cut_body_is_a_mid_stream_error_part_saying_where() {
        let finish = CHAT
            .find("data: {\"choices\":[{\"index\":0,\"delta\":{},")
            .unwrap();
        let parts = stream(&CHAT[..finish + 9], Some(7));
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[0], StreamPart::text("Grüße"));
        let StreamPart::Error(e) = &parts[1] else {
            panic!("{parts:?}")
        };
        let cut = format!(
            "recording x.sse: the stream was cut after {} bytes, mid-event",
            finish + 9
        );
        assert!(e.starts_with(&cut), "{e}");
        let whole = &CHAT[..CHAT.find("data: [DONE]").unwrap()];
        assert_eq!(stream(whole, Some(7)), stream(CHAT, None));
        let bad = CHAT.replace("\"stop\"}", "\"stop\"");
        let parts = stream(&bad, Some(5));
        assert!(
            matches!(parts.last(), Some(StreamPart::Error(_))),
            "{parts:?}"
        );
    }
}
