//! A word-at-a-time search (SPEC S3's fast path) for up to three bytes that
//! can start a match, each optionally with the byte that every match
//! starting with it has next (the second byte of a literal prefix): `s`
//! then `k` for `sk-...`, so an `s` followed by anything else is passed
//! over without a look at the patterns.

/// Below this length the word-at-a-time search beats `memchr`'s setup.
const SHORT: usize = 64;
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
/// The high bit of a word's last byte.
const LAST: u64 = 1 << 63;

/// Bytes to search for, each with the byte that must follow it (if any).
#[derive(Debug, Clone)]
pub(super) struct Needles<const N: usize> {
    firsts: [u8; N],
    seconds: [Option<u8>; N],
    first_words: [u64; N],
    second_words: [u64; N],
}

/// The high bit of each byte of `w` equal to the byte spread over `b`.
/// Exact up to the lowest such byte; above it a borrow can mark more.
#[inline(always)]
fn equal(w: u64, b: u64) -> u64 {
    let x = w ^ b;
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The first 8 bytes of `bytes` (at least 8), little-endian: one load.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(w)
}

impl<const N: usize> Needles<N> {
    /// `pairs`: each first byte, and the byte that must follow it (`None`:
    /// any, or none at all).
    pub(super) fn new(pairs: [(u8, Option<u8>); N]) -> Needles<N> {
        Needles {
            firsts: pairs.map(|p| p.0),
            seconds: pairs.map(|p| p.1),
            first_words: pairs.map(|p| ONES * u64::from(p.0)),
            second_words: pairs.map(|p| ONES * u64::from(p.1.unwrap_or(0))),
        }
    }

    #[cfg(test)]
    pub(super) fn firsts(&self) -> &[u8; N] {
        &self.firsts
    }

    /// Whether a match may start at `at`: a first byte there, followed by
    /// its second byte or by the end of the text.
    fn candidate(&self, text: &[u8], at: usize) -> bool {
        (0..N).any(|k| {
            text[at] == self.firsts[k]
                && self.seconds[k].is_none_or(|s| text.get(at + 1).is_none_or(|b| *b == s))
        })
    }

    /// A position with no candidate (see `candidate`) before it; `None`
    /// only when there is no candidate at all. It may be a false alarm (a
    /// word-at-a-time artefact, or a lone first byte in a long text): what
    /// is found there is checked anyway.
    #[inline]
    pub(super) fn find(&self, text: &[u8]) -> Option<usize> {
        let n = text.len();
        if n < 8 {
            return (0..n).find(|&at| self.candidate(text, at));
        }
        if n >= SHORT {
            // First bytes only: a position at or before the first candidate.
            return match self.firsts.as_slice() {
                [a] => memchr::memchr(*a, text),
                [a, b] => memchr::memchr2(*a, *b, text),
                [a, b, c] => memchr::memchr3(*a, *b, *c, text),
                _ => text.iter().position(|b| self.firsts.contains(b)),
            };
        }
        let words = text.chunks_exact(8);
        let at = n - words.remainder().len();
        for (i, w) in words.enumerate() {
            let hits = self.hits(text, i * 8, word(w));
            if hits != 0 {
                return Some(i * 8 + (hits.trailing_zeros() / 8) as usize);
            }
        }
        if at == n {
            return None;
        }
        // The last word overlaps the one before: only its bytes from `at` on
        // are new.
        let last = n - 8;
        let hits = self.hits(text, last, word(&text[last..])) & (u64::MAX << ((at - last) * 8));
        (hits != 0).then(|| last + (hits.trailing_zeros() / 8) as usize)
    }

    /// The high bit of each byte of the word `w` at `at` where a candidate
    /// may start. Every candidate is marked; the lowest mark is at or
    /// before the first.
    #[inline(always)]
    fn hits(&self, text: &[u8], at: usize, w: u64) -> u64 {
        let mut hits = 0;
        for k in 0..N {
            let first = equal(w, self.first_words[k]);
            if first == 0 {
                continue;
            }
            hits |= match self.seconds[k] {
                Some(_) => first & self.followed(text, at, w, k),
                None => first,
            };
        }
        hits
    }

    /// The high bit of each byte of the word `w` at `at` followed by needle
    /// `k`'s second byte, or by the end of the text.
    #[inline(always)]
    fn followed(&self, text: &[u8], at: usize, w: u64, k: usize) -> u64 {
        // Each byte's successor, in the same lane.
        let (after, end) = match text.get(at + 8) {
            Some(b) => (u64::from(*b), 0),
            None => (0, LAST),
        };
        equal((w >> 8) | (after << 56), self.second_words[k]) | end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first candidate, byte by byte.
    fn first<const N: usize>(n: &Needles<N>, text: &[u8]) -> Option<usize> {
        (0..text.len()).find(|&at| n.candidate(text, at))
    }

    /// `find`'s contract: no candidate before what it finds, and `None` only
    /// when there is none at all; exact in ordinary short text (a long one
    /// is searched for first bytes only).
    fn check<const N: usize>(n: &Needles<N>, text: &[u8], exact: bool) {
        let exact = exact && text.len() < SHORT;
        let (got, want) = (n.find(text), first(n, text));
        match (got, want) {
            (None, None) => {}
            (Some(_), None) if !exact => {}
            (Some(g), Some(w)) if g == w || (!exact && g < w) => {}
            _ => panic!("{text:?}: found {got:?}, first candidate {want:?}"),
        }
    }

    #[test]
    fn finds_every_placed_pair_at_every_offset() {
        let one = Needles::new([(b's', Some(b'k'))]);
        let two = Needles::new([(b's', Some(b'k')), (b'g', None)]);
        let three = Needles::new([(b'a', Some(b'b')), (b'b', Some(b'a')), (0xc3, Some(0xa9))]);
        // Bytes one off a needle, zero bytes and high bytes: what could
        // fool a word-at-a-time test with a borrow.
        let fillers = [
            b'x',
            b's',
            b'r',
            b't',
            b'k',
            0x00,
            0x01,
            0xff,
            b'a' - 1,
            b'b' + 1,
        ];
        for len in 0..=80usize {
            let filler: Vec<u8> = (0..len).map(|i| fillers[(i * 7 + len) % 10]).collect();
            check(&one, &filler, false);
            check(&two, &filler, false);
            check(&three, &filler, false);
            for at in 0..len {
                let mut text = vec![b'.'; len];
                text[at] = b's';
                check(&one, &text, true);
                if at + 1 < len {
                    text[at + 1] = b'k';
                }
                check(&one, &text, true);
                check(&two, &text, true);
                let mut noisy = filler.clone();
                noisy[at] = b's';
                if at + 1 < len {
                    noisy[at + 1] = b'k';
                }
                check(&one, &noisy, false);
                check(&two, &noisy, false);
                noisy[at] = 0xc3;
                check(&three, &noisy, false);
            }
        }
    }

    #[test]
    fn a_first_byte_at_the_very_end_is_a_candidate() {
        let one = Needles::new([(b's', Some(b'k'))]);
        for len in 1..=40usize {
            let mut text = vec![b'.'; len];
            text[len - 1] = b's';
            assert_eq!(one.find(&text), Some(len - 1), "len {len}");
            if len > 1 {
                text[len - 2] = b's';
                assert_eq!(one.find(&text), Some(len - 1), "len {len}: `ss` at the end");
            }
        }
    }
}
