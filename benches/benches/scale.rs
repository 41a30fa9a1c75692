//! Long threads (BENCHMARKS.md, "Our own workloads"): one scenario of N
//! sends made at once, so N runs queue on one thread and each sees the
//! whole thread so far. Prints the wall time and the peak resident memory
//! of each N, and the growth from one N to the next: linear work doubles
//! when N doubles, quadratic work quadruples.
//!
//! Each N runs in a child process of this bench (peak RSS only grows, so
//! one process per N), which builds the scenario, runs it once through
//! `pai_sim::simulate` (world, runtime, oracles, transcript) and reads its
//! own peak RSS from `/proc/self/status` (`VmHWM`; Linux). The sizes come
//! from `PAI_SCALE_SENDS` (default `500,1000,2000`; the aim of issue 27 is
//! `1000,4000,16000`, which takes minutes while the work is quadratic).
//! Prints `RESULT SCALE sends_<N>_s` and `sends_<N>_mb` lines.

use std::io::Write as _;
use std::process::Command;
use std::time::Instant;

use pai_sim::{Scenario, simulate};

const CHILD: &str = "PAI_SCALE_CHILD";

/// A line on stdout (the workspace denies `println!` outside binaries'
/// reports; a bench's report is its output).
macro_rules! say {
    ($($arg:tt)*) => {
        let _ = writeln!(std::io::stdout(), $($arg)*);
    };
}

/// The scenario of `n` sends at 0 ms, each answered by one scripted turn.
fn scenario_text(n: usize) -> String {
    let mut text = format!(
        "name = \"scale: {n} queued sends\"\nrules = [\"K1\"]\ntime_limit_ms = {}\n\n",
        // Every run takes a few virtual ms; leave room for all of them.
        (n as u64 + 10) * 1_000
    );
    for _ in 0..n {
        text.push_str("[[model.turns]]\ntext = [\"ok\"]\n\n");
    }
    for i in 0..n {
        text.push_str(&format!(
            "[[timeline]]\nat = 0\nsend = \"question {i}\"\n\n"
        ));
    }
    text
}

/// Peak resident memory of this process, in MB.
fn peak_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    kb / 1024.0
}

/// In the child: one run of `n` sends; prints `<seconds> <peak MB>`.
fn child(n: usize) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(format!("scale_{n}.toml"));
    std::fs::write(&path, scenario_text(n)).expect("scenario written");
    let s = Scenario::load(&path).expect("the scale scenario loads");
    let started = Instant::now();
    let report = simulate(&s, s.seed).expect("the scale scenario runs");
    let secs = started.elapsed().as_secs_f64();
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    say!("{secs:.3} {:.1}", peak_mb());
}

fn main() {
    if let Some(n) = std::env::var(CHILD).ok().and_then(|v| v.parse().ok()) {
        return child(n);
    }
    let sizes: Vec<usize> = std::env::var("PAI_SCALE_SENDS")
        .unwrap_or_else(|_| "500,1000,2000".into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    let me = std::env::current_exe().expect("the bench's own path");
    say!(
        "{:>7}  {:>9}  {:>8}  {:>12}",
        "sends",
        "wall s",
        "peak MB",
        "time growth"
    );
    let mut last: Option<(usize, f64)> = None;
    for n in sizes {
        let out = Command::new(&me).env(CHILD, n.to_string()).output();
        let out = out.expect("the child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
        let (Some(Some(secs)), Some(Some(mb))) = (fields.next(), fields.next()) else {
            let _ = writeln!(
                std::io::stderr(),
                "{n} sends failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::process::exit(1);
        };
        let growth = last.map_or(String::new(), |(m, t)| {
            format!("x{:.2} for x{:.1}", secs / t, n as f64 / m as f64)
        });
        say!("{n:>7}  {secs:>9.3}  {mb:>8.1}  {growth:>12}");
        say!("RESULT SCALE sends_{n}_s {secs:.3}");
        say!("RESULT SCALE sends_{n}_mb {mb:.1}");
        last = Some((n, secs));
    }
}
