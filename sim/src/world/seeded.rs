//! The seed's consequences: one rng, and ids drawn from it (SPEC D1).

use std::sync::{Arc, Mutex};

use pai_runtime::{IdKind, IdSource};

use super::lock::lock;

/// SplitMix64: small, fast, and stable across versions and platforms, which is
/// what a recorded seed needs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator for `seed`: the same seed gives the same numbers on every
    /// platform and version.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number of the sequence, uniform over all of `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Ids from the seeded rng: `{kind}{n}_{4 hex digits}`, unique by the counter,
/// different per seed by the suffix.
#[derive(Debug)]
pub struct SimIds {
    rng: Arc<Mutex<Rng>>,
    counters: Mutex<[u32; 4]>,
}

impl SimIds {
    pub fn new(rng: Arc<Mutex<Rng>>) -> SimIds {
        SimIds {
            rng,
            counters: Mutex::new([0; 4]),
        }
    }
}

impl IdSource for SimIds {
    fn next_id(&self, kind: IdKind) -> String {
        let slot = match kind {
            IdKind::Run => 0,
            IdKind::Message => 1,
            IdKind::Thread => 2,
            IdKind::ToolCall => 3,
        };
        let n = {
            let mut c = lock(&self.counters);
            c[slot] += 1;
            c[slot]
        };
        let suffix = lock(&self.rng).below(0x1_0000);
        format!("{}{n}_{suffix:04x}", kind.prefix())
    }
}
