//! `pai-sim fuzz`: the command around `pai_sim::fuzz::Campaign`. Stdout gets
//! a plain, stable report (the same for the same seed and cases); stderr
//! gets progress and the rate, which depend on the machine.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use pai_sim::fuzz::{COVERAGE_KEYS, Campaign, Find, Summary, find_digest, write_find};

/// What `pai-sim fuzz` was asked.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    then: Option<Then>,
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
    /// Where the cases keep their threads: `memory` (default) or `sqlite`.
    #[arg(long, default_value = "memory")]
    store: pai_sim::StoreKind,
    /// Also run one case in N on the other store (SQLite, or memory with
    /// `--store sqlite`); its transcript, event log and stored threads must
    /// be byte-identical (D1). 0: never; 1: every case.
    #[arg(long, value_name = "N", default_value_t = pai_sim::fuzz::DIFFERENTIAL_EVERY)]
    differential: u64,
    /// Every case draws from every kind of hook, tool, action and fault
    /// (without it, swarm testing switches a random half off per case).
    #[arg(long)]
    no_swarm: bool,
}

/// What `pai-sim fuzz` does instead of a campaign.
#[derive(Debug, clap::Subcommand)]
enum Then {
    /// Sum the shard reports (`--format json`) of one campaign: coverage
    /// added, finds listed once per rule and shrunk scenario.
    Merge(super::fuzz_merge::Args),
}

/// `10m`, `30s`, `1h`, `500ms`.
fn duration(text: &str) -> anyhow::Result<Duration> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let n: u64 = n
        .parse()
        .with_context(|| format!("--time {text}: expected a number and a unit"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" | "" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => bail!("--time {text}: the unit is one of ms, s, m, h"),
    })
}

