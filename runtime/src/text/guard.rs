//! Stages that watch the text so far (SPEC S4, S5): an inspector that may
//! abort, and a guard that holds everything until the text is judged safe.

use crate::model::StreamPart;
use crate::stream::{Abort, Emit, StreamTransform};

/// A stream stage that shows `on_text` the whole text so far after each delta
/// and passes the delta on at once; `on_text` may return an abort (S4).
pub fn inspect_text_deltas<F>(on_text: F) -> Box<dyn StreamTransform>
where
    F: FnMut(&str) -> Option<Abort> + Send + 'static,
{
    Box::new(Inspector {
        seen: String::new(),
        on_text,
    })
}

struct Inspector<F> {
    seen: String,
    on_text: F,
}

impl<F: FnMut(&str) -> Option<Abort> + Send> StreamTransform for Inspector<F> {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        if let StreamPart::TextDelta(d) = &part {
            self.seen.push_str(d);
            if let Some(a) = (self.on_text)(&self.seen) {
                out.abort(a);
                return;
            }
        }
        out.part(part);
    }
}

/// What a buffering guard decides about the text so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Keep holding everything.
    Hold,
    /// Safe: release what is held and pass the rest through unjudged.
    Release,
    /// Unsafe: stop the stream with this abort; nothing held is released (SPEC
    /// S4, S5).
    Abort(Abort),
}

/// A stream stage that releases nothing until `judge` has judged the text
/// safe (SPEC S5). `judge` sees the text so far and whether the stream ended;
/// at the end, `Hold` counts as safe.
pub fn guard_text<F>(judge: F) -> Box<dyn StreamTransform>
where
    F: FnMut(&str, bool) -> Verdict + Send + 'static,
{
    Box::new(Guard {
        held: Vec::new(),
        seen: String::new(),
        released: false,
        judge,
    })
}

struct Guard<F> {
    held: Vec<StreamPart>,
    seen: String,
    released: bool,
    judge: F,
}

impl<F: FnMut(&str, bool) -> Verdict + Send> Guard<F> {
    fn decide(&mut self, at_end: bool, out: &mut Emit) {
        match (self.judge)(&self.seen, at_end) {
            Verdict::Hold if !at_end => {}
            Verdict::Hold | Verdict::Release => {
                self.released = true;
                for p in self.held.drain(..) {
                    out.part(p);
                }
            }
            Verdict::Abort(a) => {
                self.held.clear();
                out.abort(a);
            }
        }
    }
}

impl<F: FnMut(&str, bool) -> Verdict + Send> StreamTransform for Guard<F> {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        if self.released {
            out.part(part);
            return;
        }
        if let StreamPart::TextDelta(d) = &part {
            self.seen.push_str(d);
        }
        self.held.push(part);
        self.decide(false, out);
    }

    fn finish(&mut self, out: &mut Emit) {
        if !self.released {
            self.decide(true, out);
        }
    }
}
