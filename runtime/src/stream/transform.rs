//! Stream transforms (SPEC S1, S2, S4, L7): synchronous, push-based stages
//! between the provider stream and what is stored or shown.
//!
//! A stage receives one part at a time and emits zero or more parts; at the
//! end of the stream it may flush what it held back. Stages chain into a
//! pipeline (the first stage's output feeds the second, L7). A canonical
//! stage can abort the step with a structured decision (S4).

use std::fmt;

use super::emit::{Abort, Emit, Sink};
use crate::delta::Delta;
use crate::message::Part;
use crate::model::{StreamPart, StreamedCall};

/// One stage of a stream pipeline.
pub trait StreamTransform: Send {
    /// Receives one part (never `Finish` or `Error`: those end the stream and
    /// are handled by the runtime).
    fn push(&mut self, part: StreamPart, out: &mut Emit);

    /// The stream ended: release or drop whatever was held back.
    fn finish(&mut self, out: &mut Emit) {
        let _ = out;
    }

    /// Whether pushing the text delta `text` now would emit exactly that
    /// delta, unchanged, and nothing else, with no other effect. Then the
    /// runtime may pass the delta on without pushing it (without moving it
    /// through the stage). A stage may always answer `false` (the default).
    fn passes_text(&self, text: &str) -> bool {
        let _ = text;
        false
    }
}

/// Stages run in order over every part; buffers are reused, so a stream that
/// passes through costs no allocation per part in the pipeline itself.
pub(crate) struct Pipeline {
    stages: Vec<Box<dyn StreamTransform>>,
    /// One buffer between each pair of stages, and the output.
    buffers: Vec<Emit>,
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("stages", &self.stages.len())
            .finish()
    }
}

impl Pipeline {
    pub(crate) fn new(stages: Vec<Box<dyn StreamTransform>>) -> Pipeline {
        let buffers = (0..stages.len()).map(|_| Emit::default()).collect();
        Pipeline { stages, buffers }
    }

    /// Drops whatever the stages hold back: each stage is finished into a
    /// discarded buffer.
    pub(crate) fn reset(&mut self) {
        let _ = self.finish(&mut |_: StreamPart| {});
        for b in &mut self.buffers {
            let _ = b.take_abort();
            b.discard();
        }
    }

    /// Pushes one part through every stage; `sink` receives the output in
    /// order. Returns the first abort any stage raised.
    #[inline]
    pub(crate) fn push(&mut self, part: StreamPart, sink: &mut impl Sink) -> Option<Abort> {
        let Some(first) = self.stages.first_mut() else {
            sink.part(part);
            return None;
        };
        first.push(part, &mut self.buffers[0]);
        self.cascade(0, sink)
    }

    /// `push` of a text delta: stages that pass it as it is are skipped, and
    /// it moves as a `Delta` until one does not.
    #[inline(always)]
    pub(crate) fn push_text(&mut self, text: Delta, sink: &mut impl Sink) -> Option<Abort> {
        if let [only] = self.stages.as_mut_slice() {
            // The common case, one canonical stage, without the search.
            if only.passes_text(&text) {
                sink.text(text);
                return None;
            }
            only.push(StreamPart::TextDelta(text), &mut self.buffers[0]);
            return self.cascade(0, sink);
        }
        match self.stages.iter().position(|s| !s.passes_text(&text)) {
            None => {
                sink.text(text);
                None
            }
            Some(i) => {
                self.stages[i].push(StreamPart::TextDelta(text), &mut self.buffers[i]);
                self.cascade(i, sink)
            }
        }
    }

    /// Ends the stream: each stage flushes, in order, through the stages after it.
    pub(crate) fn finish(&mut self, sink: &mut impl Sink) -> Option<Abort> {
        for i in 0..self.stages.len() {
            self.stages[i].finish(&mut self.buffers[i]);
            if let Some(a) = self.cascade(i, sink) {
                return Some(a);
            }
        }
        None
    }

    /// Takes what stage `from` emitted through the later stages to `sink`;
    /// the first abort raised drops what its stage emitted.
    #[inline]
    fn cascade(&mut self, from: usize, sink: &mut impl Sink) -> Option<Abort> {
        let Pipeline { stages, buffers } = self;
        if let Some(a) = buffers[from].take_abort() {
            return Some(a);
        }
        for i in from + 1..stages.len() {
            let (before, after) = buffers.split_at_mut(i);
            let mut feed = Feed {
                stage: &mut *stages[i],
                out: &mut after[0],
                aborted: None,
            };
            before[i - 1].drain_into(&mut feed);
            if feed.aborted.is_some() {
                return feed.aborted;
            }
        }
        buffers[stages.len() - 1].drain_into(sink);
        None
    }
}

/// Feeds one stage's output to the next stage; after an abort the rest is
/// dropped.
struct Feed<'a> {
    stage: &'a mut dyn StreamTransform,
    out: &'a mut Emit,
    aborted: Option<Abort>,
}

