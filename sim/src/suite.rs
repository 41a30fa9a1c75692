//! Finding scenario files and running them as a suite.

use std::io;
use std::path::{Path, PathBuf};

use crate::run::{check, replay_command};
use crate::scenario::{Scenario, ScenarioError};
use crate::snapshot;

/// Scenario files under `paths`: files as given, folders searched recursively
/// for `.toml` and `.json`, sorted, without duplicates.
pub fn discover(paths: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.exists() {
            out.push(p.clone());
        } else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: no such file or folder", p.display()),
            ));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "toml" || e == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// Loads every file; returns the scenarios, or every load error (SPEC X1:
/// nothing runs if any file is malformed).
pub fn load_all(files: &[PathBuf]) -> Result<Vec<(PathBuf, Scenario)>, Vec<ScenarioError>> {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match Scenario::load(f) {
            Ok(s) => ok.push((f.clone(), s)),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(ok)
    } else {
        Err(errors)
    }
}

/// What the suite does with snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotMode {
    /// Compare; leave a pending `.snap.new` for a new or changed transcript.
    Check,
    /// Compare; write nothing (CI).
    CheckReadOnly,
    /// Accept every transcript as the new snapshot.
    Update,
}

/// How one scenario fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseStatus {
    /// It met its expectation and matched its snapshot.
    Ok,
    /// It met its expectation; its snapshot was (re)written.
    Updated,
    /// Something failed; see the case's problems.
    Fail,
}

impl CaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::Updated => "updated",
            CaseStatus::Fail => "FAIL",
        }
    }
}

impl std::fmt::Display for CaseStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One scenario's result.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub path: PathBuf,
    pub name: String,
    pub rules: Vec<String>,
    pub seed: u64,
    pub steps: u32,
    pub virtual_ms: u64,
    pub status: CaseStatus,
    pub problems: Vec<String>,
}

impl CaseResult {
    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
    }

    pub fn replay(&self) -> String {
        replay_command(&self.path, self.seed)
    }
}

/// Runs one loaded scenario: twice for D4, its expectation, then its snapshot.
pub fn run_case(
    path: &Path,
    s: &Scenario,
    seed_override: Option<u64>,
    mode: SnapshotMode,
) -> CaseResult {
    let seed = seed_override.unwrap_or(s.seed);
    let mut case = CaseResult {
        path: path.to_path_buf(),
        name: s.name.clone(),
        rules: s.rules.clone(),
        seed,
        steps: 0,
        virtual_ms: 0,
        status: CaseStatus::Ok,
        problems: Vec::new(),
    };
    let (report, problems) = match check(s, seed) {
        Ok(r) => r,
        Err(e) => {
            case.problems.push(e.to_string());
            case.status = CaseStatus::Fail;
            return case;
        }
    };
    case.steps = report.steps;
    case.virtual_ms = report.virtual_ms;
    case.problems = problems;
    if seed == s.seed
        && let Err(e) = compare_snapshot(path, &report.transcript, mode, &mut case)
    {
        case.problems.push(format!("snapshot io: {e}"));
    }
    if case.failed() {
        case.status = CaseStatus::Fail;
    }
    case
}

fn compare_snapshot(
    path: &Path,
    transcript: &str,
    mode: SnapshotMode,
    case: &mut CaseResult,
) -> io::Result<()> {
    let file = snapshot::file_for(path);
    let pending = file.with_extension("snap.new");
    let input = snapshot::input_file(path);
    let stored = snapshot::read(&file)?;
    if stored
        .as_deref()
        .is_some_and(|old| snapshot::same(old, transcript))
    {
        if pending.exists() {
            std::fs::remove_file(&pending)?;
        }
        return Ok(());
    }
    if mode == SnapshotMode::Update {
        snapshot::write(&file, &input, transcript)?;
        if pending.exists() {
            std::fs::remove_file(&pending)?;
        }
        case.status = CaseStatus::Updated;
        return Ok(());
    }
    let wrote = if mode == SnapshotMode::Check {
        snapshot::write(&pending, &input, transcript)?;
        format!(
            " (new transcript written to {}; review with `cargo insta review` or accept with --update)",
            pending.display()
        )
    } else {
        String::new()
    };
    match stored {
        None => case
            .problems
            .push(format!("no snapshot at {}{wrote}", file.display())),
        Some(old) => case.problems.push(format!(
            "transcript differs from {}{wrote}:\n{}",
            file.display(),
            crate::format::diff(&old, transcript, "snapshot", "this run")
        )),
    }
    Ok(())
}

/// The summary table, one row per scenario, then the totals line.
pub fn table(cases: &[CaseResult]) -> String {
    let headers = ["scenario", "rules", "steps", "virtual", "result"];
    let rows: Vec<[String; 5]> = cases
        .iter()
        .map(|c| {
            [
                c.name.clone(),
                c.rules.join(","),
                c.steps.to_string(),
                format!("{}ms", c.virtual_ms),
                c.status.to_string(),
            ]
        })
        .collect();
    let mut widths = headers.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        format!(
            "{:<w0$}  {:<w1$}  {:>w2$}  {:>w3$}  {}\n",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
        )
    };
    let mut out = line(headers);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    let failed = cases.iter().filter(|c| c.failed()).count();
    out.push_str(&format!(
        "\n{} passed, {failed} failed\n",
        cases.len() - failed
    ));
    out
}
