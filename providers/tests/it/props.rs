//! Property test: every recording cut at random byte boundaries into many
//! chunks decodes to the same parts and report as the whole body.
//!
//! The cases are drawn from a fixed seed (the checked-in regressions
//! first), so every run checks the same cuts; another seed locally:
//! `PROPTEST_RNG_SEED=7 PROPTEST_CASES=2000 cargo test -p pai-providers --test it props`.

use pai_providers::decode;
use proptest::prelude::*;
use proptest::test_runner::{
    Config as ProptestConfig, FileFailurePersistence, RngAlgorithm, RngSeed,
};

use crate::common::{decode_cut, recordings};

/// The seed the cases are drawn from unless `PROPTEST_RNG_SEED` names one.
const RNG_SEED: u64 = 0x5EED_0029;

fn config() -> ProptestConfig {
    let from_env = ProptestConfig::default();
    ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() {
            from_env.cases
        } else {
            64
        },
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: match from_env.rng_seed {
            RngSeed::Random => RngSeed::Fixed(RNG_SEED),
            named => named,
        },
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/chunking.txt"
        )))),
        ..from_env
    }
}

proptest! {
    #![proptest_config(config())]

    /// `cuts` are fractions of each body's length (so one case cuts every
    /// recording), turned into sorted byte offsets.
    #[test]
    fn random_chunkings_decode_the_same(cuts in prop::collection::vec(0.0f64..=1.0, 1..40)) {
        for (format, name, body) in recordings() {
            let whole = decode(format, &body);
            let mut offsets: Vec<usize> = cuts
                .iter()
                .map(|f| ((body.len() as f64) * f) as usize)
                .collect();
            offsets.sort_unstable();
            let chunked = decode_cut(format, &body, &offsets);
            prop_assert_eq!(chunked, whole, "{}/{} cut at {:?}", format.as_str(), name, offsets);
        }
    }
}