/// `2/4` → (2, 4).
fn shard(text: &str) -> anyhow::Result<(u64, u64)> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.parse().ok()?, n.parse().ok()?)));
    match parsed {
        Some((i, n)) if n >= 1 && (1..=n).contains(&i) => Ok((i, n)),
        _ => bail!("--shard {text}: expected I/N with 1 <= I <= N"),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Then::Merge(merge)) = args.then {
        return super::fuzz_merge::run(merge);
    }
    let as_json = match args.format.as_str() {
        "json" => true,
        "text" => false,
        other => bail!("--format {other}: expected text or json"),
    };
    let limit = args.time.as_deref().map(duration).transpose()?;
    let campaign = campaign(&args, limit.is_some())?;
    let started = Instant::now();
    let bar = progress(campaign.cases.map(|n| n / campaign.shard.1));
    let summary = campaign.run(|s| {
        if let Some(bar) = &bar {
            bar.set_position(s.cases);
            bar.set_message(format!("{} failed", s.finds.len()));
        }
        limit.is_none_or(|l| started.elapsed() < l)
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let files = summary
        .finds
        .iter()
        .map(|f| {
            write_find(
                &args.out,
                &f.shrunk,
                &f.failure,
                (args.seed, f.index, f.steps),
            )
        })
        .collect::<std::io::Result<Vec<_>>>()
        .context("writing shrunk failures")?;
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    eprintln!(
        "ran {} cases ({} runs) in {elapsed:.1}s: {:.0} cases/s",
        summary.cases,
        runs(&summary),
        summary.cases as f64 / elapsed
    );
    let mut out = std::io::stdout().lock();
    let written = if as_json {
        writeln!(out, "{}", json(&args, &summary, &files))
    } else {
        write!(out, "{}", text(&args, campaign.shard, &summary, &files))
    };
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    Ok(if summary.finds.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The campaign the arguments ask for (`timed`: `--time` given, so the
/// case count is only a ceiling).
fn campaign(args: &Args, timed: bool) -> anyhow::Result<Campaign> {
    Ok(Campaign {
        seed: args.seed,
        cases: match timed {
            true => args.cases,
            false => Some(args.cases.unwrap_or(1000)),
        },
        shard: shard(&args.shard)?,
        keep_going: args.keep_going,
        shrink_budget: 2000,
        store: args.store,
        differential: args.differential,
        swarm: !args.no_swarm,
        registry: Default::default(),
    })
}

fn progress(total: Option<u64>) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} {pos}/{len} cases {per_sec} {msg} [{elapsed_precise}]",
    );
    if let Ok(style) = style {
        bar.set_style(style);
    }
    Some(bar)
}

/// Runs made: two per case (D4) and one more per case compared across
/// stores.
fn runs(s: &Summary) -> u64 {
    s.cases * 2 + s.coverage.count("diff.sqlite")
}

fn size(f: &Find) -> (usize, usize) {
    let entries = |s: &pai_sim::ScenarioSpec| {
        s.lifecycle.len() + s.agent.tools.len() + s.model.turns.len() + s.timeline.len()
    };
    (entries(&f.original), entries(&f.shrunk))
}

/// The command that replays a find (the store, and `--differential` for a
/// difference between stores), quoted for a shell.
fn replay(args: &Args, f: &Find, file: &Path) -> String {
    let shown = file.display().to_string();
    let quoted = shlex::try_quote(&shown).map_or(shown.clone(), |q| q.into_owned());
    let store = match args.store {
        pai_sim::StoreKind::Memory => String::new(),
        other => format!(" --store {}", other.as_str()),
    };
    format!("pai-sim run {quoted}{store}{}", f.failure.replay_flags())
}

fn text(args: &Args, (i, n): (u64, u64), s: &Summary, files: &[PathBuf]) -> String {
    let swarm = if args.no_swarm { ", no swarm" } else { "" };
    let mut out = format!("pai-sim fuzz: seed {}, shard {i}/{n}{swarm}\n", args.seed);
    for (f, file) in s.finds.iter().zip(files) {
        let (before, after) = size(f);
        out.push_str(&format!(
            "FAIL case {} (case seed {:#018x}): {}: {}\n  shrunk in {} steps, {before} -> {after} hooks, tools, turns and actions: {}\n  replay: {}\n",
            f.index, f.case_seed, f.failure, f.message, f.steps, file.display(), replay(args, f, file)
        ));
    }
    out.push_str("\ncoverage (times reached):\n");
    let width = COVERAGE_KEYS.iter().map(|k| k.len()).max().unwrap_or(0);
    for k in COVERAGE_KEYS {
        out.push_str(&format!("  {k:<width$}  {}\n", s.coverage.count(k)));
    }
    let blind = s.coverage.blind_spots();
    if !blind.is_empty() {
        out.push_str(&format!(
            "blind spots (never reached): {}\n",
            blind.join(", ")
        ));
    }
    out.push_str(&format!(
        "\n{} cases ({} runs), {} failed\n",
        s.cases,
        runs(s),
        s.finds.len()
    ));
    out
}

fn json(args: &Args, s: &Summary, files: &[PathBuf]) -> serde_json::Value {
    let finds: Vec<serde_json::Value> = s
        .finds
        .iter()
        .zip(files)
        .map(|(f, file)| {
            let (before, after) = size(f);
            serde_json::json!({
                "case": f.index,
                "case_seed": f.case_seed,
                "failure": f.failure.to_string(),
                "rule": f.failure.rule(),
                "message": f.message,
                "shrink_steps": f.steps,
                "entries": { "before": before, "after": after },
                "file": path(file),
                "shrunk": format!("{:016x}", find_digest(&f.shrunk)),
                "replay": replay(args, f, file),
            })
        })
        .collect();
    let coverage: serde_json::Map<String, serde_json::Value> = COVERAGE_KEYS
        .iter()
        .map(|k| (k.to_string(), s.coverage.count(k).into()))
        .collect();
    serde_json::json!({
        "seed": args.seed,
        "shard": args.shard,
        "swarm": !args.no_swarm,
        "cases": s.cases,
        "runs": runs(s),
        "failures": finds,
        "coverage": coverage,
        "blind_spots": s.coverage.blind_spots(),
    })
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_shards_parse() {
        assert_eq!(duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(duration("ten").is_err());
        assert_eq!(shard("2/4").unwrap(), (2, 4));
        assert!(shard("5/4").is_err());
        assert!(shard("0/4").is_err());
    }
}