impl Sink for Feed<'_> {
    fn part(&mut self, part: StreamPart) {
        if self.aborted.is_none() {
            self.stage.push(part, self.out);
            self.aborted = self.out.take_abort();
        }
    }
}

/// Runs finished parts (a `respond` or an abort replacement) through fresh
/// canonical stages (SPEC L12, S4); aborts raised here are ignored, since the
/// parts already are the final word.
pub(crate) fn transform_parts(
    stages: Vec<Box<dyn StreamTransform>>,
    parts: Vec<Part>,
) -> Vec<Part> {
    if stages.is_empty() {
        return parts;
    }
    let mut pipeline = Pipeline::new(stages);
    let mut out = Assembler::default();
    for part in parts {
        let sp = match part {
            Part::Text { text } => StreamPart::TextDelta(text.into()),
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => StreamPart::tool_call(call_id, tool, input),
            other => {
                // Results are not stream parts; they pass through unchanged,
                // after anything held back before them.
                let _ = pipeline.finish(&mut out);
                out.parts.push(other);
                continue;
            }
        };
        let _ = pipeline.push(sp, &mut out);
    }
    let _ = pipeline.finish(&mut out);
    out.into_parts()
}

/// Assembles stream parts into message parts: consecutive text deltas join
/// into one text part (amortized linear), tool calls stay in order.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    pub(crate) parts: Vec<Part>,
    text: String,
}

impl Assembler {
    #[inline]
    pub(crate) fn push_text(&mut self, d: Delta) {
        if self.text.is_empty() && d.is_heap() {
            // A long first text (a whole respond, say) is taken, not copied.
            self.text = d.into_string();
        } else {
            self.text.push_str(&d);
        }
    }

    pub(crate) fn push(&mut self, part: StreamPart) {
        match part {
            StreamPart::TextDelta(d) => self.push_text(d),
            StreamPart::ToolCall(call) => {
                let StreamedCall {
                    call_id,
                    tool,
                    input,
                } = *call;
                self.flush();
                self.parts.push(Part::ToolCall {
                    call_id,
                    tool,
                    input,
                });
            }
            // A text part ends: the next delta starts another (S6).
            StreamPart::TextEnd => self.flush(),
            StreamPart::Finish(_) | StreamPart::Error(_) | StreamPart::Refusal(_) => {}
        }
    }

    fn flush(&mut self) {
        if !self.text.is_empty() {
            self.parts.push(Part::Text {
                text: std::mem::take(&mut self.text),
            });
        }
    }

    pub(crate) fn into_parts(mut self) -> Vec<Part> {
        self.flush();
        self.parts
    }
}

impl Sink for Assembler {
    fn part(&mut self, part: StreamPart) {
        self.push(part);
    }

    #[inline]
    fn text(&mut self, text: Delta) {
        self.push_text(text);
    }
}

/// A pipeline is itself a stage, so compositions nest.
impl StreamTransform for Pipeline {
    fn passes_text(&self, text: &str) -> bool {
        self.stages.iter().all(|s| s.passes_text(text))
    }

    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        if let Some(a) = Pipeline::push(self, part, out) {
            out.abort(a);
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some(a) = Pipeline::finish(self, out) {
            out.abort(a);
        }
    }
}

/// Wraps a stage for finished parts (a response or an abort replacement): the
/// parts are the final word, so a stage that aborts them is bypassed (its
/// input passes on untouched) instead of dropping them. Only this one stage is
/// bypassed; the stages around it (a redactor) still apply.
pub(crate) struct NoAbort {
    inner: Box<dyn StreamTransform>,
    copies: Vec<StreamPart>,
    out: Vec<StreamPart>,
    aborted: bool,
}

impl NoAbort {
    pub(crate) fn wrap(inner: Box<dyn StreamTransform>) -> Box<dyn StreamTransform> {
        Box::new(NoAbort {
            inner,
            copies: Vec::new(),
            out: Vec::new(),
            aborted: false,
        })
    }
}

impl StreamTransform for NoAbort {
    fn push(&mut self, part: StreamPart, _out: &mut Emit) {
        self.copies.push(part.clone());
        if self.aborted {
            return;
        }
        let mut e = Emit::default();
        self.inner.push(part, &mut e);
        if e.aborted() {
            self.aborted = true;
        } else {
            self.out.extend(e.into_parts());
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if !self.aborted {
            let mut e = Emit::default();
            self.inner.finish(&mut e);
            if e.aborted() {
                self.aborted = true;
            } else {
                self.out.extend(e.into_parts());
            }
        }
        let parts = if self.aborted {
            std::mem::take(&mut self.copies)
        } else {
            std::mem::take(&mut self.out)
        };
        for p in parts {
            out.part(p);
        }
    }
}
