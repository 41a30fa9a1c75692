//! The `pai-sim` binary as users and CI call it: reports, refusals, output.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pai-sim"))
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pai-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `--junit` writes valid JUnit XML: one test case per scenario, a failure
/// element (with its replay line) for each failing one.
#[test]
fn junit_reports_parse_and_name_every_scenario() {
    let dir = temp("junit");
    let failing = dir.join("fails.toml");
    let mut text =
        std::fs::read_to_string(root().join("scenarios/violations/k2_catches_a_stale_token.toml"))
            .unwrap();
    text = text.replace("expect = \"violation\"\noracle = \"K2\"\n", "");
    std::fs::write(&failing, text).unwrap();
    let passing = root().join("scenarios/basics/plain_answer.toml");
    let report = dir.join("report.xml");
    let status = bin()
        .arg("run")
        .arg(&passing)
        .arg(&failing)
        .arg("--junit")
        .arg(&report)
        .env("CI", "true")
        .current_dir(&dir)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "a failing scenario fails the run");
    let xml = std::fs::read_to_string(&report).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 2);
    let failures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0]
            .text()
            .unwrap_or("")
            .contains("replay: pai-sim run")
    );
    assert_eq!(doc.root_element().attribute("failures"), Some("1"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// With `CI` set, nothing may write snapshots: `--update` is refused.
#[test]
fn ci_refuses_update() {
    let out = bin()
        .args(["run", "--update"])
        .arg(root().join("scenarios/basics/plain_answer.toml"))
        .env("CI", "true")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused"));
}

/// `--format json` prints one object per scenario and line.
#[test]
fn json_lines_describe_each_scenario() {
    let out = bin()
        .args(["run", "--format", "json"])
        .arg(root().join("scenarios/basics"))
        .env("CI", "true")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 5);
    assert!(
        lines
            .iter()
            .all(|l| l["result"] == "ok" && l["rules"].is_array())
    );
}

/// Output cut short by a closed pipe (`pai-sim run | head -1`) ends
/// quietly: no panic, no error message, the run's own exit status.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::process::Stdio;
    let commands: [&[&str]; 5] = [
        &["run", "--format", "json"],
        &["run", "scenarios/basics"],
        &["show", "scenarios/basics/five_steps.toml"],
        &["rules"],
        &["fuzz", "--cases", "20", "--out", "target/pipe-test-finds"],
    ];
    for args in commands {
        let mut child = bin()
            .args(args)
            .current_dir(root())
            .env("CI", "true")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // nobody reads
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{args:?}: {:?} {err}",
            out.status
        );
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
}

/// The shards of one campaign, merged, are the campaign: the same cases,
/// runs and coverage as the unsharded run; a shard twice is refused.
#[test]
fn fuzz_merge_sums_the_shards_into_the_whole_campaign() {
    let dir = temp("merge");
    let report = |shard: &str| {
        let out = bin()
            .args(["fuzz", "--cases", "24", "--seed", "5", "--format", "json"])
            .args(["--shard", shard, "--keep-going", "--out"])
            .arg(dir.join("finds"))
            .output()
            .unwrap();
        let file = dir.join(format!("{}.json", shard.replace('/', "-")));
        std::fs::write(&file, &out.stdout).unwrap();
        file
    };
    let (one, two, whole) = (report("1/2"), report("2/2"), report("1/1"));
    let merged = bin()
        .args(["fuzz", "merge", "--format", "json"])
        .arg(&two)
        .arg(&one)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&merged.stderr);
    assert!(merged.status.code() == Some(0), "{stderr}");
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let whole: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&whole).unwrap()).unwrap();
    for key in ["cases", "runs", "coverage", "blind_spots"] {
        assert_eq!(merged[key], whole[key], "{key}");
    }
    assert_eq!(merged["shards"], serde_json::json!([1, 2]));
    assert_eq!(merged["missing"], serde_json::json!([]));
    let twice = bin()
        .args(["fuzz", "merge"])
        .arg(&one)
        .arg(&one)
        .output()
        .unwrap();
    assert_eq!(twice.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&twice.stderr);
    assert!(stderr.contains("shard 1/2 is given twice"), "{stderr}");
}

/// The last non-empty line of a text.
fn last_line(text: &str) -> &str {
    text.lines().rev().find(|l| !l.is_empty()).unwrap_or("")
}

/// A suite of one scenario in a fresh temp folder: `scenarios/a/x.toml`
/// (a copy of `basics/plain_answer.toml`), no snapshot yet.
fn temp_suite(name: &str) -> PathBuf {
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("scenarios/a")).unwrap();
    std::fs::copy(
        root().join("scenarios/basics/plain_answer.toml"),
        dir.join("scenarios/a/x.toml"),
    )
    .unwrap();
    dir
}

