//! `pai-sim run`: the scenario suite, its snapshots, and reports for people
//! (a table, colour on a terminal) and for CI (JUnit XML, JSON lines).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use pai_sim::{CaseResult, CaseStatus, Orphans, SnapshotMode};

/// What `pai-sim run` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or folders (default: the nearest scenarios/, in the working
    /// folder or one above it).
    paths: Vec<PathBuf>,
    /// Only scenarios whose name or path contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Run with this seed instead of each scenario's own. A scenario whose
    /// own seed it is still compares its snapshot; under any other seed
    /// its snapshot is not compared (the run is a pure oracle check).
    #[arg(long)]
    seed: Option<u64>,
    /// Accept every transcript as the new snapshot (refused when CI is set).
    #[arg(long)]
    update: bool,
    /// Remove snapshots no scenario file owns any more (refused when CI is set).
    #[arg(long)]
    prune: bool,
    /// Also write a JUnit XML report here: one test case per scenario.
    #[arg(long)]
    junit: Option<PathBuf>,
    /// Where the runs keep their threads: `memory` (default) or `sqlite`.
    /// Transcripts must not depend on it: the snapshots are the same.
    #[arg(long, default_value = "memory")]
    store: pai_sim::StoreKind,
    /// Also run each scenario on the other store (SQLite with `--store
    /// memory`, memory with `--store sqlite`): its transcript, event log and
    /// stored threads must be byte-identical, else the scenario fails with
    /// the first difference (D1).
    #[arg(long)]
    differential: bool,
    /// Run each scenario on every store, memory and SQLite, each twice and
    /// judged, and compare the two (D1): `--differential` and `--store
    /// sqlite` in one pass (what CI runs).
    #[arg(long, conflicts_with_all = ["store", "differential"])]
    all_stores: bool,
    /// `text` (the table, default) or `json` (one object per scenario and line).
    #[arg(long, default_value = "text")]
    format: String,
}

/// Whether stderr takes colour: a terminal, and `NO_COLOR` unset.
pub fn stderr_color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether `CI` is set (to anything but empty, `0` or `false`).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let json = match args.format.as_str() {
        "json" => true,
        "text" => false,
        other => bail!("--format {other}: expected text or json"),
    };
    if in_ci() && (args.update || args.prune) {
        eprintln!(
            "error: CI is set, so no snapshot may be written or removed; --update and --prune are refused"
        );
        return Ok(ExitCode::from(2));
    }
    let paths = match args.paths.is_empty() {
        true => vec![super::locate::scenarios_dir("pai-sim run PATH ...")?],
        false => args.paths.clone(),
    };
    let files = pai_sim::discover(&paths).context("finding scenario files")?;
    let scenarios = match pai_sim::load_all(&files) {
        Ok(s) => s,
        Err(errors) => {
            let color = stderr_color();
            for e in &errors {
                eprintln!("{}\n", e.render(color));
            }
            eprintln!(
                "{} malformed scenario file(s); nothing was run",
                errors.len()
            );
            return Ok(ExitCode::from(2));
        }
    };
    let selected: Vec<_> = scenarios
        .iter()
        .filter(|(p, s)| {
            let f = args.filter.as_deref();
            f.is_none_or(|f| s.name.contains(f) || p.to_string_lossy().contains(f))
        })
        .collect();
    if selected.is_empty() {
        bail!("no scenario matched");
    }
    let mode = match (args.update, in_ci()) {
        (true, _) => SnapshotMode::Update,
        (false, true) => SnapshotMode::CheckReadOnly,
        (false, false) => SnapshotMode::Check,
    };
    let mut out = Out::new(json);
    let mut cases = Vec::new();
    for (path, s) in selected {
        for w in &s.warnings {
            eprintln!("warning: {}: {w}", path.display());
        }
        let case = match args.all_stores {
            true => pai_sim::run_case_on_every_store(path, s, args.seed, mode),
            false => pai_sim::run_case(path, s, args.seed, (args.store, args.differential), mode),
        };
        out.case(&case);
        warn_if_no_snapshot(&case);
        cases.push(case);
    }
    let stale = stale_snapshots(&args, &paths, &files, &mut out)?;
    if let Some(file) = &args.junit {
        std::fs::write(file, junit(&cases))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    out.finish(&cases, stale);
    let failed = cases.iter().any(|c| c.failed()) || stale.left > 0;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A scenario outside every suite passed with nothing to compare its
/// transcript with: say so, and why, on stderr.
fn warn_if_no_snapshot(case: &CaseResult) {
    if case.status == CaseStatus::NoSnapshot {
        eprintln!(
            "warning: {}: no snapshot was compared, because the file is not inside a \
             scenarios/ folder (its snapshot's place is snapshots/ beside scenarios/); only \
             its expectation and the oracles judged it",
            case.path.display()
        );
    }
}

/// When the whole suite ran, lists (or with `--prune` removes) snapshots no
/// scenario owns; those left fail the run.
fn stale_snapshots(
    args: &Args,
    paths: &[PathBuf],
    files: &[PathBuf],
    out: &mut Out,
) -> anyhow::Result<Orphans> {
    let whole = args.filter.is_none()
        && paths
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "scenarios"));
    if !whole {
        return Ok(Orphans::default());
    }
    let orphans = pai_sim::orphans(files).context("listing snapshots")?;
    for o in &orphans {
        if args.prune {
            std::fs::remove_file(o).with_context(|| format!("removing {}", o.display()))?;
            out.note(&format!("removed orphaned snapshot {}", o.display()));
        } else {
            out.note(&format!(
                "orphaned snapshot {}: no scenario file owns it (renamed or removed?); remove it with --prune",
                o.display()
            ));
        }
    }
    Ok(match args.prune {
        true => Orphans {
            left: 0,
            removed: orphans.len(),
        },
        false => Orphans {
            left: orphans.len(),
            removed: 0,
        },
    })
}

