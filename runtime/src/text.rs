//! Text helpers for streams (SPEC S3, S4, S5): redaction that is correct for
//! every chunking, inspection of the text so far, and a buffering guard.

use std::fmt;
use std::sync::Arc;

use crate::model::StreamPart;
use crate::transform::{Abort, Emit, StreamTransform};

/// A pattern that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern {pattern:?}: {message}")]
pub struct PatternError {
    pub pattern: String,
    pub message: String,
}

/// A redaction pattern: a literal prefix, optionally followed by one or more
/// characters of an ASCII class, matched greedily: `sk-[A-Za-z0-9_-]+`,
/// `password`, `[0-9]+`. Backslash escapes a literal character. This is the
/// family of secret shapes the runtime can redact in a stream while holding
/// back no more than a pattern's prefix.
#[derive(Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
    prefix: Vec<u8>,
    /// `Some(set)`: the prefix is followed by a run of one or more bytes in the set.
    class: Option<Box<[bool; 256]>>,
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.source)
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// What can be said about a pattern at one position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// A match starts here; its first `len` bytes are certain (a class
    /// pattern's run may go on after them).
    Match {
        len: usize,
    },
    /// More text could still make a match start here.
    Possible,
    Dead,
}

impl Pattern {
    pub fn parse(source: &str) -> Result<Pattern, PatternError> {
        let err = |message: &str| PatternError {
            pattern: source.to_string(),
            message: message.to_string(),
        };
        let mut prefix = String::new();
        let mut chars = source.chars().peekable();
        let mut class = None;
        while let Some(c) = chars.next() {
            match c {
                '\\' => prefix.push(
                    chars
                        .next()
                        .ok_or_else(|| err("ends with a lone backslash"))?,
                ),
                '[' => {
                    let mut set = Box::new([false; 256]);
                    let mut members = Vec::new();
                    loop {
                        match chars.next() {
                            None => return Err(err("a class is not closed with ]")),
                            Some(']') => break,
                            Some('\\') => members.push(
                                chars
                                    .next()
                                    .ok_or_else(|| err("ends with a lone backslash"))?,
                            ),
                            Some(c) => members.push(c),
                        }
                    }
                    let mut i = 0;
                    while i < members.len() {
                        let (lo, hi) = if i + 2 < members.len() && members[i + 1] == '-' {
                            i += 3;
                            (members[i - 3], members[i - 1])
                        } else {
                            i += 1;
                            (members[i - 1], members[i - 1])
                        };
                        if !lo.is_ascii() || !hi.is_ascii() || lo > hi {
                            return Err(err(
                                "a class holds ASCII characters and ascending ranges only",
                            ));
                        }
                        for b in lo as u8..=hi as u8 {
                            set[b as usize] = true;
                        }
                    }
                    if chars.next() != Some('+') || chars.next().is_some() {
                        return Err(err("a class must be the last item, followed by +"));
                    }
                    class = Some(set);
                }
                '+' | '*' | '?' | '(' | ')' | '|' | '.' | '{' | '}' | '^' | '$' => {
                    return Err(err(
                        "only a literal prefix and one trailing [class]+ are supported",
                    ));
                }
                c => prefix.push(c),
            }
        }
        if prefix.is_empty() && class.is_none() {
            return Err(err("the pattern is empty"));
        }
        Ok(Pattern {
            source: source.to_string(),
            prefix: prefix.into_bytes(),
            class,
        })
    }

    fn in_class(&self, b: u8) -> bool {
        self.class.as_ref().is_some_and(|c| c[b as usize])
    }

    /// Whether a match of this pattern could start with byte `b`.
    fn can_start(&self, b: u8) -> bool {
        match self.prefix.first() {
            Some(&p) => p == b,
            None => self.in_class(b),
        }
    }

    fn status(&self, text: &[u8], at: usize, at_end: bool) -> Status {
        let rest = &text[at..];
        let p = &self.prefix;
        if rest.len() < p.len() || (self.class.is_some() && rest.len() == p.len()) {
            // Too short to decide: a prefix of the pattern may still grow into a match.
            let n = rest.len().min(p.len());
            return if !at_end && rest[..n] == p[..n] {
                Status::Possible
            } else {
                Status::Dead
            };
        }
        if &rest[..p.len()] != p.as_slice() {
            return Status::Dead;
        }
        match &self.class {
            None => Status::Match { len: p.len() },
            Some(c) if c[rest[p.len()] as usize] => Status::Match { len: p.len() + 1 },
            Some(_) => Status::Dead,
        }
    }