/// Issue 28: with no paths, `run` and `rules` find the nearest
/// `scenarios/` walking up, so they work from any folder of a checkout.
#[test]
fn run_and_rules_find_the_suite_from_a_subfolder() {
    let sub = root().join("scenarios/cancel");
    let out = bin()
        .args(["run", "--filter", "cancel"])
        .current_dir(&sub)
        .env("CI", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let last = last_line(&stdout);
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    assert!(!last.starts_with("0 "), "{last}");
    let rules = |dir: &Path| {
        let out = bin().arg("rules").current_dir(dir).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let from_root = rules(&root());
    let from_sub = rules(&sub);
    assert!(from_sub.contains("../../scenarios/cancel/"), "{from_sub}");
    assert!(from_sub.contains("../../sim/"), "{from_sub}");
    assert_eq!(from_sub.replace("../../", ""), from_root);
}

/// Issue 28: outside every checkout, `run` and `rules` say where they
/// looked and what to do instead of `scenarios: no such file or folder`.
#[test]
fn outside_every_checkout_run_and_rules_say_where_they_looked() {
    let dir = temp("nowhere");
    let dir = std::fs::canonicalize(&dir).unwrap();
    for (args, advice) in [
        (&["run"][..], "pai-sim run PATH"),
        (&["rules"], "--scenarios"),
    ] {
        let out = bin().args(args).current_dir(&dir).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("no scenarios/ folder"), "{stderr}");
        assert!(stderr.contains(&dir.display().to_string()), "{stderr}");
        assert!(stderr.contains(advice), "{stderr}");
        assert!(stderr.contains("inside a pai-sim checkout"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "one clear error: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run from a subfolder of a suite, the snapshots are still found beside
/// `scenarios/`: written by `--update`, compared after, a change caught.
#[test]
fn snapshots_are_compared_when_run_from_a_subfolder() {
    let dir = temp_suite("subsnap");
    let sub = dir.join("scenarios/a");
    let run = |ci: bool, args: &[&str]| {
        let mut cmd = bin();
        cmd.arg("run").args(args).current_dir(&sub).env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().unwrap()
    };
    let out = run(false, &["--update"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let snap = dir.join("snapshots/a__x.snap");
    let text = std::fs::read_to_string(&snap).expect("written beside scenarios/");
    assert!(text.contains("input_file: scenarios/a/x.toml"), "{text}");
    let out = run(true, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(last_line(&stdout), "1 passed, 0 failed");
    std::fs::write(&snap, text.replace("Hello there.", "Goodbye.")).unwrap();
    let out = run(true, &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("transcript differs from"), "{stdout}");
    assert!(
        stdout.contains("replay: pai-sim run ../../scenarios/a/x.toml"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 28: an orphaned snapshot fails the run, and the last line says
/// so; `--prune` removes it and says that too.
#[test]
fn the_totals_line_names_orphaned_snapshots() {
    let dir = temp_suite("orphan");
    let run = |args: &[&str], ci: bool| {
        let mut cmd = bin();
        cmd.arg("run").args(args).current_dir(&dir).env_remove("CI");
        if ci {
            cmd.env("CI", "true");
        }
        cmd.output().unwrap()
    };
    assert_eq!(run(&["--update"], false).status.code(), Some(0));
    std::fs::write(dir.join("snapshots/gone.snap"), "---\n---\nold\n").unwrap();
    let out = run(&[], true);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("orphaned snapshot "), "{stdout}");
    assert_eq!(
        last_line(&stdout),
        "1 passed, 0 failed, 1 orphaned snapshot"
    );
    let out = run(&["--format", "json"], true);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("gone.snap"),
        "json mode names it on stderr: {stderr}"
    );
    let out = run(&["--prune"], false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let last = last_line(&stdout);
    assert_eq!(last, "1 passed, 0 failed, 1 orphaned snapshot removed");
    assert!(!dir.join("snapshots/gone.snap").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 28: a scenario file outside every `scenarios/` folder has no
/// snapshot; the run says so on stderr and in the result column.
#[test]
fn a_file_outside_every_suite_says_no_snapshot_was_compared() {
    let dir = temp("loose");
    let file = dir.join("loose.toml");
    std::fs::copy(root().join("scenarios/basics/plain_answer.toml"), &file).unwrap();
    let inside = root().join("scenarios/basics/five_steps.toml");
    let out = bin()
        .arg("run")
        .arg(&file)
        .arg(&inside)
        .env("CI", "true")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let row = |name: &str| {
        let line = stdout.lines().find(|l| l.starts_with(name));
        line.unwrap_or_else(|| panic!("no row {name}: {stdout}"))
            .to_string()
    };
    assert!(
        row("plain answer").ends_with("  ok, no snapshot"),
        "{stdout}"
    );
    assert!(row("five steps").ends_with("  ok"), "{stdout}");
    assert_eq!(last_line(&stdout), "2 passed, 0 failed");
    let warning = format!("warning: {}", file.display());
    assert!(stderr.contains(&warning), "{stderr}");
    assert!(stderr.contains("no snapshot was compared"), "{stderr}");
    assert!(
        stderr.contains("not inside a scenarios/ folder"),
        "{stderr}"
    );
    assert!(!stderr.contains("five_steps"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 28: `--store postgres` points at the conformance suite that
/// exists (`cargo test -p pai-store-check`), not a subcommand that does not.
#[test]
fn store_postgres_points_at_the_conformance_suite() {
    for args in [
        &["run", "--store", "postgres"][..],
        &["fuzz", "--store", "postgres"],
    ] {
        let out = bin().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("cargo test -p pai-store-check"), "{stderr}");
        assert!(!stderr.contains("check-store"), "{stderr}");
    }
}

/// Issue 28: a missing snapshot's message says how to accept it without a
/// terminal (`cargo insta review` needs one).
#[test]
fn a_new_transcript_says_how_to_accept_it_without_a_terminal() {
    let dir = temp_suite("pending");
    let out = bin()
        .args(["run", "scenarios"])
        .current_dir(&dir)
        .env_remove("CI")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let snap = std::fs::canonicalize(&dir)
        .unwrap()
        .join("snapshots/a__x.snap");
    assert!(
        stdout.contains("`cargo insta review` (needs a terminal)"),
        "{stdout}"
    );
    let accept = format!("`cargo insta accept --snapshot {}`", snap.display());
    assert!(stdout.contains(&accept), "{stdout}");
    assert!(dir.join("snapshots/a__x.snap.new").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