/// Where results go: the text report (coloured on a terminal unless
/// `NO_COLOR` is set) or JSON lines. A closed pipe ends the output quietly.
struct Out {
    json: bool,
    color: bool,
    open: bool,
    stdout: std::io::StdoutLock<'static>,
}

impl Out {
    fn new(json: bool) -> Out {
        let color = std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        Out {
            json,
            color: color && !json,
            open: true,
            stdout: std::io::stdout().lock(),
        }
    }

    fn write(&mut self, text: &str) {
        if self.open && self.stdout.write_all(text.as_bytes()).is_err() {
            self.open = false; // a closed pipe: nobody reads any more
        }
    }

    fn paint(&self, text: &str, code: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn case(&mut self, case: &CaseResult) {
        if self.json {
            let line = json_line(case);
            self.write(&format!("{line}\n"));
            return;
        }
        if case.failed() {
            let mut text = format!(
                "{} {} ({})\n",
                self.paint("FAIL", "31;1"),
                case.name,
                case.path.display()
            );
            for p in &case.problems {
                text.push_str(&format!("  {}\n", p.replace('\n', "\n  ")));
            }
            text.push_str(&format!("  replay: {}\n\n", case.replay()));
            self.write(&text);
        }
    }

    /// A note above the table; on stderr with `--format json`, whose
    /// stdout holds scenario lines only.
    fn note(&mut self, text: &str) {
        match self.json {
            true => eprintln!("{text}"),
            false => self.write(&format!("{}\n", self.paint(text, "33"))),
        }
    }

    fn finish(&mut self, cases: &[CaseResult], orphans: Orphans) {
        if self.json {
            return;
        }
        let table = pai_sim::table(cases, orphans);
        let painted = table
            .lines()
            .map(|l| match l.rsplit_once("  ") {
                Some((rest, "FAIL")) => format!("{rest}  {}", self.paint("FAIL", "31;1")),
                Some((rest, "ok")) => format!("{rest}  {}", self.paint("ok", "32")),
                Some((rest, r @ "ok, no snapshot")) => format!("{rest}  {}", self.paint(r, "33")),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.write(&(painted + "\n"));
    }
}

fn json_line(c: &CaseResult) -> serde_json::Value {
    serde_json::json!({
        "name": c.name,
        "path": path(&c.path),
        "rules": c.rules,
        "seed": c.seed,
        "steps": c.steps,
        "virtual_ms": c.virtual_ms,
        "result": c.status.to_string(),
        "problems": c.problems,
        "replay": c.failed().then(|| c.replay()),
    })
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// Text for an XML attribute or element.
fn xml(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            '\'' => "&apos;".into(),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {
                format!("&#x{:x};", c as u32)
            }
            c => c.to_string(),
        })
        .collect()
}

/// A JUnit XML report: one test case per scenario, each failure with its
/// problems (diffs included) and its replay line.
pub fn junit(cases: &[CaseResult]) -> String {
    let failures = cases.iter().filter(|c| c.failed()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"pai-sim\" tests=\"{}\" failures=\"{failures}\">\n<testsuite name=\"scenarios\" tests=\"{}\" failures=\"{failures}\">\n",
        cases.len(),
        cases.len()
    ));
    for c in cases {
        let time = c.virtual_ms as f64 / 1000.0;
        out.push_str(&format!(
            "  <testcase name=\"{}\" classname=\"{}\" time=\"{time}\">\n",
            xml(&c.name),
            xml(&path(&c.path))
        ));
        if c.status == CaseStatus::Fail {
            let first = c
                .problems
                .first()
                .map(|p| p.lines().next().unwrap_or(""))
                .unwrap_or("failed");
            let body = format!("{}\nreplay: {}", c.problems.join("\n"), c.replay());
            out.push_str(&format!(
                "    <failure message=\"{}\">{}</failure>\n",
                xml(first),
                xml(&body)
            ));
        }
        out.push_str("  </testcase>\n");
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}
