//! What a stream stage emits into (SPEC S1, S4), a structured abort among
//! it, and what receives a pipeline's output. Built for the common case of one text delta in, one
//! text delta out: that delta is kept apart as a `Delta`, so passing it on
//! moves three words, not a whole `StreamPart`.

use crate::delta::Delta;
use crate::message::{Outcome, Part};
use crate::model::StreamPart;

/// A structured abort: the stream stops, `replacement` is stored instead, and
/// the run ends with `outcome` and `reason` (SPEC S4).
#[derive(Debug, Clone, PartialEq)]
pub struct Abort {
    /// Why the stream was aborted, in words: the run's end reason and the live
    /// watchers' abort reason.
    pub reason: String,
    /// How the run ends: usually [`Outcome::Blocked`] for a guard.
    pub outcome: Outcome,
    /// What is stored as the step's message instead of the aborted text (parts
    /// already released to watchers stay released).
    pub replacement: Vec<Part>,
}

/// Where a stage sends its output.
#[derive(Debug, Default)]
pub struct Emit {
    /// The output so far when it is exactly one text delta (then `parts` is
    /// empty); a later part moves it into `parts` first, so order holds.
    delta: Option<Delta>,
    parts: Vec<StreamPart>,
    abort: Option<Abort>,
}

impl Emit {
    /// Passes a part downstream.
    pub fn part(&mut self, part: StreamPart) {
        match part {
            StreamPart::TextDelta(d) => self.delta(d),
            other => {
                self.spill();
                self.parts.push(other);
            }
        }
    }

    /// Passes text downstream (nothing for empty text).
    pub fn text(&mut self, text: impl Into<Delta>) {
        let text = text.into();
        if !text.is_empty() {
            self.delta(text);
        }
    }

    /// Passes a text delta downstream, even an empty one.
    #[inline]
    pub(crate) fn delta(&mut self, d: Delta) {
        if self.delta.is_none() && self.parts.is_empty() {
            self.delta = Some(d);
        } else {
            self.spill();
            self.parts.push(StreamPart::TextDelta(d));
        }
    }

    fn spill(&mut self) {
        if let Some(d) = self.delta.take() {
            self.parts.push(StreamPart::TextDelta(d));
        }
    }

    /// Stops the stream with a structured decision; later parts are dropped.
    pub fn abort(&mut self, abort: Abort) {
        if self.abort.is_none() {
            self.abort = Some(abort);
        }
    }

    /// Whether a stage has aborted the stream: later parts are then dropped.
    pub fn aborted(&self) -> bool {
        self.abort.is_some()
    }

    /// What was emitted, in order (for driving a stage by hand, as in tests).
    pub fn into_parts(mut self) -> Vec<StreamPart> {
        self.spill();
        self.parts
    }

    /// Hands what was emitted to `sink`, in order; the buffer keeps its
    /// allocation for the next part.
    #[inline]
    pub(crate) fn drain_into(&mut self, sink: &mut impl Sink) {
        if let Some(d) = self.delta.take() {
            sink.text(d);
        } else if !self.parts.is_empty() {
            for p in self.parts.drain(..) {
                sink.part(p);
            }
        }
    }

    /// Drops what was emitted.
    pub(crate) fn discard(&mut self) {
        self.delta = None;
        self.parts.clear();
    }

    /// The abort raised, if any; what was emitted with it is dropped.
    #[inline]
    pub(crate) fn take_abort(&mut self) -> Option<Abort> {
        let abort = self.abort.take()?;
        self.discard();
        Some(abort)
    }
}

/// What receives a pipeline's output, in order.
pub(crate) trait Sink {
    fn part(&mut self, part: StreamPart);

    /// A text delta; by default passed on as a part.
    #[inline]
    fn text(&mut self, text: Delta) {
        self.part(StreamPart::TextDelta(text));
    }
}

impl<F: FnMut(StreamPart)> Sink for F {
    #[inline]
    fn part(&mut self, part: StreamPart) {
        self(part);
    }
}

/// A pipeline nested in a stage emits into that stage's output.
impl Sink for Emit {
    fn part(&mut self, part: StreamPart) {
        Emit::part(self, part);
    }

    fn text(&mut self, text: Delta) {
        self.delta(text);
    }
}
