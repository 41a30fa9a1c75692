//! Data-driven scenario tests: every file under `scenarios/` is one case with
//! one snapshot in `snapshots/`, named after the file (see `pai_sim::snapshot`).
//! Each case runs twice (SPEC D4), must meet its expectation (SPEC D5), and must
//! match its snapshot. With `CI=true`, insta writes nothing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use pai_sim::snapshot;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Checks one scenario file; returns a description of each failure.
fn check(path: &Path) -> Vec<String> {
    let scenario = match pai_sim::Scenario::load(path) {
        Ok(s) => s,
        Err(e) => return vec![e.to_string()],
    };
    let (report, mut problems) = match pai_sim::check(&scenario, scenario.seed) {
        Ok(r) => r,
        Err(e) => return vec![e.to_string()],
    };
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(path);
    settings.set_omit_expression(true);
    let name = snapshot::locate(path).expect("inside the suite").name;
    let matched = catch_unwind(AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_snapshot!(name.as_str(), report.transcript));
    }));
    if matched.is_err() {
        problems.push(format!("snapshot {name} does not match (diff above)"));
    }
    problems
}

/// SPEC D3, D4: every oracle judges every scenario, each run twice; a
/// difference between the two runs fails the case.
#[test]
fn every_scenario_matches_its_snapshot() {
    pai_sim::quiet_planted_panics();
    let files = pai_sim::discover(&[root().join("scenarios")]).expect("scenarios/ is readable");
    assert!(
        files.len() >= 15,
        "expected the scenario suite, found {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let problems = check(path);
        if !problems.is_empty() {
            let rel = path.strip_prefix(root()).unwrap_or(path);
            let seed = pai_sim::Scenario::load(path).map(|s| s.seed).unwrap_or(1);
            failures.push(format!(
                "{}:\n  {}\n  replay: {}",
                rel.display(),
                problems.join("\n  "),
                pai_sim::replay_command(rel, seed)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// Issue 28: every `hook = "..."` entry of the suite is checked through the
/// registry (its configuration read by the kind's registered type) into the
/// very entry the file parsed: nothing is lost on the way.
#[test]
fn every_library_entry_checks_into_the_entry_it_parsed() {
    let files = pai_sim::discover(&[root().join("scenarios")]).expect("scenarios/ is readable");
    let mut kinds = std::collections::BTreeSet::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let spec = pai_sim::ScenarioSpec::parse(f, &text).unwrap();
        let scenario = pai_sim::Scenario::load(f).unwrap();
        for (entry, hook) in spec.lifecycle.iter().zip(&scenario.hooks) {
            if let Some(parsed) = entry.library() {
                assert_eq!(hook.library(), Some(parsed), "{}", f.display());
                kinds.insert(parsed.kind());
            }
        }
    }
    assert!(kinds.len() >= 25, "{kinds:?}");
}

/// SPEC X1: a malformed scenario names file, line and column (a JSON
/// pointer for checks of a JSON file after parsing); nothing runs.
/// `tests/malformed/` holds files the schema refuses too; `tests/refused/`
/// files only the loader can judge (duplicates, a send past the limit).
#[test]
fn x1_malformed_scenarios_are_rejected_with_a_position() {
    for folder in ["tests/malformed", "tests/refused"] {
        let files = pai_sim::discover(&[root().join(folder)]).expect("fixtures exist");
        assert!(files.len() >= 3, "{folder}");
        for f in &files {
            check_rejected(f);
        }
    }
}

fn check_rejected(f: &Path) {
    let err = pai_sim::Scenario::load(f).expect_err("fixture must be rejected");
    let text = std::fs::read_to_string(f).unwrap();
    let shown = err.to_string();
    let name = f.display().to_string();
    assert!(shown.starts_with(&name), "{shown}");
    let tail = &shown[name.len()..];
    let located = err.location.is_some() || err.pointer.is_some();
    assert!(located, "{name}: no line, column or pointer in {shown:?}");
    let expected = text.lines().find_map(|l| l.strip_prefix("# expect: "));
    if let Some(exp) = expected {
        assert!(
            tail.starts_with(exp),
            "{name}: got {tail:?}, expected it to start with {exp:?}"
        );
    }
    if err.location.is_some() {
        let drawn = err.render(false);
        assert!(drawn.contains(" --> ") && drawn.contains('^'), "{drawn}");
    }
    let all = pai_sim::load_all(&[f.to_path_buf()]);
    assert!(all.is_err(), "load_all must refuse the suite");
}

/// SPEC D1: the same scenario and seed give a byte-identical transcript; the
/// seed alone changes the ids (and nothing about the story).
#[test]
fn d1_same_seed_same_transcript_other_seed_other_ids() {
    let path = root().join("scenarios/basics/five_steps.toml");
    let s = pai_sim::Scenario::load(&path).expect("loads");
    let a = pai_sim::simulate(&s, s.seed).expect("runs");
    let b = pai_sim::simulate(&s, s.seed).expect("runs");
    assert_eq!(a.transcript, b.transcript);
    let c = pai_sim::simulate(&s, s.seed + 1).expect("runs");
    assert_ne!(a.transcript, c.transcript, "ids come from the seed");
    // The same events happen in the same order; only the ids differ.
    let names = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.contains("ms run"))
            .map(|l| l.split_whitespace().nth(2).unwrap_or("").to_string())
            .collect()
    };
    assert!(names(&a.transcript).len() > 20);
    assert_eq!(names(&a.transcript), names(&c.transcript));
}

/// cargo-insta finds snapshots only inside packages: `snapshots/` must lie
/// under a package root (this package, `pai-suite`, owns it).
#[test]
fn snapshots_lie_under_a_package_root() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let snapshots = root()
        .join("snapshots")
        .canonicalize()
        .expect("snapshots/ exists");
    let owners: Vec<String> = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or(""));
            manifest
                .parent()
                .and_then(|d| d.canonicalize().ok())
                .is_some_and(|d| snapshots.starts_with(d))
        })
        .map(|p| p["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        owners.contains(&"pai-suite".to_string()),
        "packages owning snapshots/: {owners:?}"
    );
}

