//! What [`Harness::check_dir`](crate::Harness::check_dir) found, and how
//! its report shows it: each failure with the command that replays it from
//! the author's tests, and the timeline page written beside the test
//! binary.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::scenario::{Scenario, ScenarioError};
use crate::suite::{self, CaseResult};

/// What [`Harness::check_dir`](crate::Harness::check_dir) found: every scenario's result, and the
/// files that did not load.
#[derive(Debug)]
pub struct DirOutcome {
    /// Each scenario that loaded (and passed the filter), with its result.
    pub cases: Vec<CaseResult>,
    /// Each file that did not load, with its located error.
    pub load_errors: Vec<ScenarioError>,
    /// The seed every scenario ran under (`PAI_SIM_SEED`), if not its own.
    pub seed: Option<u64>,
    /// Each failed scenario's timeline page (the HTML `pai-sim show
    /// --html` writes), and each page `PAI_SIM_SHOW=<part of a path or
    /// name>` asked for, passing or not, by the scenario's path: written
    /// under the test binary's target folder,
    /// `target/<profile>/pai-sim-pages/`.
    pub pages: BTreeMap<PathBuf, PathBuf>,
    /// Each scenario's load warnings (a script calling a tool the agent
    /// does not have), by its path; the transcript shows them too.
    pub warnings: BTreeMap<PathBuf, Vec<String>>,
}

impl DirOutcome {
    /// Whether every file loaded and every scenario passed.
    pub fn passed(&self) -> bool {
        self.load_errors.is_empty() && self.cases.iter().all(|c| !c.failed())
    }

    /// The summary table, then each failure with the command that replays
    /// it, then each file that did not load.
    pub fn report(&self) -> String {
        let mut out = suite::table(&self.cases, suite::Orphans::default());
        for c in self.cases.iter().filter(|c| c.failed()) {
            out.push_str(&format!("\nFAIL {} ({})\n", c.name, c.path.display()));
            for p in &c.problems {
                out.push_str(&format!("  {p}\n"));
            }
            if let Some(page) = self.pages.get(&c.path) {
                out.push_str(&format!("  timeline: file://{}\n", page.display()));
            }
            out.push_str(&format!("  replay: {}\n", replay_line(c, self.seed)));
        }
        for c in self.cases.iter().filter(|c| !c.failed()) {
            if let Some(page) = self.pages.get(&c.path) {
                out.push_str(&format!(
                    "\ntimeline of {}: file://{}\n",
                    c.name,
                    page.display()
                ));
            }
        }
        for (path, warnings) in &self.warnings {
            for w in warnings {
                out.push_str(&format!("\nwarning: {}: {w}\n", path.display()));
            }
        }
        for e in &self.load_errors {
            out.push_str(&format!("\n{}\n", e.render(false)));
        }
        out
    }
}

/// The command that runs one failed case again from the author's tests:
/// the filter (and the seed, when it was not the scenario's own) that
/// [`Harness::check_dir`](crate::Harness::check_dir) reads from the environment.
fn replay_line(c: &CaseResult, seed: Option<u64>) -> String {
    let shown = c.path.display().to_string();
    let quoted = shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned());
    match seed {
        Some(seed) => format!(
            "PAI_SIM_FILTER={quoted} PAI_SIM_SEED={seed} {}",
            crate::harness_fuzz::cargo_test()
        ),
        None => format!(
            "PAI_SIM_FILTER={quoted} {}",
            crate::harness_fuzz::cargo_test()
        ),
    }
}

/// Writes a failed run's timeline page beside the test binary (its
/// target folder's `pai-sim-pages/`), named after the scenario; `None` when it
/// cannot be written (the failure is reported all the same).
pub(crate) fn write_page(s: &Scenario, seed: u64, report: &crate::Report) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // target/<profile>/deps/<test binary>: the page goes to target/<profile>/pai-sim-pages/.
    let dir = exe.parent()?.parent()?.join("pai-sim-pages");
    std::fs::create_dir_all(&dir).ok()?;
    let stem: String = s
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(80)
        .collect();
    let page = dir.join(format!("{stem}.html"));
    let html = crate::timeline_html(s, seed, report);
    std::fs::write(&page, html).ok()?;
    Some(page)
}
