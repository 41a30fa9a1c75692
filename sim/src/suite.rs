//! Finding scenario files and running them as a suite.

use std::io;
use std::path::{Path, PathBuf};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::report::Report;
use crate::run::{check_on, replay_on};
use crate::scenario::{Scenario, ScenarioError};
use crate::snapshot;
use crate::world::StoreKind;

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

/// The nearest `scenarios/` folder from `from` up (`from`'s own first),
/// written relative to `from` (`scenarios`, `../scenarios`, ...) so that the
/// paths of reports and replay lines work where the command ran; `None`
/// when no folder from `from` up to the file system's root holds one.
pub fn nearest_scenarios(from: &Path) -> Option<PathBuf> {
    let mut up = PathBuf::new();
    for dir in from.ancestors() {
        if dir.join("scenarios").is_dir() {
            return Some(up.join("scenarios"));
        }
        up.push("..");
    }
    None
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
    errors.extend(collisions(ok.iter().map(|(p, _)| p.as_path())));
    if errors.is_empty() {
        Ok(ok)
    } else {
        Err(errors)
    }
}

/// Two files of one suite whose snapshots would share a name (`x.toml` and
/// `x.json`, `a/b.toml` and `a__b.toml`): each pair is an error naming both.
fn collisions<'a>(files: impl Iterator<Item = &'a Path>) -> Vec<ScenarioError> {
    let mut seen: std::collections::BTreeMap<PathBuf, &Path> = std::collections::BTreeMap::new();
    let mut out = Vec::new();
    for f in files {
        let Some(at) = snapshot::locate(f) else {
            continue;
        };
        if let Some(first) = seen.insert(at.file(), f) {
            out.push(ScenarioError::new(
                f,
                format!(
                    "its snapshot {} would also be the snapshot of {}; rename one of them",
                    at.file().display(),
                    first.display()
                ),
            ));
        }
    }
    out
}

