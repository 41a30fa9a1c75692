//! The `pai-sim` command line.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use pai_sim::SnapshotMode;

mod cli {
    pub mod fuzz;
}

#[derive(Debug, Parser)]
#[command(
    name = "pai-sim",
    version,
    about = "Deterministic scenario runner for pai-runtime"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate cases from a seed, run every oracle on each (twice), and
    /// shrink each failure into a scenario file.
    Fuzz {
        /// How many cases (default 1000); with --time, the most to run.
        #[arg(long)]
        cases: Option<u64>,
        /// Run until this much time has passed (`30s`, `10m`, `1h`).
        #[arg(long)]
        time: Option<String>,
        /// The campaign's seed: the same seed and cases give the same cases.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run only shard I of N (`2/4`): the union of all shards is the whole run.
        #[arg(long, default_value = "1/1")]
        shard: String,
        /// Where shrunk failures are written.
        #[arg(long, default_value = "fuzz-failures")]
        out: PathBuf,
        /// Go on after a failure.
        #[arg(long)]
        keep_going: bool,
        /// `text` (default) or `json`.
        #[arg(long, default_value = "text")]
        format: String,
    },
    /// Run scenario files and folders; compare each transcript with its snapshot.
    Run {
        /// Files or folders (default: scenarios/).
        paths: Vec<PathBuf>,
        /// Only scenarios whose name or path contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Run with this seed instead of each scenario's own (snapshots are then not compared).
        #[arg(long)]
        seed: Option<u64>,
        /// Accept every transcript as the new snapshot.
        #[arg(long)]
        update: bool,
    },
}

fn main() -> ExitCode {
    pai_sim::quiet_planted_panics();
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Fuzz {
            cases,
            time,
            seed,
            shard,
            out,
            keep_going,
            format,
        } => {
            let json = match format.as_str() {
                "json" => true,
                "text" => false,
                other => anyhow::bail!("--format {other}: expected text or json"),
            };
            cli::fuzz::run(cli::fuzz::Args {
                cases,
                time,
                seed,
                shard,
                out,
                keep_going,
                json,
            })
        }
        Command::Run {
            paths,
            filter,
            seed,
            update,
        } => run(paths, filter, seed, update),
    }
}

fn run(
    paths: Vec<PathBuf>,
    filter: Option<String>,
    seed: Option<u64>,
    update: bool,
) -> anyhow::Result<ExitCode> {
    let paths = if paths.is_empty() {
        vec![PathBuf::from("scenarios")]
    } else {
        paths
    };
    let files = pai_sim::discover(&paths).context("finding scenario files")?;
    let scenarios = match pai_sim::load_all(&files) {
        Ok(s) => s,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
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
            filter
                .as_deref()
                .is_none_or(|f| s.name.contains(f) || p.to_string_lossy().contains(f))
        })
        .collect();
    if selected.is_empty() {
        anyhow::bail!("no scenario matched");
    }
    let mode = snapshot_mode(update);
    let mut cases = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for (path, s) in selected {
        let case = pai_sim::run_case(path, s, seed, mode);
        if case.failed() {
            report_failure(&mut stdout, &case)?;
        }
        cases.push(case);
    }
    write!(stdout, "{}", pai_sim::table(&cases))?;
    Ok(if cases.iter().any(|c| c.failed()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Whether snapshots are compared, left pending or written: with `CI` set,
/// nothing is written unless asked.
fn snapshot_mode(update: bool) -> SnapshotMode {
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "0" && v != "false");
    match (update, in_ci) {
        (true, _) => SnapshotMode::Update,
        (false, true) => SnapshotMode::CheckReadOnly,
        (false, false) => SnapshotMode::Check,
    }
}

/// A failed case: what went wrong, and the command that replays it (D2).
fn report_failure(
    out: &mut impl std::io::Write,
    case: &pai_sim::CaseResult,
) -> std::io::Result<()> {
    writeln!(out, "FAIL {} ({})", case.name, case.path.display())?;
    for p in &case.problems {
        writeln!(out, "  {}", p.replace('\n', "\n  "))?;
    }
    writeln!(out, "  replay: {}", case.replay())?;
    writeln!(out)
}
