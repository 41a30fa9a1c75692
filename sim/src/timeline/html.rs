//! The page around the timeline: head and styles, the scenario header, the
//! oracle verdicts, the live text in full, and the transcript.

use std::fmt::Write as _;

use super::escape::esc;
use super::model::{Kind, Model, WatcherLane};
use super::track;
use crate::{Expectation, Report, Scenario};

const STYLE: &str = include_str!("style.css");

/// The whole document: polyglot HTML5 (every element closed, attributes
/// quoted, only XML's own entities), so it parses as XML too.
pub(super) fn page(scenario: &Scenario, seed: u64, report: &Report, model: &Model) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    let _ = writeln!(
        out,
        "<title>{} · seed {seed} · pai-sim timeline</title>",
        esc(&scenario.name)
    );
    let _ = writeln!(out, "<style>\n{STYLE}</style>\n</head>\n<body>");
    header(&mut out, scenario, seed, report, model);
    track::timeline(&mut out, model);
    verdicts(&mut out, scenario, report);
    live_text(&mut out, &model.watchers);
    transcript(&mut out, report);
    out.push_str("</body>\n</html>\n");
    out
}

fn header(out: &mut String, s: &Scenario, seed: u64, report: &Report, model: &Model) {
    let _ = writeln!(out, "<header>\n<h1>{}</h1>", esc(&s.name));
    if let Some(d) = &s.description {
        let _ = writeln!(out, "<p class=\"desc\">{}</p>", esc(d.trim()));
    }
    out.push_str("<dl class=\"facts\">\n");
    fact(out, "rules", &s.rules.join(", "));
    let seed_text = if seed == s.seed {
        seed.to_string()
    } else {
        format!("{seed} (the scenario's own is {})", s.seed)
    };
    fact(out, "seed", &seed_text);
    fact(
        out,
        "virtual duration",
        &format!("{} ms", report.virtual_ms),
    );
    let runs = format!(
        "{} on {} thread(s); {} model step(s) committed",
        model.runs(),
        model.threads.len(),
        report.steps
    );
    fact(out, "runs", &runs);
    if !model.workers.is_empty() {
        let names: Vec<&str> = model.workers.iter().map(|w| w.name.as_str()).collect();
        let faults = model
            .workers
            .iter()
            .flat_map(|w| &w.rows)
            .flat_map(|r| &r.items)
            .filter(|i| i.kind == Kind::Fault)
            .count();
        let workers = format!("{} · {faults} fault(s) carried out", names.join(", "));
        fact(out, "workers", &workers);
    }
    fact(out, "expect", &expectation(&s.expect));
    out.push_str("</dl>\n");
    if report.limit_reached {
        out.push_str("<p><span class=\"flag\">stopped at the virtual-time limit</span></p>\n");
    }
    if report.runtime_panicked {
        out.push_str("<p><span class=\"flag\">the runtime's step loop panicked</span></p>\n");
    }
    out.push_str("</header>\n");
}

fn fact(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(name), esc(value));
}

fn expectation(e: &Expectation) -> String {
    match e {
        Expectation::Pass => "pass: every oracle stays quiet".to_string(),
        Expectation::Violation(o) => format!("violation: oracle {o} reports one"),
    }
}

fn verdicts(out: &mut String, s: &Scenario, report: &Report) {
    out.push_str("<section id=\"verdicts\" class=\"verdicts\">\n<h2>Oracle verdicts</h2>\n");
    if report.violations.is_empty() {
        out.push_str("<p class=\"quiet\">all quiet: no oracle reported a violation</p>\n");
    } else {
        out.push_str("<ul class=\"violations\">\n");
        for v in &report.violations {
            let run = v.run.as_deref().unwrap_or("-");
            let _ = writeln!(
                out,
                "<li class=\"violation\" data-oracle=\"{o}\"><code class=\"oracle\">{o}</code> \
                 run <code class=\"run\">{}</code>: <span class=\"message\">{}</span></li>",
                esc(run),
                esc(&v.message),
                o = esc(v.oracle.as_str()),
            );
        }
        out.push_str("</ul>\n");
    }
    let _ = match crate::verdict(s, report) {
        Ok(()) => writeln!(
            out,
            "<p class=\"verdict ok\">as expected ({})</p>",
            esc(&expectation(&s.expect))
        ),
        Err(problem) => writeln!(
            out,
            "<p class=\"verdict problem\">not as expected: {}</p>",
            esc(&problem)
        ),
    };
    out.push_str("</section>\n");
}

/// Each watcher's text in full, one stretch per run and step.
fn live_text(out: &mut String, watchers: &[WatcherLane]) {
    if watchers.is_empty() {
        return;
    }
    out.push_str("<section id=\"live\">\n<h2>Live text</h2>\n");
    for w in watchers {
        let _ = writeln!(
            out,
            "<div class=\"watch-text\" data-watcher=\"{}\">\n<h3>{} <span class=\"sub\">on thread {}</span></h3>",
            esc(&w.name),
            esc(&w.name),
            esc(w.thread.as_deref().unwrap_or("?"))
        );
        if w.segments.is_empty() {
            out.push_str("<p>no text received</p>\n");
        } else {
            out.push_str("<ol>\n");
            for s in &w.segments {
                let _ = write!(
                    out,
                    "<li><code>{} step {}</code> <q>{}</q>",
                    esc(&s.run),
                    s.step,
                    esc(&s.text)
                );
                if let Some(n) = &s.note {
                    let _ = write!(out, " <span class=\"note\">{}</span>", esc(n));
                }
                out.push_str("</li>\n");
            }
            out.push_str("</ol>\n");
        }
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
}

fn transcript(out: &mut String, report: &Report) {
    let _ = writeln!(
        out,
        "<section id=\"transcript\">\n<details><summary>Transcript</summary>\n<pre>{}</pre>\n</details>\n</section>",
        esc(&report.transcript)
    );
}
