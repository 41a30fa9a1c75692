//! Redaction patterns (SPEC S3): a literal prefix and an optional trailing
//! `[class]+`, what can be said about one at a position of a text, and the
//! whole-text reference redaction the streaming stage must equal.

use std::fmt;

/// A pattern that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pattern {pattern:?}: {message}")]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What is wrong with it, in words.
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
pub(super) enum Status {
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
    /// Parses a pattern as written (`sk-[A-Za-z0-9_-]+`); a pattern this family
    /// cannot express (an empty one, a class not at the end, a bad escape) is
    /// an error.
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

    /// The literal prefix.
    pub(super) fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Whether a run of class bytes follows the prefix.
    pub(super) fn has_class(&self) -> bool {
        self.class.is_some()
    }

    /// How many bytes at the start of `text` are in the class.
    pub(super) fn class_run(&self, text: &[u8]) -> usize {
        match &self.class {
            Some(c) => text.iter().take_while(|b| c[**b as usize]).count(),
            None => 0,
        }
    }

    /// Whether a match of this pattern could start with byte `b`.
    pub(super) fn can_start(&self, b: u8) -> bool {
        match self.prefix.first() {
            Some(&p) => p == b,
            None => self.in_class(b),
        }
    }

    /// What can be said about a match starting at `at`; `at_end`: no more
    /// text will come.
    pub(super) fn status(&self, text: &[u8], at: usize, at_end: bool) -> Status {
        let rest = &text[at..];
        let p = &self.prefix;
        let n = rest.len().min(p.len());
        // Prefixes are short: a byte loop beats a call to `memcmp`.
        if !rest[..n].iter().zip(&p[..n]).all(|(a, b)| a == b) {
            return Status::Dead;
        }
        if rest.len() < p.len() || (self.class.is_some() && rest.len() == p.len()) {
            // Too short to decide: a prefix of the pattern may still grow into a match.
            return if at_end {
                Status::Dead
            } else {
                Status::Possible
            };
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
            Status::Match { len } => Some(len + self.class_run(&text[at + len..])),
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
