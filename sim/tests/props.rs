//! Property tests over whole simulated runs, with the generator of `pai-sim
//! fuzz` (SPEC D8): compositions of any hooks of the library (failing or
//! panicking in any phase, guards and redactors in any order), tools with
//! every behaviour (approval and client tools, `on_output` handlers
//! included), scripts with secrets across delta boundaries, provider errors
//! and unavailable models, and timelines of sends, steers, cancels (at the
//! same instant as a send, of a named run, of a waiting run), watchers and
//! answers to waiting calls (approve, deny, submit, right or wrong).
//!
//! Every oracle judges every case, and every case runs twice (D3, D4). The
//! regressions proptest found are checked in and replayed first. The cases
//! come from a fixed seed, so every run draws the same ones; another seed:
//! `PROPTEST_RNG_SEED=N cargo test -p pai-sim --test props` (see `common`).

mod common;

use pai_sim::ScenarioSpec;
use pai_sim::fuzz::{case, evaluate};
use proptest::prelude::*;

fn config(cases: u32) -> ProptestConfig {
    common::config(
        cases,
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/props.txt"
        ),
    )
}

proptest! {
    #![proptest_config(config(512))]

    /// Every oracle holds on every generated case, and two runs agree.
    #[test]
    fn every_oracle_holds_on_generated_cases(seed in any::<u64>()) {
        let spec = case(seed);
        let judged = evaluate(&spec);
        prop_assert!(
            judged.failure.is_none(),
            "case seed {seed:#x}: {:?}: {}\nreplay: pai-sim fuzz finds it, or write the case and run it",
            judged.failure,
            judged.message
        );
    }

    /// A generated case survives being written as TOML and read back
    /// unchanged, so a shrunk failure replays exactly (no TOML null).
    #[test]
    fn generated_cases_survive_write_then_load(seed in any::<u64>()) {
        let spec = case(seed);
        let path = std::path::Path::new("case.toml");
        let text = toml::to_string(&spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = ScenarioSpec::parse(path, &text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, spec);
    }
}