    /// Length of the whole match at `at`, text complete.
    fn match_len(&self, text: &[u8], at: usize) -> Option<usize> {
        match self.status(text, at, true) {
            Status::Match { len } if self.class.is_some() => {
                let run = text[at + len..]
                    .iter()
                    .take_while(|b| self.in_class(**b))
                    .count();
                Some(len + run)
            }
            Status::Match { len } => Some(len),
            _ => None,
        }
    }
}

/// Patterns parsed from strings.
pub fn patterns<S: AsRef<str>>(sources: &[S]) -> Result<Vec<Pattern>, PatternError> {
    sources.iter().map(|s| Pattern::parse(s.as_ref())).collect()
}

/// The reference: redacts a whole text at once. At each position the first
/// pattern (in order) that matches there wins, greedily; scanning resumes
/// after the match.
pub fn redact(text: &str, patterns: &[Pattern], replacement: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        if let Some(len) = patterns.iter().find_map(|p| p.match_len(b, i)) {
            out.push_str(&text[from..i]);
            out.push_str(replacement);
            i += len;
            from = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[from..]);
    out
}

/// Whether any pattern matches anywhere in `text`.
pub fn matches_any(text: &str, patterns: &[Pattern]) -> bool {
    let b = text.as_bytes();
    (0..b.len()).any(|i| patterns.iter().any(|p| p.match_len(b, i).is_some()))
}

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
    Box::new(Redactor::new(patterns.into(), replacement.into()))
}

struct Redactor {
    patterns: Arc<[Pattern]>,
    replacement: String,
    /// Bytes that can start a match.
    starts: [bool; 256],
    /// Held-back text: it starts where a match may still start.
    pending: String,
    /// Inside a certain match of this pattern: its class run is dropped.
    swallowing: Option<usize>,
}

impl Redactor {
    fn new(patterns: Arc<[Pattern]>, replacement: String) -> Redactor {
        let mut starts = [false; 256];
        for (b, s) in starts.iter_mut().enumerate() {
            *s = patterns.iter().any(|p| p.can_start(b as u8));
        }
        Redactor {
            patterns,
            replacement,
            starts,
            pending: String::new(),
            swallowing: None,
        }
    }

    /// Processes `text` (held-back text plus new text); releases what is
    /// decided and keeps the rest in `pending`. Text that needs no change is
    /// released as the same string, without copying.
    fn process(&mut self, text: String, at_end: bool, out: &mut Emit) {
        let mut released = String::new();
        let mut whole = false;
        {
            let b = text.as_bytes();
            let mut i = 0;
            let mut from = 0;
            loop {
                if let Some(k) = self.swallowing {
                    let p = &self.patterns[k];
                    while i < b.len() && p.in_class(b[i]) {
                        i += 1;
                    }
                    from = i;
                    if i == b.len() && !at_end {
                        break;
                    }
                    self.swallowing = None;
                }
                let Some(j) = (i..b.len()).find(|&j| self.starts[b[j] as usize]) else {
                    if from == 0 && released.is_empty() {
                        whole = true;
                    } else {
                        released.push_str(&text[from..]);
                    }
                    break;
                };
                let decided = self.patterns.iter().enumerate().find_map(|(k, p)| {
                    match p.status(b, j, at_end) {
                        Status::Dead => None,
                        s => Some((k, s)),
                    }
                });
                match decided {
                    Some((k, Status::Match { len })) => {
                        released.push_str(&text[from..j]);
                        released.push_str(&self.replacement);
                        let p = &self.patterns[k];
                        i = j + if p.class.is_some() {
                            p.prefix.len()
                        } else {
                            len
                        };
                        from = i;
                        if p.class.is_some() {
                            self.swallowing = Some(k);
                        }
                    }
                    Some((_, _possible)) => {
                        released.push_str(&text[from..j]);
                        self.pending.push_str(&text[j..]);
                        break;
                    }
                    None => i = j + 1,
                }
            }
        }
        if self.swallowing.is_some() && at_end {
            self.swallowing = None;
        }
        out.text(if whole { text } else { released });
    }

    fn flush(&mut self, out: &mut Emit) {
        let pending = std::mem::take(&mut self.pending);
        self.process(pending, true, out);
        self.swallowing = None;
    }
}