fn parse(text: &str) -> pai_sim::Scenario {
    pai_sim::Scenario::parse(Path::new("inline.toml"), text).expect("parses")
}

/// SPEC D5: a planted fault that finds nothing to change proves nothing, so
/// the run fails and says which fault it was.
#[test]
fn d5_a_fault_that_changes_nothing_fails_the_run() {
    let s = parse(
        r#"
name = "a fault naming an event the run never has"
rules = ["D5"]
expect = "violation"
oracle = "T2"
[[faults]]
kind = "drop"
event = "tool_start"
nth = 3
[[timeline]]
send = "hi"
"#,
    );
    let report = pai_sim::simulate(&s, s.seed).expect("runs");
    let err = pai_sim::verdict(&s, &report).expect_err("must fail");
    assert!(
        err.contains("planted fault changed nothing: faults[0]"),
        "{err}"
    );
}

/// An entry placed after a moment of a run that never comes does not act
/// and fails the scenario: it would not test what it says (issue 38).
#[test]
fn an_entry_placed_after_a_moment_that_never_comes_fails_the_scenario() {
    let s = parse(
        r#"
name = "an answer after a wait that never comes"
rules = ["T7"]
[[model.turns]]
text = ["No tools, no wait."]
[[timeline]]
send = "hi"
[[timeline]]
cancel = true
after = { run = 1, event = "wait" }
"#,
    );
    let report = pai_sim::simulate(&s, s.seed).expect("runs");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let err = pai_sim::verdict(&s, &report).expect_err("must fail");
    assert!(
        err.contains(
            "a timeline entry never happened: cancel on main after run 1 waits never came"
        ),
        "{err}"
    );
}

/// A scenario stopped at its own virtual-time limit fails as such, and the
/// run it cut short is not reported as a phase-grammar violation (L14).
#[test]
fn a_run_cut_short_by_the_time_limit_fails_as_such() {
    let s = parse(
        r#"
name = "a model slower than the time limit"
rules = ["L14"]
time_limit_ms = 100
[[model.turns]]
latency_ms = 500
text = ["late"]
[[timeline]]
send = "hi"
"#,
    );
    let report = pai_sim::simulate(&s, s.seed).expect("runs");
    assert!(report.limit_reached);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let err = pai_sim::verdict(&s, &report).expect_err("must fail");
    assert!(
        err.starts_with("stopped at the virtual-time limit of 100ms"),
        "{err}"
    );
}

/// SPEC D7, D5: every oracle has a scenario that proves it fires.
#[test]
fn d7_every_oracle_has_a_violation_scenario() {
    let files = pai_sim::discover(&[root().join("scenarios")]).expect("readable");
    let proved: Vec<pai_sim::OracleId> = files
        .iter()
        .filter_map(|f| match pai_sim::Scenario::load(f).ok()?.expect {
            pai_sim::Expectation::Violation(o) => o.rule(),
            pai_sim::Expectation::Pass => None,
        })
        .collect();
    let unproved: Vec<_> = pai_sim::OracleId::ALL
        .iter()
        .filter(|o| !proved.contains(o))
        .collect();
    assert!(
        unproved.is_empty(),
        "oracles without a violation scenario: {unproved:?}"
    );
}

/// A transcript grows with a thread's length, not its square: each model
/// call lists only what changed since the thread's previous call.
#[test]
fn transcripts_grow_linearly_with_a_thread() {
    let size = |n: usize| {
        let turns: Vec<String> = (0..n)
            .map(|i| format!("{{ text = [\"ok {i}\"] }}"))
            .collect();
        let mut text = format!(
            "name = \"{n} queued sends\"\nrules = [\"K1\"]\n[model]\nturns = [{}]\n",
            turns.join(", ")
        );
        for i in 0..n {
            text.push_str(&format!("[[timeline]]\nsend = \"message {i}\"\n"));
        }
        let report = pai_sim::simulate(&parse(&text), 1).expect("runs");
        assert!(report.violations.is_empty(), "{:?}", report.violations);
        report.transcript.len()
    };
    let (small, large) = (size(50), size(200));
    let ratio = large as f64 / small as f64;
    assert!(
        ratio <= 4.5,
        "4x the sends gave {ratio:.2}x the transcript ({small} -> {large} bytes)"
    );
}
