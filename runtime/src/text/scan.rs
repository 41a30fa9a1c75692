//! Finding where a redaction pattern may match (SPEC S3): a search for the
//! bytes that can start a match (up to three of them with `Needles`, a
//! table beyond), then the patterns in order at each candidate.

use std::sync::Arc;

use super::needles::Needles;
use super::pattern::{Pattern, Status};

/// The bytes that can start a match of some pattern.
#[derive(Debug, Clone)]
enum Starts {
    Nothing,
    One(Needles<1>),
    Two(Needles<2>),
    Three(Needles<3>),
    Table(Box<[bool; 256]>),
}

impl Starts {
    fn new(patterns: &[Pattern]) -> Starts {
        let pairs: Vec<(u8, Option<u8>)> = (0..=255u8)
            .filter(|&b| patterns.iter().any(|p| p.can_start(b)))
            .map(|b| (b, second_byte(patterns, b)))
            .collect();
        match *pairs.as_slice() {
            [] => Starts::Nothing,
            [a] => Starts::One(Needles::new([a])),
            [a, b] => Starts::Two(Needles::new([a, b])),
            [a, b, c] => Starts::Three(Needles::new([a, b, c])),
            _ => {
                let mut table = Box::new([false; 256]);
                for (b, _) in pairs {
                    table[b as usize] = true;
                }
                Starts::Table(table)
            }
        }
    }

    /// A position before which no match can start (`None`: none can start
    /// anywhere); a match need not start there.
    #[inline(always)]
    fn find(&self, text: &[u8]) -> Option<usize> {
        match self {
            Starts::Nothing => None,
            Starts::One(n) => n.find(text),
            Starts::Two(n) => n.find(text),
            Starts::Three(n) => n.find(text),
            Starts::Table(t) => text.iter().position(|b| t[*b as usize]),
        }
    }
}

/// The byte that every match starting with `first` has next, if there is
/// one: the second byte of the literal prefix of every pattern that can
/// start with it.
fn second_byte(patterns: &[Pattern], first: u8) -> Option<u8> {
    let mut seconds = patterns
        .iter()
        .filter(|p| p.can_start(first))
        .map(|p| match p.prefix() {
            [_, second, ..] => Some(*second),
            _ => None,
        });
    let second = seconds.next()??;
    seconds.all(|s| s == Some(second)).then_some(second)
}

/// The first position, from some point on, where a match starts or may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// More text could still make a match start at `at`: hold from here.
    Possible { at: usize },
    /// `pattern` matches at `at`; its first `len` bytes are certain.
    Match {
        at: usize,
        pattern: usize,
        len: usize,
    },
}

/// The patterns, in order, with the bytes that can start them.
#[derive(Debug, Clone)]
pub(super) struct Scanner {
    patterns: Arc<[Pattern]>,
    starts: Starts,
}

impl Scanner {
    pub(super) fn new(patterns: Arc<[Pattern]>) -> Scanner {
        let starts = Starts::new(&patterns);
        Scanner { patterns, starts }
    }

    pub(super) fn pattern(&self, k: usize) -> &Pattern {
        &self.patterns[k]
    }

    /// The first position at or after `from` where the first pattern (in
    /// order) that is not ruled out there matches or may still match;
    /// `None`: no match can start anywhere from `from` on.
    #[inline(always)]
    pub(super) fn next(&self, text: &[u8], from: usize, at_end: bool) -> Option<Found> {
        let off = self.starts.find(&text[from..])?;
        self.next_at(text, from + off, at_end)
    }

    /// `next` from a byte that can start a match.
    #[inline(never)]
    fn next_at(&self, text: &[u8], mut at: usize, at_end: bool) -> Option<Found> {
        loop {
            if let Some(found) = self.decide(text, at, at_end) {
                return Some(found);
            }
            at += 1 + self.starts.find(&text[at + 1..])?;
        }
    }

