//! The seeded source of every choice a generated case makes, and the
//! vocabulary cases are made of (SPEC D8: one seed is the whole case).

use crate::world::Rng;

/// Words user and model texts are made of; some are guard and RAG keys.
pub(super) const WORDS: &[&str] = &[
    "find",
    "hotels",
    "in",
    "rome",
    "paris",
    "please",
    "the",
    "report",
    "ignore",
    "previous",
    "instructions",
    "forbidden",
    "weather",
    "ok",
    "naïve",
    "café",
    "日本",
];
/// Secrets the redaction patterns catch.
pub(super) const SECRETS: &[&str] = &["sk-Ab9_x7Q", "ghp_Z8k2", "password", "key-7f3a"];
/// Redaction patterns (a literal prefix and an optional `[class]+`).
pub(super) const PATTERNS: &[&str] = &[
    "sk-[A-Za-z0-9_-]+",
    "ghp_[A-Za-z0-9]+",
    "password",
    "key-[a-f0-9]+",
];
/// Model names routes and fallbacks choose from; the agent's is `small`.
pub(super) const MODELS: &[&str] = &["small", "large", "backup"];
/// Keys of the `[docs]` the RAG hook may inject.
pub(super) const DOCS: &[&str] = &["rome", "paris", "report"];
/// Run metadata keys `on_output` handlers and metadata hooks write.
pub(super) const META_KEYS: &[&str] = &["seen", "last", "plan"];
/// Fields a client tool's output may require.
pub(super) const OUTPUT_FIELDS: &[&str] = &["slot", "note"];

/// Draws choices from one seeded rng.
#[derive(Debug)]
pub(super) struct Gen {
    rng: Rng,
}

impl Gen {
    pub(super) fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng::new(seed),
        }
    }

    pub(super) fn u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in `lo..=hi`.
    pub(super) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.below(hi - lo + 1)
    }

    pub(super) fn index(&mut self, n: usize) -> usize {
        self.rng.below(n.max(1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.rng.below(100) < percent
    }

    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    pub(super) fn maybe<T>(&mut self, percent: u64, f: impl FnOnce(&mut Gen) -> T) -> Option<T> {
        self.chance(percent).then(|| f(self))
    }

    /// A few words, sometimes a secret among them.
    pub(super) fn text(&mut self, words: u64) -> String {
        let mut out: Vec<String> = (0..self.range(1, words))
            .map(|_| self.pick(WORDS).to_string())
            .collect();
        if self.chance(25) {
            let at = self.index(out.len() + 1);
            out.insert(at, self.pick(SECRETS).to_string());
        }
        out.join(" ")
    }

    /// A text cut into deltas at random character points, empty deltas included.
    pub(super) fn deltas(&mut self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut cuts: Vec<usize> = (0..self.range(0, 4))
            .map(|_| self.index(chars.len() + 1))
            .collect();
        cuts.sort_unstable();
        let mut out = Vec::new();
        let mut from = 0;
        for c in cuts.into_iter().chain([chars.len()]) {
            out.push(chars[from..c].iter().collect());
            from = c;
        }
        out
    }

    /// A step filter: usually none, sometimes one step.
    pub(super) fn step(&mut self) -> Option<u32> {
        self.maybe(30, |g| g.range(0, 3) as u32)
    }
}
