//! W1 of BENCHMARKS.md, shared by the `stream` and `memory` benches:
//! 100,000 text deltas of 16 ASCII characters with 2,000 secrets that cross
//! delta boundaries, redacted through the full canonical pipeline (provider
//! stream → canonical transform → assembled, stored message).

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use pai_runtime::text::patterns;
use pai_runtime::{
    Agent, HookFuture, LanguageModel, ModelError, ModelRequest, Runtime, StreamPart, compose,
    model::{BoxStream, FinishReason, ModelMap, PartSink, PartStream},
    text::Pattern,
};
use sha2::{Digest, Sha256};

use crate::common::{self, CountingIds, StillClock};

pub const DELTAS: usize = 100_000;
const DELTA_LEN: usize = 16;
const FILLER: &[u8] = b"the quick brown fox jumps over the lazy dog ";
const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const INPUT_SHA256: &str = "0fc13997f0e2bdab86319b73ae6749d7917be99d284afb7e5e68a07622746b5b";
const OUTPUT_SHA256: &str = "9311d88791235b01bccba0e82889e03f39a00ea95f043ad0f6eadadb6d8f2747";
pub const OUTPUT_LEN: usize = 1_574_000;
pub const REPLACEMENT: &str = "[REDACTED]";

/// The 1,600,000-character input text, checked against its published hash.
pub fn input() -> String {
    let mut text: Vec<u8> = (0..DELTAS * DELTA_LEN)
        .map(|p| FILLER[p % FILLER.len()])
        .collect();
    for i in 0..2000 {
        let start = i * 800 + 400 + (i % 16);
        text[start - 1] = b' ';
        text[start..start + 3].copy_from_slice(b"sk-");
        for j in 0..20 {
            text[start + 3 + j] = ALPHA[(i * 7 + j * 13) % 62];
        }
        text[start + 23] = b' ';
    }
    let text = String::from_utf8(text).expect("ASCII");
    assert_eq!(sha256(&text), INPUT_SHA256, "W1 input");
    text
}

fn sha256(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The secret pattern of W1.
pub fn secret_patterns() -> Vec<Pattern> {
    patterns(&["sk-[A-Za-z0-9_-]+"]).expect("pattern")
}

/// The provider's parts: the deltas, then the finish. Built once and
/// shared by every run, as the peer builds its chunk array once: a run's
/// stream hands out each part in turn (a text delta of 16 bytes is inline,
/// so handing it out copies it and allocates nothing).
pub fn deltas(text: &str) -> Arc<[StreamPart]> {
    let mut parts: Vec<StreamPart> = Vec::with_capacity(DELTAS + 1);
    parts.extend(
        text.as_bytes()
            .chunks(DELTA_LEN)
            .map(|c| StreamPart::text(std::str::from_utf8(c).expect("ASCII"))),
    );
    parts.push(StreamPart::Finish(FinishReason::Stop));
    parts.into()
}

/// A stream over shared parts, from the first.
struct Replay {
    parts: Arc<[StreamPart]>,
    at: usize,
}

impl PartStream for Replay {
    fn poll_next(&mut self, _: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        let part = self.parts.get(self.at).cloned();
        self.at += 1;
        Poll::Ready(part)
    }

    fn poll_ready_parts(&mut self, _: &mut Context<'_>, sink: &mut dyn PartSink) -> Poll<bool> {
        while let Some(part) = self.parts.get(self.at) {
            self.at += 1;
            if !sink.part(part.clone()) {
                return Poll::Ready(false);
            }
        }
        Poll::Ready(true)
    }
}

/// A provider that streams the shared parts.
struct Prepared(Arc<[StreamPart]>);
impl LanguageModel for Prepared {
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        let stream = Replay {
            parts: Arc::clone(&self.0),
            at: 0,
        };
        HookFuture::ready(Ok(Box::new(stream) as BoxStream))
    }
}

/// One whole run: the provider streams the deltas, the canonical redactor
/// transforms them, the step is assembled and committed. Returns the stored text.
pub fn full_pipeline(
    rt: &tokio::runtime::Runtime,
    pats: &[Pattern],
    parts: &Arc<[StreamPart]>,
) -> String {
    timed_pipeline(rt, pats, parts).1
}

/// `full_pipeline`, and how long the run took: from the user's message
/// until the step is committed and the thread idle. Building the runtime
/// before, and reading the stored text back after (the check), are not
/// timed.
pub fn timed_pipeline(
    rt: &tokio::runtime::Runtime,
    pats: &[Pattern],
    parts: &Arc<[StreamPart]>,
) -> (Duration, String) {
    let agent = Agent::new("w1", "m").lifecycle(compose(vec![Box::new(common::redact(
        pats.to_vec(),
        REPLACEMENT,
    ))]));
    let runtime = Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", Arc::new(Prepared(Arc::clone(parts)))))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .expect("runtime");
    rt.block_on(async {
        let t = runtime.client("u").thread("t");
        let start = Instant::now();
        t.send("go").await.expect("send");
        t.wait_idle().await.expect("idle");
        let took = start.elapsed();
        let mut state = t.state().await.expect("state");
        (took, state.messages.swap_remove(1).into_text())
    })
}

/// Checks a run's stored text against the published output.
pub fn check_output(out: &str) {
    assert_eq!(out.len(), OUTPUT_LEN, "W1 output length");
    assert_eq!(sha256(out), OUTPUT_SHA256, "W1 output");
}

/// A current-thread Tokio runtime, as the benches drive the runtime.
pub fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio")
}
