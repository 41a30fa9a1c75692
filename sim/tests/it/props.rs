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
//! `PROPTEST_RNG_SEED=N cargo test -p pai-sim --test it props::` (see `common`).

use crate::common;

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
            "case seed {seed:#x}: {:?}: {}\nwrite it as a scenario: CASE={seed:#x} cargo test -p pai-sim --test it props::write_case -- --ignored",
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

/// Writes a generated case as a shrunk scenario file, so a failure of
/// `every_oracle_holds_on_generated_cases` replays with `pai-sim run`:
/// `CASE=0x… cargo test -p pai-sim --test it props::write_case -- --ignored`
/// (the file goes to `$OUT`, `fuzz-failures/` by default).
#[test]
#[ignore = "a tool: run it with CASE set"]
fn write_case() {
    let case_seed = std::env::var("CASE").expect("CASE=0x… (a case seed)");
    let digits = case_seed.trim_start_matches("0x");
    let seed = u64::from_str_radix(digits, 16).expect("a hexadecimal case seed");
    let out = std::env::var("OUT").unwrap_or_else(|_| "fuzz-failures".into());
    let spec = case(seed);
    let failure = evaluate(&spec).failure.expect("the case fails");
    let (small, steps) = pai_sim::fuzz::shrink(
        &spec,
        &failure,
        (400, pai_sim::StoreKind::Memory),
        &Default::default(),
    );
    let dir = std::path::Path::new(&out);
    let file = pai_sim::fuzz::write_find(dir, &small, &failure, (0, seed, steps)).expect("written");
    let line = format!("wrote {0}; replay: pai-sim run {0}\n", file.display());
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes()).expect("stdout");
}
