//! `pai-sim fuzz merge`: the shard reports of one campaign (`pai-sim fuzz
//! --format json --shard I/N`, run on many machines) summed into one report.
//! Coverage counts add up; finds are de-duplicated by the rule they break
//! and the digest of their shrunk scenario (`find_digest`), so one bug found
//! by forty shards is listed once, with the cases that found it again.
//! Refused: reports of different seeds or shard counts, a shard given twice.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use pai_sim::fuzz::COVERAGE_KEYS;
use serde::{Deserialize, Serialize};

/// What `pai-sim fuzz merge` was asked.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Shard reports: the stdout of `pai-sim fuzz --format json`.
    #[arg(required = true, value_name = "REPORT")]
    reports: Vec<PathBuf>,
    /// `text` (default) or `json`.
    #[arg(long, default_value = "text")]
    format: String,
}

/// One shard's report, as `pai-sim fuzz --format json` writes it.
#[derive(Debug, Deserialize)]
struct ShardReport {
    seed: u64,
    shard: String,
    /// Whether the campaign used swarm testing (older reports: unknown).
    #[serde(default)]
    swarm: Option<bool>,
    cases: u64,
    runs: u64,
    failures: Vec<FindRow>,
    coverage: BTreeMap<String, u64>,
}

/// One find of a report; fields the merge does not read pass through.
#[derive(Debug, Clone, Deserialize, Serialize)]
struct FindRow {
    case: u64,
    rule: String,
    /// The shrunk scenario's digest (hex); reports older than it lack one.
    #[serde(default)]
    shrunk: Option<String>,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

/// A find of the merged campaign: its first finder, and who found it again.
#[derive(Debug, Serialize)]
struct MergedFind {
    shard: u64,
    #[serde(flatten)]
    row: FindRow,
    /// Cases (of any shard) whose shrunk find was the same.
    also: Vec<u64>,
}

/// The sum of the shards.
#[derive(Debug, Serialize)]
struct Merged {
    seed: u64,
    shards: BTreeSet<u64>,
    of: u64,
    missing: Vec<u64>,
    cases: u64,
    runs: u64,
    finds_before_dedup: u64,
    failures: Vec<MergedFind>,
    coverage: BTreeMap<String, u64>,
    blind_spots: Vec<String>,
}

/// Reads the reports, merges them, prints the sum; fails when any shard
/// found something.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let as_json = match args.format.as_str() {
        "json" => true,
        "text" => false,
        other => bail!("--format {other}: expected text or json"),
    };
    let mut reports = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        reports.push((path.clone(), read(path)?));
    }
    let merged = merge(&reports)?;
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&merged)?)?;
    } else {
        write!(out, "{}", text(&merged))?;
    }
    Ok(if merged.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn read(path: &Path) -> anyhow::Result<ShardReport> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a report of `pai-sim fuzz --format json`",
            path.display()
        )
    })
}

