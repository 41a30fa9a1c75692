//! Stream transforms (SPEC S1, S2, S4, L7): synchronous, push-based stages
//! between the provider stream and what is stored or shown.
//!
//! A stage receives one part at a time and emits zero or more parts; at the
//! end of the stream it may flush what it held back. Stages chain into a
//! pipeline (the first stage's output feeds the second, L7). A canonical
//! stage can abort the step with a structured decision (S4).

use std::fmt;

use crate::message::{Outcome, Part};
use crate::model::StreamPart;

/// A structured abort: the stream stops, `replacement` is stored instead, and
/// the run ends with `outcome` and `reason` (SPEC S4).
#[derive(Debug, Clone, PartialEq)]
pub struct Abort {
    pub reason: String,
    pub outcome: Outcome,
    pub replacement: Vec<Part>,
}

/// Where a stage sends its output.
#[derive(Debug, Default)]
pub struct Emit {
    parts: Vec<StreamPart>,
    abort: Option<Abort>,
}

impl Emit {
    /// Passes a part downstream.
    pub fn part(&mut self, part: StreamPart) {
        self.parts.push(part);
    }

    /// Passes text downstream (nothing for empty text).
    pub fn text(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !text.is_empty() {
            self.parts.push(StreamPart::TextDelta(text));
        }
    }

    /// Stops the stream with a structured decision; later parts are dropped.
    pub fn abort(&mut self, abort: Abort) {
        if self.abort.is_none() {
            self.abort = Some(abort);
        }
    }

    pub fn aborted(&self) -> bool {
        self.abort.is_some()
    }

    /// What was emitted, in order (for driving a stage by hand, as in tests).
    pub fn into_parts(self) -> Vec<StreamPart> {
        self.parts
    }
}

/// One stage of a stream pipeline.
pub trait StreamTransform: Send {
    /// Receives one part (never `Finish` or `Error`: those end the stream and
    /// are handled by the runtime).
    fn push(&mut self, part: StreamPart, out: &mut Emit);

    /// The stream ended: release or drop whatever was held back.
    fn finish(&mut self, out: &mut Emit) {
        let _ = out;
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
        let _ = self.finish(&mut |_| {});
        for b in &mut self.buffers {
            b.parts.clear();
            b.abort = None;
        }
    }

    /// Pushes one part through every stage; `sink` receives the output in
    /// order. Returns the first abort any stage raised.
    pub(crate) fn push(
        &mut self,
        part: StreamPart,
        sink: &mut impl FnMut(StreamPart),
    ) -> Option<Abort> {
        if self.stages.is_empty() {
            sink(part);
            return None;
        }
        self.run(Some(part), 0, sink)
    }

    /// Ends the stream: each stage flushes, in order, through the stages after it.
    pub(crate) fn finish(&mut self, sink: &mut impl FnMut(StreamPart)) -> Option<Abort> {
        for i in 0..self.stages.len() {
            if let Some(a) = self.run(None, i, sink) {
                return Some(a);
            }
        }
        None
    }

    /// Feeds `input` (or, with `None`, the end of the stream) to stage `from`
    /// and everything it emits through the later stages.
    fn run(
        &mut self,
        input: Option<StreamPart>,
        from: usize,
        sink: &mut impl FnMut(StreamPart),
    ) -> Option<Abort> {
        let Pipeline { stages, buffers } = self;
        {
            let out = &mut buffers[from];
            match input {
                Some(p) => stages[from].push(p, out),
                None => stages[from].finish(out),
            }
            if let Some(a) = out.abort.take() {
                out.parts.clear();
                return Some(a);
            }
        }
        for i in from + 1..stages.len() {
            let (before, after) = buffers.split_at_mut(i);
            // Taken and put back so the buffer's allocation is reused.
            let mut input = std::mem::take(&mut before[i - 1].parts);
            let out = &mut after[0];
            let mut aborted = None;
            for p in input.drain(..) {
                stages[i].push(p, out);
                if let Some(a) = out.abort.take() {
                    out.parts.clear();
                    aborted = Some(a);
                    break;
                }
            }
            input.clear();
            before[i - 1].parts = input;
            if aborted.is_some() {
                return aborted;
            }
        }
        for p in buffers[stages.len() - 1].parts.drain(..) {
            sink(p);
        }
        None
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
            Part::Text { text } => StreamPart::TextDelta(text),
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => StreamPart::ToolCall {
                call_id,
                tool,
                input,
            },
            other => {
                // Results are not stream parts; they pass through unchanged,
                // after anything held back before them.
                let _ = pipeline.finish(&mut |p| out.push(p));
                out.parts.push(other);
                continue;
            }
        };
        let _ = pipeline.push(sp, &mut |p| out.push(p));
    }
    let _ = pipeline.finish(&mut |p| out.push(p));
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
    pub(crate) fn push(&mut self, part: StreamPart) {
        match part {
            StreamPart::TextDelta(d) => {
                if self.text.is_empty() {
                    self.text = d;
                } else {
                    self.text.push_str(&d);
                }
            }
            StreamPart::ToolCall {
                call_id,
                tool,
                input,
            } => {
                self.flush();
                self.parts.push(Part::ToolCall {
                    call_id,
                    tool,
                    input,
                });
            }
            StreamPart::Finish(_) | StreamPart::Error(_) => {}
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

/// A pipeline is itself a stage, so compositions nest.
impl StreamTransform for Pipeline {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        if let Some(a) = Pipeline::push(self, part, &mut |p| out.part(p)) {
            out.abort(a);
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if let Some(a) = Pipeline::finish(self, &mut |p| out.part(p)) {
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
            self.out.append(&mut e.parts);
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        if !self.aborted {
            let mut e = Emit::default();
            self.inner.finish(&mut e);
            if e.aborted() {
                self.aborted = true;
            } else {
                self.out.append(&mut e.parts);
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
