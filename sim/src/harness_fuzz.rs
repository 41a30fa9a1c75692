//! Library mode's fuzzing (issue 28): the configurations of an author's
//! hooks drawn from their proptest strategies, and what a campaign over
//! their compositions found.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde::Serialize;
use serde_json::Value;

use crate::fuzz::{Find, Summary, write_find_as};
use crate::registry::{Drawer, InputDrawer};
use crate::world::Rng;

/// A drawer of configurations from the strategy `configs` makes: the same
/// seed gives the same configuration on every machine (proptest's ChaCha
/// generator, seeded from it). The strategy is made anew for each draw, so
/// it needs to be neither `Send` nor `Sync`.
pub(crate) fn drawer<S, F>(configs: F) -> Drawer
where
    F: Fn() -> S + Send + Sync + 'static,
    S: Strategy,
    S::Value: Serialize,
{
    let values = value_drawer(configs);
    std::sync::Arc::new(move |seed: u64| match values(seed)? {
        Value::Object(config) => Ok(config),
        other => Err(format!(
            "a configuration must serialize as a table of fields, not {other}"
        )),
    })
}

/// A drawer of any serializable values (a tool's call inputs) from the
/// strategy `values` makes, seeded as [`drawer`] is.
pub(crate) fn value_drawer<S, F>(values: F) -> InputDrawer
where
    F: Fn() -> S + Send + Sync + 'static,
    S: Strategy,
    S::Value: Serialize,
{
    std::sync::Arc::new(move |seed: u64| {
        let mut rng = Rng::new(seed);
        let mut bytes = [0u8; 32];
        for chunk in bytes.chunks_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let tree = values().new_tree(&mut runner).map_err(|e| e.to_string())?;
        serde_json::to_value(tree.current()).map_err(|e| e.to_string())
    })
}

/// What [`crate::Harness::check_fuzz`] did: the campaign's summary, and
/// where each find was written.
#[derive(Debug)]
pub struct FuzzOutcome {
    /// The campaign's seed and how many cases it ran.
    pub seed: u64,
    /// Cases judged (each ran twice, D4), finds, coverage.
    pub summary: Summary,
    /// Each find's scenario file, shrunk (or why it could not be written).
    pub written: Vec<Result<PathBuf, String>>,
}

impl FuzzOutcome {
    /// Whether no case failed.
    pub fn passed(&self) -> bool {
        self.summary.finds.is_empty()
    }

    /// The cases run, the crossings the harness's hooks reached (and those
    /// none reached), then each find: its failure, its file and the
    /// command that replays it.
    pub fn report(&self) -> String {
        let s = &self.summary;
        let mut out = format!(
            "fuzz: {} cases from seed {}, {} failed\n\n{}",
            s.cases,
            self.seed,
            s.finds.len(),
            s.mixed.table()
        );
        for name in s.mixed.hooks() {
            let blind = s.mixed.blind_spots(name);
            if !blind.is_empty() {
                let _ = writeln!(out, "{name} never met: {}", blind.join(", "));
            }
        }
        for (find, file) in s.finds.iter().zip(&self.written) {
            out.push_str(&describe(find, file, self.seed));
        }
        out
    }
}

/// One find: what failed, where it was written, how to run it again.
fn describe(find: &Find, file: &Result<PathBuf, String>, seed: u64) -> String {
    let mut out = format!(
        "\nFIND case {} ({}): {}\n",
        find.index, find.failure, find.message
    );
    let _ = match file {
        Ok(path) => writeln!(
            out,
            "  shrunk in {} steps to {}\n  replay: PAI_SIM_FUZZ_SEED={seed} {test}, or PAI_SIM_FILTER={} {test} once the file is in your scenarios folder",
            find.steps,
            path.display(),
            quoted(path),
            test = cargo_test(),
        ),
        Err(e) => writeln!(out, "  could not be written: {e}"),
    };
    out
}

fn quoted(path: &Path) -> String {
    let shown = path.display().to_string();
    shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned())
}

/// Writes each find of `summary` into `dir`, as a scenario file.
pub(crate) fn write_finds(
    dir: &Path,
    seed: u64,
    summary: &Summary,
) -> Vec<Result<PathBuf, String>> {
    let finds = summary.finds.iter();
    finds
        .map(|f| {
            let how = format!(
                "Found by `Harness::fuzz` (seed {seed}) at case {} and shrunk in {} steps. \
                 The run fails: {}. Move it into your scenarios folder to keep it as a \
                 regression; `PAI_SIM_FILTER=<this file> {}` runs it alone.",
                f.index,
                f.steps,
                f.failure,
                cargo_test()
            );
            let at = (seed, f.index);
            write_find_as(dir, &f.shrunk, &f.failure, at, how).map_err(|e| e.to_string())
        })
        .collect()
}

/// `cargo test -p <package>` for the package whose tests run now (cargo
/// tells a test its package in `CARGO_PKG_NAME`), or `cargo test`.
pub(crate) fn cargo_test() -> String {
    match std::env::var("CARGO_PKG_NAME") {
        Ok(name) if !name.is_empty() => format!("cargo test -p {name}"),
        _ => "cargo test".to_string(),
    }
}