/// Snapshot files of the suites of `files` that no scenario file owns: left
/// behind by a rename or a removal. Pending `.snap.new` files count too.
pub fn orphans(files: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    let located: Vec<snapshot::Located> =
        files.iter().filter_map(|f| snapshot::locate(f)).collect();
    let owned: std::collections::BTreeSet<PathBuf> = located.iter().map(|l| l.file()).collect();
    let roots: std::collections::BTreeSet<&Path> =
        located.iter().map(|l| l.root.as_path()).collect();
    let mut out = Vec::new();
    for root in roots {
        let dir = root.join("snapshots");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Some(stem) = name
                .strip_suffix(".snap.new")
                .or_else(|| name.strip_suffix(".snap"))
            else {
                continue;
            };
            if !owned.contains(&dir.join(format!("{stem}.snap"))) {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
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
    /// It met its expectation; it has no snapshot to match, being outside
    /// every `scenarios/` folder.
    NoSnapshot,
    /// It met its expectation; its snapshot was (re)written.
    Updated,
    /// Something failed; see the case's problems.
    Fail,
}

impl CaseStatus {
    /// The status as the results table prints it (`ok`, `ok, no snapshot`,
    /// `updated`, `FAIL`).
    pub fn as_str(self) -> &'static str {
        match self {
            CaseStatus::Ok => "ok",
            CaseStatus::NoSnapshot => "ok, no snapshot",
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
    /// The scenario file, as discovered or named.
    pub path: PathBuf,
    /// The scenario's `name`.
    pub name: String,
    /// The SPEC rule ids the scenario names.
    pub rules: Vec<String>,
    /// The seed it ran with: the file's, unless the caller gave another.
    pub seed: u64,
    /// The store the run kept its threads in.
    pub store: StoreKind,
    /// The run was also compared with one on the other store (`--differential`).
    pub differential: bool,
    /// Model steps committed, over all runs (from the first run).
    pub steps: u32,
    /// Virtual milliseconds at which the scenario went idle (from the first
    /// run).
    pub virtual_ms: u64,
    /// Ok, updated, without a snapshot, or failed.
    pub status: CaseStatus,
    /// What went wrong, one message each: a run that could not start, a
    /// broken expectation, a D4 or D1 difference, a snapshot mismatch; empty
    /// when the case passed.
    pub problems: Vec<String>,
}

impl CaseResult {
    /// Whether anything went wrong (`problems` is not empty).
    pub fn failed(&self) -> bool {
        !self.problems.is_empty()
    }

    /// The one shell command that replays this case as it ran: its file, seed,
    /// store and `--differential` when compared (SPEC D2).
    pub fn replay(&self) -> String {
        let line = replay_on(&self.path, self.seed, self.store);
        match self.differential {
            true => format!("{line} --differential"),
            false => line,
        }
    }
}

/// Runs one loaded scenario: twice for D4, its expectation, then its
/// snapshot; with `differential`, once more on the other store, which must
/// give the same transcript, event log and stored threads (D1).
pub fn run_case(
    path: &Path,
    s: &Scenario,
    seed_override: Option<u64>,
    on: (StoreKind, bool),
    mode: SnapshotMode,
) -> CaseResult {
    run_case_keeping_report(path, s, seed_override, on, mode).0
}

/// [`run_case`], and the first run's report when the scenario ran.
pub(crate) fn run_case_keeping_report(
    path: &Path,
    s: &Scenario,
    seed_override: Option<u64>,
    (store, differential): (StoreKind, bool),
    mode: SnapshotMode,
) -> (CaseResult, Option<Report>) {
    let seed = seed_override.unwrap_or(s.seed);
    let mut case = CaseResult {
        path: path.to_path_buf(),
        name: s.name.clone(),
        rules: s.rules.clone(),
        seed,
        store,
        differential,
        steps: 0,
        virtual_ms: 0,
        status: CaseStatus::Ok,
        problems: Vec::new(),
    };
    let (report, problems) = match check_on(s, seed, store) {
        Ok(r) => r,
        Err(e) => {
            case.problems.push(e.to_string());
            case.status = CaseStatus::Fail;
            return (case, None);
        }
    };
    case.steps = report.steps;
    case.virtual_ms = report.virtual_ms;
    case.problems = problems;
    if differential {
        match crate::differential::across_stores(s, seed, store, &report) {
            Ok(None) => {}
            Ok(Some(d)) => case.problems.push(format!("D1 across stores: {d}")),
            Err(e) => case.problems.push(e.to_string()),
        }
    }
    if seed == s.seed
        && let Err(e) = compare_snapshot(path, &report.transcript, mode, &mut case)
    {
        case.problems.push(format!("snapshot io: {e}"));
    }
    if case.failed() {
        case.status = CaseStatus::Fail;
    }
    (case, Some(report))
}

/// Runs one loaded scenario on every store the simulator has, in one pass:
/// on memory as [`run_case`] does (twice for D4, its expectation, its
/// snapshot), on SQLite twice with its expectation too, and the two stores'
/// first runs compared (D1): what `--differential` and `--store sqlite`
/// check together, with four runs instead of six. A failure on SQLite or
/// across the stores replays with `--store sqlite --differential`.
pub fn run_case_on_every_store(
    path: &Path,
    s: &Scenario,
    seed_override: Option<u64>,
    mode: SnapshotMode,
) -> CaseResult {
    let seed = seed_override.unwrap_or(s.seed);
    let memory = (StoreKind::Memory, false);
    let (mut case, mine) = run_case_keeping_report(path, s, seed_override, memory, mode);
    let sqlite = StoreKind::Sqlite;
    let problems = match (mine, check_on(s, seed, sqlite)) {
        (_, Err(e)) => vec![format!("on sqlite: {e}")],
        (None, Ok(_)) => Vec::new(), // the memory run's error is reported
        (Some(mine), Ok((theirs, problems))) => {
            let mut out: Vec<String> = problems.iter().map(|p| format!("on sqlite: {p}")).collect();
            let names = (StoreKind::Memory.as_str(), sqlite.as_str());
            if let Some(d) = crate::differential::compare(&mine, &theirs, names) {
                out.push(format!("D1 across stores: {d}"));
            }
            out
        }
    };
    if !problems.is_empty() {
        (case.store, case.differential) = (sqlite, true);
        case.problems.extend(problems);
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
    // A scenario outside every suite has no snapshot to compare.
    let Some(at) = snapshot::locate(path) else {
        case.status = CaseStatus::NoSnapshot;
        return Ok(());
    };
    let (file, pending, input) = (at.file(), at.pending(), at.input_file);
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
            " (new transcript written to {}; review it with `cargo insta review` (needs a \
             terminal), accept it with `cargo insta accept --snapshot {}`, or accept every new \
             transcript with `pai-sim run --update` (`PAI_SIM_UPDATE=1 cargo test` with a \
             harness))",
            pending.display(),
            file.display()
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

/// Snapshot files no scenario file owns, as the totals line counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Orphans {
    /// Left in place: they fail the run.
    pub left: usize,
    /// Removed (`--prune`).
    pub removed: usize,
}

impl Orphans {
    /// `, 1 orphaned snapshot` / `, 2 orphaned snapshots removed`, or nothing.
    fn totals(self) -> String {
        let count = |n: usize| match n {
            1 => "1 orphaned snapshot".to_string(),
            n => format!("{n} orphaned snapshots"),
        };
        let mut out = String::new();
        if self.left > 0 {
            out.push_str(&format!(", {}", count(self.left)));
        }
        if self.removed > 0 {
            out.push_str(&format!(", {} removed", count(self.removed)));
        }
        out
    }
}

/// The widest a name column grows; longer names are cut with an ellipsis.
const NAME_WIDTH: usize = 72;

/// `text` cut to at most `width` display columns, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `text` padded with spaces to `width` display columns.
fn pad(text: &str, width: usize, right: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(text.width()));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

/// The summary table, one row per scenario, then the totals line, which
/// names the orphaned snapshots too (left ones fail the run). Columns are
/// measured in display width (CJK and emoji take two).
pub fn table(cases: &[CaseResult], orphans: Orphans) -> String {
    let headers = ["scenario", "rules", "steps", "virtual", "result"];
    let rows: Vec<[String; 5]> = cases
        .iter()
        .map(|c| {
            [
                fit(&c.name, NAME_WIDTH),
                c.rules.join(","),
                c.steps.to_string(),
                format!("{}ms", c.virtual_ms),
                c.status.to_string(),
            ]
        })
        .collect();
    let mut widths = headers.map(str::width);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.width());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let last = i == cells.len() - 1;
            l.push_str(&if last {
                cell.to_string()
            } else {
                pad(cell, w, i == 2 || i == 3)
            });
            l.push_str(if last { "\n" } else { "  " });
        }
        l
    };
    let mut out = line(headers);
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
    }
    let failed = cases.iter().filter(|c| c.failed()).count();
    out.push_str(&format!(
        "\n{} passed, {failed} failed{}\n",
        cases.len() - failed,
        orphans.totals()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str) -> CaseResult {
        CaseResult {
            path: PathBuf::from("x.toml"),
            name: name.to_string(),
            rules: vec!["L1".into()],
            seed: 1,
            store: StoreKind::Memory,
            differential: false,
            steps: 2,
            virtual_ms: 30,
            status: CaseStatus::Ok,
            problems: vec![],
        }
    }

    #[test]
    fn the_table_measures_display_width_and_cuts_long_names() {
        let t = table(
            &[
                case("日本語のシナリオ"),
                case("ascii"),
                case(&"x".repeat(65_536)),
            ],
            Orphans::default(),
        );
        let lines: Vec<&str> = t.lines().collect();
        let at = |l: &str| l.find("L1").map(|i| l[..i].width());
        assert_eq!(at(lines[1]), at(lines[2]), "{t}");
        assert_eq!(at(lines[2]), at(lines[3]), "{t}");
        assert!(lines[3].contains('…'));
        assert!(t.ends_with("3 passed, 0 failed\n"));
    }

    #[test]
    fn the_totals_line_names_orphaned_snapshots() {
        let last = |o: Orphans| table(&[case("a")], o).lines().last().unwrap().to_string();
        assert_eq!(last(Orphans::default()), "1 passed, 0 failed");
        let one = Orphans {
            left: 1,
            removed: 0,
        };
        assert_eq!(last(one), "1 passed, 0 failed, 1 orphaned snapshot");
        let gone = Orphans {
            left: 0,
            removed: 2,
        };
        assert_eq!(
            last(gone),
            "1 passed, 0 failed, 2 orphaned snapshots removed"
        );
    }

    #[test]
    fn the_nearest_scenarios_folder_is_found_walking_up() {
        let dir = std::env::temp_dir().join(format!("pai-nearest-{}", std::process::id()));
        let deep = dir.join("scenarios/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(nearest_scenarios(&dir), Some(PathBuf::from("scenarios")));
        let up = nearest_scenarios(&deep).unwrap();
        assert_eq!(up, Path::new("../../../scenarios"));
        assert_eq!(
            std::fs::canonicalize(deep.join(&up)).unwrap(),
            std::fs::canonicalize(dir.join("scenarios")).unwrap()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