    /// What the first pattern that is not ruled out at `at` says.
    fn decide(&self, text: &[u8], at: usize, at_end: bool) -> Option<Found> {
        self.patterns
            .iter()
            .enumerate()
            .find_map(|(pattern, p)| match p.status(text, at, at_end) {
                Status::Dead => None,
                Status::Possible => Some(Found::Possible { at }),
                Status::Match { len } => Some(Found::Match { at, pattern, len }),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::patterns;

    fn scanner(sources: &[&str]) -> Scanner {
        Scanner::new(patterns(sources).unwrap().into())
    }

    fn firsts(s: &Scanner) -> Vec<u8> {
        match &s.starts {
            Starts::Nothing => Vec::new(),
            Starts::One(n) => n.firsts().to_vec(),
            Starts::Two(n) => n.firsts().to_vec(),
            Starts::Three(n) => n.firsts().to_vec(),
            Starts::Table(_) => vec![0],
        }
    }

    #[test]
    fn start_bytes_pick_the_search() {
        assert_eq!(firsts(&scanner(&["sk-[a-z]+"])), b"s");
        assert_eq!(firsts(&scanner(&["sk-[a-z]+", "ghp_[a-z]+"])), b"gs");
        assert_eq!(firsts(&scanner(&["a", "b", "c"])), b"abc");
        assert!(matches!(scanner(&["[0-9]+"]).starts, Starts::Table(_)));
        assert!(matches!(scanner(&["[]+"]).starts, Starts::Nothing));
    }

    #[test]
    fn a_second_byte_is_required_only_when_every_match_has_it() {
        let second = |sources: &[&str], b: u8| second_byte(&patterns(sources).unwrap(), b);
        assert_eq!(second(&["sk-[a-z]+"], b's'), Some(b'k'));
        assert_eq!(second(&["sk-[a-z]+", "sk-live"], b's'), Some(b'k'));
        assert_eq!(second(&["sk-[a-z]+", "sa"], b's'), None);
        assert_eq!(second(&["sk-[a-z]+", "s"], b's'), None);
        assert_eq!(second(&["s[a-z]+"], b's'), None);
        assert_eq!(second(&["sk", "[rs]+"], b's'), None);
        assert_eq!(second(&["sk", "[rs]+"], b'r'), None);
        assert_eq!(second(&["é-"], 0xc3), Some(0xa9));
    }

    #[test]
    fn next_is_the_first_decided_position_in_every_short_text() {
        let sets: &[&[&str]] = &[
            &["sk-[a-z]+"],
            &["sk-[a-z]+", "ks"],
            &["ss-", "s", "[-]+"],
            &["k-a", "ké", "é[a]+"],
        ];
        let alphabet: &[&str] = &["s", "k", "-", "a", "é", " "];
        for sources in sets {
            let s = scanner(sources);
            for len in 0..=5u32 {
                for code in 0..alphabet.len().pow(len) {
                    let mut c = code;
                    let text: String = (0..len)
                        .map(|_| {
                            let ch = alphabet[c % alphabet.len()];
                            c /= alphabet.len();
                            ch
                        })
                        .collect();
                    let b = text.as_bytes();
                    for at_end in [false, true] {
                        for from in 0..=b.len() {
                            let want = (from..b.len()).find_map(|j| s.decide(b, j, at_end));
                            assert_eq!(s.next(b, from, at_end), want, "{sources:?} {text:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_search_finds_the_first_lone_start_byte() {
        let cases: &[&[&str]] = &[&["b"], &["b", "d"], &["b", "d", "f"], &["[bdf-h]+"]];
        // Fillers beside the needles that a word-at-a-time test could
        // mistake for one (a borrow out of a 0x00 or 0x01 byte, a needle's
        // neighbours, bytes with the high bit set).
        let fillers = [b'a', 0x00, 0x01, b'c', b'e', 0x80, 0xff, b'a' | 0x80];
        for sources in cases {
            let s = scanner(sources);
            let needles: Vec<u8> = (0..=255u8)
                .filter(|b| s.patterns.iter().any(|p| p.can_start(*b)))
                .collect();
            for len in 0..=140usize {
                let filler: Vec<u8> = (0..len).map(|i| fillers[(i * 5 + len) % 8]).collect();
                assert_eq!(s.starts.find(&filler), None, "{sources:?} len {len}");
                for at in 0..len {
                    for &needle in &needles {
                        let mut text = filler.clone();
                        text[at] = needle;
                        if at + 3 < len {
                            text[at + 3] = needles[0];
                        }
                        let got = s.starts.find(&text);
                        assert_eq!(got, Some(at), "{sources:?} {text:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn next_skips_dead_candidates_and_keeps_pattern_order() {
        let s = scanner(&["sk-live-[a-z]+", "sk-[a-z]+"]);
        let t = b"jumps sk sk-x";
        assert_eq!(
            s.next(t, 0, false),
            Some(Found::Match {
                at: 9,
                pattern: 1,
                len: 4
            })
        );
        assert_eq!(s.next(b"a sk-l", 0, false), Some(Found::Possible { at: 2 }));
        assert_eq!(
            s.next(b"a sk-l", 0, true),
            Some(Found::Match {
                at: 2,
                pattern: 1,
                len: 4
            })
        );
        assert_eq!(s.next(b"sk-a", 1, false), None);
    }
}
