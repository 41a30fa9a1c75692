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

/// The families of kinds a case chooses from, each a range of bits in
/// [`Features`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Family {
    /// The hook library's kinds (`hooks::KINDS` of them).
    Hook,
    /// Client, approval or plain tools.
    Tool,
    /// What a backend tool does.
    Behaviour,
    /// Timeline actions: send, steer, cancel, send and cancel, watch.
    Action,
    /// Crash, partition, hold, pause.
    Fault,
}

impl Family {
    /// The family's first bit.
    fn base(self) -> u32 {
        match self {
            Family::Hook => 0,
            Family::Tool => 32,
            Family::Behaviour => 36,
            Family::Action => 44,
            Family::Fault => 52,
        }
    }
}

/// Which kinds a case may draw. Swarm testing (Groce et al., "Swarm
/// Testing", ISSTA 2012): each case switches off a random half of the
/// generator's kinds, so cases differ more from one another: one case is
/// all delays and crashes, another all guards and steers, and a bug two
/// common kinds would mask shows up where one is switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    off: u64,
}

impl Features {
    /// Every kind on (a case as before swarm testing).
    pub const ALL: Features = Features { off: 0 };

    /// Each kind off with probability 1/2, from the case seed's own stream
    /// (so the case's other choices keep their draws).
    pub fn swarm(case_seed: u64) -> Features {
        Features {
            off: Rng::new(case_seed ^ 0x5A4A_12B0_0000_0005).next_u64(),
        }
    }

    fn is_on(self, family: Family, kind: usize) -> bool {
        let bit = family.base() + kind as u32;
        self.off & (1u64 << bit) == 0
    }
}

/// Draws choices from one seeded rng.
#[derive(Debug)]
pub(super) struct Gen {
    rng: Rng,
    features: Features,
}

impl Gen {
    pub(super) fn new(seed: u64, features: Features) -> Gen {
        Gen {
            rng: Rng::new(seed),
            features,
        }
    }

    /// One kind of `family`, `weights[i]` the weight of kind `i`, among
    /// the kinds the case's features leave on (all of them when they
    /// leave none: a family is never empty).
    pub(super) fn kind(&mut self, family: Family, weights: &[u64]) -> usize {
        let on = |i: usize| self.features.is_on(family, i);
        let total: u64 = (0..weights.len())
            .filter(|&i| on(i))
            .map(|i| weights[i])
            .sum();
        let (total, all) = match total {
            0 => (weights.iter().sum(), true),
            t => (t, false),
        };
        let mut r = self.rng.below(total.max(1));
        for (i, w) in weights.iter().enumerate() {
            if !all && !self.features.is_on(family, i) {
                continue;
            }
            if r < *w {
                return i;
            }
            r -= w;
        }
        weights.len().saturating_sub(1)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(features: Features, weights: &[u64]) -> Vec<usize> {
        let mut g = Gen::new(9, features);
        let mut seen = vec![0; weights.len()];
        for _ in 0..2_000 {
            seen[g.kind(Family::Action, weights)] += 1;
        }
        seen
    }

    #[test]
    fn a_kind_switched_off_is_never_drawn_and_the_rest_keep_their_weights() {
        let base = Family::Action.base();
        let off = Features {
            off: (1 << base) | (1 << (base + 2)),
        };
        let seen = drawn(off, &[5, 2, 1, 1, 1]);
        assert_eq!((seen[0], seen[2]), (0, 0), "{seen:?}");
        assert!(seen[1] > seen[3] && seen[3] > 0 && seen[4] > 0, "{seen:?}");
        let all = drawn(Features::ALL, &[5, 2, 1, 1, 1]);
        assert!(all.iter().all(|&n| n > 0) && all[0] > all[1], "{all:?}");
    }

    #[test]
    fn a_family_switched_off_whole_draws_from_every_kind() {
        let base = Family::Action.base();
        let off = Features {
            off: 0b11111 << base,
        };
        assert!(drawn(off, &[5, 2, 1, 1, 1]).iter().all(|&n| n > 0));
    }

    /// Each family has bits of its own: switching one family's kinds off
    /// leaves every other family's on.
    #[test]
    fn families_do_not_share_bits() {
        let families = [
            (Family::Hook, 30),
            (Family::Tool, 3),
            (Family::Behaviour, 5),
            (Family::Action, 5),
            (Family::Fault, 4),
        ];
        for (i, &(family, kinds)) in families.iter().enumerate() {
            let mut off = Features::ALL;
            for k in 0..kinds {
                off.off |= 1 << (family.base() + k as u32);
            }
            for (j, &(other, others)) in families.iter().enumerate() {
                let on = (0..others).all(|k| off.is_on(other, k));
                assert_eq!(on, i != j, "{family:?} switched off, {other:?}");
            }
        }
    }

    #[test]
    fn swarm_switches_about_half_off_and_differs_by_seed() {
        let a = Features::swarm(1);
        let b = Features::swarm(2);
        assert_ne!(a, b);
        let on = (0..30).filter(|&k| a.is_on(Family::Hook, k)).count();
        assert!((5..=25).contains(&on), "{on} of 30 hook kinds on");
    }
}