impl StreamTransform for Redactor {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        match part {
            StreamPart::TextDelta(d) => {
                // The common case: nothing held, no match in progress, and no
                // byte that could start one: the delta passes as it is.
                if self.pending.is_empty()
                    && self.swallowing.is_none()
                    && !d.bytes().any(|b| self.starts[b as usize])
                {
                    out.part(StreamPart::TextDelta(d));
                    return;
                }
                if self.pending.is_empty() {
                    self.process(d, false, out);
                } else {
                    let mut text = std::mem::take(&mut self.pending);
                    text.push_str(&d);
                    self.process(text, false, out);
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transform::Pipeline;

    fn run(stage: Box<dyn StreamTransform>, chunks: &[&str]) -> String {
        let mut p = Pipeline::new(vec![stage]);
        let mut out = String::new();
        let mut sink = |part: StreamPart| {
            if let StreamPart::TextDelta(t) = part {
                out.push_str(&t);
            }
        };
        for c in chunks {
            assert!(
                p.push(StreamPart::TextDelta((*c).to_string()), &mut sink)
                    .is_none()
            );
        }
        assert!(p.finish(&mut sink).is_none());
        out
    }

    fn sk() -> Vec<Pattern> {
        patterns(&["sk-[A-Za-z0-9_-]+"]).unwrap()
    }

    #[test]
    fn s3_secret_split_across_three_deltas() {
        let out = run(
            redact_text_deltas(sk(), "[REDACTED]"),
            &["key s", "k-abc", "DEF more"],
        );
        assert_eq!(out, "key [REDACTED] more");
    }

    #[test]
    fn literal_and_class_only_patterns() {
        let p = patterns(&["password", "[0-9]+"]).unwrap();
        assert_eq!(redact("my password is 1234!", &p, "#"), "my # is #!");
        let out = run(
            redact_text_deltas(p, "#"),
            &["my pass", "word is 12", "34!"],
        );
        assert_eq!(out, "my # is #!");
    }

    #[test]
    fn first_pattern_in_order_wins_at_a_position() {
        let p = patterns(&["sk-live-[a-z]+", "sk-[a-z]+"]).unwrap();
        assert_eq!(redact("sk-live-abc sk-xyz", &p, "L"), "L L");
        let out = run(
            redact_text_deltas(p.clone(), "L"),
            &["sk-l", "ive-abc sk-", "xyz"],
        );
        assert_eq!(out, "L L");
        let q = patterns(&["sk-[a-z]+", "sk-live-[a-z]+"]).unwrap();
        assert_eq!(redact("sk-live-abc", &q, "R"), "R-abc");
    }

    #[test]
    fn a_prefix_without_its_class_char_is_not_a_match() {
        assert_eq!(redact("sk- sk-", &sk(), "X"), "sk- sk-");
        assert_eq!(run(redact_text_deltas(sk(), "X"), &["a sk", "-"]), "a sk-");
    }

    #[test]
    fn a_literal_pattern_matches_at_the_very_end() {
        let ps = patterns(&["abc"]).unwrap();
        assert_eq!(redact("say abc", &ps, "X"), "say X");
        assert_eq!(
            run(redact_text_deltas(ps.clone(), "X"), &["say a", "bc"]),
            "say X"
        );
        assert!(matches_any("say abc", &ps));
        assert!(!matches_any("say ab", &ps));
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert!(Pattern::parse("a.*").is_err());
        assert!(Pattern::parse("[a-z]").is_err());
        assert!(Pattern::parse("[z-a]+").is_err());
        assert!(
            Pattern::parse("[bz-a]+").is_err(),
            "a descending range beside a valid member"
        );
        assert!(
            Pattern::parse("[a-é]+").is_err(),
            "a range ending outside ASCII"
        );
        assert!(
            Pattern::parse("[é-z]+").is_err(),
            "a range starting outside ASCII"
        );
        assert!(Pattern::parse("").is_err());
    }

    #[test]
    fn s5_guard_holds_until_judged() {
        let mut p = Pipeline::new(vec![guard_text(|t: &str, _| {
            if t.len() >= 6 {
                Verdict::Release
            } else {
                Verdict::Hold
            }
        })]);
        let mut got = 0;
        assert!(
            p.push(StreamPart::TextDelta("abc".into()), &mut |_: StreamPart| {
                got += 1
            })
            .is_none()
        );
        assert_eq!(got, 0, "nothing is released before the verdict");
        assert!(
            p.push(StreamPart::TextDelta("def".into()), &mut |_: StreamPart| {
                got += 1
            })
            .is_none()
        );
        assert_eq!(got, 2);
    }
}
