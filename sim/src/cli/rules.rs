//! `pai-sim rules`: the rule catalogue, with the scenarios, oracles and
//! tests that check each rule, and the rules nothing checks.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use pai_sim::{RuleCoverage, TestRef};

/// What `pai-sim rules` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario folders to read (default: the nearest scenarios/, in the
    /// working folder or one above it).
    #[arg(long = "scenarios")]
    scenario_dirs: Vec<PathBuf>,
    /// Source folders whose tests are read (default: runtime, sim, tests,
    /// benches beside the nearest scenarios/ folder, where present).
    #[arg(long = "sources")]
    source_dirs: Vec<PathBuf>,
    /// List only the rules nothing checks.
    #[arg(long)]
    unchecked: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let dirs = if args.scenario_dirs.is_empty() {
        vec![super::locate::scenarios_dir(
            "pai-sim rules --scenarios DIR",
        )?]
    } else {
        args.scenario_dirs.clone()
    };
    let scenarios = scenario_rules(&dirs)?;
    let sources = if args.source_dirs.is_empty() {
        let root = super::locate::suite_root();
        ["runtime", "sim", "tests", "benches"]
            .iter()
            .map(|d| root.join(d))
            .filter(|p| p.is_dir())
            .collect()
    } else {
        args.source_dirs.clone()
    };
    let mut tests = Vec::new();
    for dir in &sources {
        for file in rust_files(dir)? {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading {}", file.display()))?;
            tests.extend(pai_sim::tests_in(&file.display().to_string(), &text));
        }
    }
    let all = pai_sim::coverage(&scenarios, &tests);
    let mut out = String::new();
    if !args.unchecked {
        for c in &all {
            out.push_str(&describe(c));
        }
    }
    let gaps: Vec<&str> = all
        .iter()
        .filter(|c| c.unchecked())
        .map(|c| c.rule.id.as_str())
        .collect();
    out.push_str(&format!(
        "{} rules; checked by nothing yet ({}): {}\n",
        all.len(),
        gaps.len(),
        if gaps.is_empty() {
            "-".to_string()
        } else {
            gaps.join(" ")
        }
    ));
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The rule ids each scenario file names. A file that does not load is
/// skipped with a warning: `pai-sim run` is where it gets its full error.
fn scenario_rules(dirs: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, Vec<String>)>> {
    let files = pai_sim::discover(dirs).context("finding scenario files")?;
    let mut out = Vec::new();
    for f in files {
        match pai_sim::Scenario::load(&f) {
            Ok(s) => out.push((f, s.rules)),
            Err(e) => eprintln!("warning: skipped {e}"),
        }
    }
    Ok(out)
}

fn describe(c: &RuleCoverage) -> String {
    let r = c.rule;
    let property = if r.property { " (property)" } else { "" };
    let mut out = format!("{} [{}]{property} {}\n", r.id, r.section, r.statement);
    let list = |items: Vec<String>| match items.is_empty() {
        true => "-".to_string(),
        false => items.join(", "),
    };
    let scenarios = c
        .scenarios
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let oracles = c.oracles.iter().map(|o| o.to_string()).collect();
    let tests = c.tests.iter().map(test_name).collect();
    out.push_str(&format!("    scenarios: {}\n", list(scenarios)));
    out.push_str(&format!("    oracles:   {}\n", list(oracles)));
    out.push_str(&format!("    tests:     {}\n", list(tests)));
    out
}

fn test_name(t: &TestRef) -> String {
    format!("{}::{}", t.file, t.name)
}

/// Every `.rs` file under `dir`, in path order, skipping `target/`.
fn rust_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))?;
        for e in entries {
            let p = e?.path();
            if p.is_dir() && p.file_name().is_some_and(|n| n != "target") {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}