/// `I/N` of a report.
fn shard_of(path: &Path, text: &str) -> anyhow::Result<(u64, u64)> {
    let parsed = text
        .split_once('/')
        .and_then(|(i, n)| Some((i.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((i, n)) if (1..=n).contains(&i) => Ok((i, n)),
        _ => bail!("{}: shard {text:?} is not I/N", path.display()),
    }
}

fn merge(reports: &[(PathBuf, ShardReport)]) -> anyhow::Result<Merged> {
    let Some((first_path, first)) = reports.first() else {
        bail!("no reports to merge");
    };
    let (_, of) = shard_of(first_path, &first.shard)?;
    let mut by_shard = BTreeMap::new();
    for (path, r) in reports {
        let (i, n) = shard_of(path, &r.shard)?;
        if r.seed != first.seed || n != of || r.swarm != first.swarm {
            bail!(
                "{}: seed {} shard {} swarm {:?}, but {} has seed {} shard {} swarm {:?}: \
                 not shards of one campaign",
                path.display(),
                r.seed,
                r.shard,
                r.swarm,
                first_path.display(),
                first.seed,
                first.shard,
                first.swarm
            );
        }
        if by_shard.insert(i, r).is_some() {
            bail!("{}: shard {i}/{n} is given twice", path.display());
        }
    }
    let mut merged = Merged {
        seed: first.seed,
        shards: by_shard.keys().copied().collect(),
        of,
        missing: (1..=of).filter(|i| !by_shard.contains_key(i)).collect(),
        cases: by_shard.values().map(|r| r.cases).sum(),
        runs: by_shard.values().map(|r| r.runs).sum(),
        finds_before_dedup: by_shard.values().map(|r| r.failures.len() as u64).sum(),
        failures: dedup(&by_shard),
        coverage: BTreeMap::new(),
        blind_spots: Vec::new(),
    };
    for r in by_shard.values() {
        for (k, n) in &r.coverage {
            *merged.coverage.entry(k.clone()).or_default() += n;
        }
    }
    for k in COVERAGE_KEYS {
        merged.coverage.entry(k.to_string()).or_default();
    }
    merged.blind_spots = ordered_keys(&merged.coverage)
        .filter(|k| merged.coverage[*k] == 0)
        .map(str::to_string)
        .collect();
    Ok(merged)
}

/// One entry per (rule, shrunk scenario), first finder first (by shard,
/// then case); a find without a digest is its own entry.
fn dedup(by_shard: &BTreeMap<u64, &ShardReport>) -> Vec<MergedFind> {
    let mut out: Vec<MergedFind> = Vec::new();
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (&shard, r) in by_shard {
        let mut rows: Vec<&FindRow> = r.failures.iter().collect();
        rows.sort_by_key(|f| f.case);
        for row in rows {
            let key = row.shrunk.clone().map(|d| (row.rule.clone(), d));
            if let Some(&at) = key.as_ref().and_then(|k| seen.get(k)) {
                out[at].also.push(row.case);
                continue;
            }
            if let Some(k) = key {
                seen.insert(k, out.len());
            }
            out.push(MergedFind {
                shard,
                row: row.clone(),
                also: Vec::new(),
            });
        }
    }
    out
}

/// The coverage keys in the order `pai-sim fuzz` prints them, then any a
/// report of another version had (alphabetically).
fn ordered_keys(c: &BTreeMap<String, u64>) -> impl Iterator<Item = &str> {
    let known = COVERAGE_KEYS.iter().copied();
    let extra = c
        .keys()
        .map(String::as_str)
        .filter(|k| !COVERAGE_KEYS.contains(k));
    known.chain(extra)
}

fn text(m: &Merged) -> String {
    let list =
        |v: &mut dyn Iterator<Item = &u64>| v.map(u64::to_string).collect::<Vec<_>>().join(", ");
    let mut out = format!(
        "pai-sim fuzz merge: seed {}, shards {} of {}\n",
        m.seed,
        list(&mut m.shards.iter()),
        m.of
    );
    if !m.missing.is_empty() {
        out.push_str(&format!(
            "MISSING shards {}: this is not the whole campaign\n",
            list(&mut m.missing.iter())
        ));
    }
    for f in &m.failures {
        let field = |k: &str| f.row.rest.get(k).and_then(|v| v.as_str()).unwrap_or("");
        out.push_str(&format!(
            "FAIL case {} (shard {}/{}): {}: {}\n  file: {}\n  replay: {}\n",
            f.row.case,
            f.shard,
            m.of,
            field("failure"),
            field("message"),
            field("file"),
            field("replay")
        ));
        if !f.also.is_empty() {
            out.push_str(&format!(
                "  also found by cases {}\n",
                list(&mut f.also.iter())
            ));
        }
    }
    out.push_str("\ncoverage (times reached):\n");
    let width = ordered_keys(&m.coverage).map(str::len).max().unwrap_or(0);
    for k in ordered_keys(&m.coverage) {
        out.push_str(&format!("  {k:<width$}  {}\n", m.coverage[k]));
    }
    if !m.blind_spots.is_empty() {
        out.push_str(&format!(
            "blind spots (never reached): {}\n",
            m.blind_spots.join(", ")
        ));
    }
    out.push_str(&format!(
        "\n{} cases ({} runs), {} failed ({} finds before de-duplication)\n",
        m.cases,
        m.runs,
        m.failures.len(),
        m.finds_before_dedup
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(shard: &str, cases: u64, finds: &[(u64, &str, &str)]) -> ShardReport {
        let failures = finds
            .iter()
            .map(|(case, rule, digest)| FindRow {
                case: *case,
                rule: rule.to_string(),
                shrunk: Some(digest.to_string()),
                rest: serde_json::Map::new(),
            })
            .collect();
        ShardReport {
            seed: 7,
            shard: shard.into(),
            swarm: Some(true),
            cases,
            runs: cases * 2,
            failures,
            coverage: BTreeMap::from([
                ("extra.key".to_string(), cases),
                (COVERAGE_KEYS[0].to_string(), cases),
            ]),
        }
    }

    fn named(r: ShardReport) -> (PathBuf, ShardReport) {
        (
            PathBuf::from(format!("r{}.json", r.shard.replace('/', "-"))),
            r,
        )
    }

    #[test]
    fn shards_add_up_and_one_bug_is_listed_once() {
        let a = report("2/3", 10, &[(4, "K3", "aa"), (1, "K2", "bb")]);
        let b = report("1/3", 5, &[(9, "K3", "aa"), (3, "K3", "cc")]);
        let m = merge(&[named(a), named(b)]).unwrap();
        assert_eq!((m.cases, m.runs, m.of), (15, 30, 3));
        assert_eq!(m.missing, vec![3]);
        assert_eq!(m.coverage["extra.key"], 15);
        let found: Vec<_> = m
            .failures
            .iter()
            .map(|f| (f.shard, f.row.case, f.row.rule.as_str(), f.also.clone()))
            .collect();
        assert_eq!(
            found,
            vec![
                (1, 3, "K3", vec![]),
                (1, 9, "K3", vec![4]),
                (2, 1, "K2", vec![]),
            ]
        );
        assert_eq!(m.finds_before_dedup, 4);
        // Every known key is listed, then the other version's; a key no
        // shard reached is a blind spot, one reached is not.
        let keys: Vec<&str> = ordered_keys(&m.coverage).collect();
        assert_eq!(keys.len(), COVERAGE_KEYS.len() + 1);
        assert_eq!(
            (keys[0], keys[keys.len() - 1]),
            (COVERAGE_KEYS[0], "extra.key")
        );
        assert_eq!(m.blind_spots.len(), COVERAGE_KEYS.len() - 1);
        assert!(
            !m.blind_spots
                .iter()
                .any(|k| k == COVERAGE_KEYS[0] || k == "extra.key")
        );
        let shown = text(&m);
        assert!(shown.contains("MISSING shards 3"), "{shown}");
        assert!(shown.contains("  also found by cases 4\n"), "{shown}");
        assert!(shown.contains("blind spots (never reached): "), "{shown}");
        assert!(shown.contains("  extra.key"), "{shown}");
        assert_eq!(shown.matches("  also found by").count(), 1, "{shown}");
    }

    #[test]
    fn reports_of_other_campaigns_or_twice_the_same_shard_are_refused() {
        let mut other = report("2/2", 1, &[]);
        other.seed = 8;
        let err = merge(&[named(report("1/2", 1, &[])), named(other)]).unwrap_err();
        assert!(
            err.to_string().contains("not shards of one campaign"),
            "{err}"
        );
        let err = merge(&[named(report("1/2", 1, &[])), named(report("1/3", 1, &[]))]).unwrap_err();
        assert!(
            err.to_string().contains("not shards of one campaign"),
            "{err}"
        );
        let err = merge(&[named(report("1/2", 1, &[])), named(report("1/2", 1, &[]))]).unwrap_err();
        assert!(err.to_string().contains("given twice"), "{err}");
        let err = merge(&[named(report("3/2", 1, &[]))]).unwrap_err();
        assert!(err.to_string().contains("is not I/N"), "{err}");
    }
}
