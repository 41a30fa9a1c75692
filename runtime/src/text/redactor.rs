//! The streaming redactor (SPEC S3): equal to the whole-text reference
//! `redact` for every chunking, holding back only a tail that may still
//! become a match. A delta in which no match can start passes on as the same
//! string, uncopied; otherwise the decided text is written back into the
//! delta's own buffer, so a stream costs no allocation per part here beyond
//! the growth a replacement or released held-back text needs.

use std::sync::Arc;

use super::pattern::Pattern;
use super::scan::{Found, Scanner};
use crate::delta::Delta;
use crate::model::StreamPart;
use crate::stream::{Emit, StreamTransform};

/// A stream stage that redacts `patterns` to `replacement` whatever the chunk
/// boundaries (SPEC S3). It holds back only a tail that could still become a
/// match (at most a pattern's prefix) and releases everything else at once;
/// once a class pattern's match is certain it releases the replacement and
/// drops the rest of the run as it arrives. Tool calls and other parts flush
/// the held-back text first, in order.
pub fn redact_text_deltas(
    patterns: Vec<Pattern>,
    replacement: impl Into<String>,
) -> Box<dyn StreamTransform> {
    Box::new(Redactor {
        rules: Rules {
            scanner: Scanner::new(Arc::from(patterns)),
            replacement: replacement.into(),
        },
        pending: String::new(),
        swallowing: None,
    })
}

/// What to find and what it becomes.
struct Rules {
    scanner: Scanner,
    replacement: String,
}

struct Redactor {
    rules: Rules,
    /// Held-back text: it starts where a match may still start. Its buffer
    /// is kept from part to part.
    pending: String,
    /// Inside a certain match of this pattern: its class run is dropped.
    swallowing: Option<usize>,
}

impl Rules {
    /// Writes to `out` what `text` decides, scanning from `from` (no match
    /// starts before it); returns where the tail to hold back starts.
    /// `swallowing` carries a certain match's class run across texts.
    fn release(
        &self,
        text: &str,
        mut from: usize,
        at_end: bool,
        swallowing: &mut Option<usize>,
        out: &mut Delta,
    ) -> usize {
        let b = text.as_bytes();
        // Released up to here.
        let mut done = 0;
        loop {
            if let Some(k) = *swallowing {
                from += self.scanner.pattern(k).class_run(&b[from..]);
                done = from;
                if from == b.len() && !at_end {
                    return from;
                }
                *swallowing = None;
            }
            match self.scanner.next(b, from, at_end) {
                None => {
                    out.push_str(&text[done..]);
                    return b.len();
                }
                Some(Found::Possible { at }) => {
                    out.push_str(&text[done..at]);
                    return at;
                }
                Some(Found::Match { at, pattern, len }) => {
                    out.push_str(&text[done..at]);
                    out.push_str(&self.replacement);
                    let p = self.scanner.pattern(pattern);
                    from = if p.has_class() {
                        *swallowing = Some(pattern);
                        at + p.prefix().len()
                    } else {
                        at + len
                    };
                    done = from;
                }
            }
        }
    }
}

impl Redactor {
    fn delta(&mut self, mut d: Delta, out: &mut Emit) {
        let mut from = 0;
        if self.pending.is_empty() && self.swallowing.is_none() {
            // The common case: no match can start in the delta: it passes
            // on as it is.
            match self.rules.scanner.next(d.as_bytes(), 0, false) {
                None => return out.delta(d),
                Some(Found::Possible { at } | Found::Match { at, .. }) => from = at,
            }
        }
        // The held-back text and the delta, scanned as one; what is decided
        // goes out in the delta's buffer.
        self.pending.push_str(&d);
        d.clear();
        self.release_into(d, from, false, out);
    }

    /// Scans `pending` from `from` into `buf`, keeps the undecided tail and
    /// releases the rest.
    fn release_into(&mut self, mut buf: Delta, from: usize, at_end: bool, out: &mut Emit) {
        let Redactor {
            rules,
            pending,
            swallowing,
        } = self;
        let hold = rules.release(pending, from, at_end, swallowing, &mut buf);
        pending.drain(..hold);
        out.text(buf);
    }

    /// Releases everything held back (the text so far is complete).
    fn flush(&mut self, out: &mut Emit) {
        if !self.pending.is_empty() {
            self.release_into(Delta::new(), 0, true, out);
        }
        self.swallowing = None;
    }
}

impl StreamTransform for Redactor {
    /// Nothing held back, and no match can start in the delta.
    fn passes_text(&self, text: &str) -> bool {
        self.pending.is_empty()
            && self.swallowing.is_none()
            && self.rules.scanner.next(text.as_bytes(), 0, false).is_none()
    }

    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        match part {
            StreamPart::TextDelta(d) => self.delta(d, out),
            other => {
                self.flush(out);
                out.part(other);
            }
        }
    }

    fn finish(&mut self, out: &mut Emit) {
        self.flush(out);
    }
}
