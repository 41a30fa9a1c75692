//! The transcript: a plain-text story of one run with a stable layout, made
//! to be read in a snapshot diff. Rendered from the same observed value the
//! oracles judge, and their verdicts.

mod calls;
mod checks;
mod cluster;
mod event;
mod facade;

use std::fmt::Write as _;

use pai_runtime::{Message, Part, event::LiveEvent, hook::ToolResult};

use crate::format::{json, opt, quoted, result, role, stream_part};
use crate::oracle::{Observed, Verdicts};
use calls::calls;
use event::event_line;
pub(crate) use event::{describe, transition};

fn message(out: &mut String, m: &Message) {
    let vis = match (m.visibility.transcript, m.visibility.context) {
        (true, true) => "transcript+context",
        (true, false) => "transcript only",
        (false, true) => "context only",
        (false, false) => "hidden",
    };
    let producer = serde_json::to_value(m.pai.producer).unwrap_or_default();
    let _ = write!(
        out,
        "#{} {} {} by {} [{vis}] t={}ms",
        m.seq,
        m.id,
        role(m.role),
        producer.as_str().unwrap_or("?"),
        m.pai.updated_at
    );
    if let Some(r) = &m.pai.run_id {
        let _ = write!(out, " run={r}");
    }
    if let Some(s) = m.pai.step {
        let _ = write!(out, " step={s}");
    }
    if let Some(o) = m.pai.outcome {
        let _ = write!(out, " outcome={}", o.as_str());
    }
    if let Some(r) = &m.pai.reason {
        let _ = write!(out, " reason={r}");
    }
    out.push('\n');
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                let _ = writeln!(out, "    text {}", quoted(text));
            }
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => {
                let _ = writeln!(out, "    tool_call {call_id} {tool} {}", json(input));
            }
            Part::ToolResult {
                call_id,
                tool,
                status,
                source,
                output,
            } => {
                let r = ToolResult {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    status: *status,
                    source: *source,
                    output: output.clone(),
                };
                let _ = writeln!(out, "    tool_result {call_id} {tool} {}", result(&r));
            }
        }
    }
}

/// A run's metadata and waiting calls, when it has them (SPEC T6, T7).
fn run_details(out: &mut String, r: &pai_runtime::store::RunRecord) {
    if let Some(m) = &r.metadata {
        let _ = writeln!(out, "        metadata {}", crate::format::json(m));
    }
    for c in &r.waiting {
        let answer = c.answer.as_ref().map_or("unanswered", |a| a.as_str());
        let _ = writeln!(
            out,
            "        waiting on {} {} ({}, step {}): {answer}",
            c.call_id,
            c.tool,
            c.kind.as_str(),
            c.step
        );
    }
}

/// Renders the whole transcript of one run.
pub(crate) fn render(o: &Observed<'_>, verdicts: &Verdicts, notes: &[String]) -> String {
    let mut out = String::new();
    let s = o.scenario;
    let _ = writeln!(out, "scenario: {}", s.name);
    let _ = writeln!(out, "rules: {}", s.rules.join(", "));
    let _ = writeln!(out, "seed: {}", o.seed);
    let _ = writeln!(out, "expect: {}", s.expect);
    out.push_str("\n== events ==\n");
    match o.cluster {
        None => {
            for e in o.events {
                let _ = writeln!(out, "{:>6}ms {} {}", e.at, e.run_id, event_line(e));
            }
        }
        Some(c) => cluster::events(&mut out, c),
    }
    calls(&mut out, o, verdicts);
    for t in o.threads {
        let _ = writeln!(
            out,
            "\n== thread {} (agent {}, owner {}, incarnation {}, version {}) ==",
            t.id, t.agent, t.owner, t.incarnation, t.version
        );
        for m in &t.messages {
            message(&mut out, m);
        }
        // Only when set, so transcripts of threads without any stay as they were.
        if !t.metadata.is_empty() {
            let _ = writeln!(out, "metadata: {}", json(&t.metadata.clone().into()));
        }
        if !t.private_metadata.is_empty() {
            let private = json(&t.private_metadata.clone().into());
            let _ = writeln!(out, "private metadata (server side): {private}");
        }
        out.push_str("runs:\n");
        for r in &t.runs {
            let _ = writeln!(
                out,
                "    {} {} outcome={} reason={} steps={}",
                r.id,
                r.status.as_str(),
                r.outcome.map_or("-", |o| o.as_str()),
                opt(&r.reason),
                r.steps
            );
            run_details(&mut out, r);
        }
        if let Some(holder) = &t.lease_holder {
            let _ = writeln!(out, "lease held by {holder}");
        }
    }
    let closed = o.cluster.map_or(&[][..], |c| &c.watch_closed[..]);
    live(&mut out, o.live, closed);
    checks::checks(&mut out, o);
    out.push_str("\n== oracles ==\n");
    if verdicts.violations.is_empty() {
        out.push_str("all quiet\n");
    }
    for v in &verdicts.violations {
        let run = v.run.as_deref().unwrap_or("-");
        let _ = writeln!(out, "VIOLATION {} run={run}: {}", v.oracle, v.message);
    }
    for w in &o.scenario.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if let Some(twin) = &verdicts.twin {
        let _ = writeln!(out, "twin: {twin}");
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// What each watcher received, if anybody watched; among workers, each
/// watcher whose change feed the store closed (a deletion, H5).
fn live(out: &mut String, live: &[(String, LiveEvent)], closed: &[(String, u64)]) {
    if live.is_empty() && closed.is_empty() {
        return;
    }
    out.push_str("\n== live ==\n");
    let mut closes: Vec<&(String, u64)> = closed.iter().collect();
    for (i, (name, e)) in live.iter().enumerate() {
        let line = match e {
            LiveEvent::Part {
                at,
                run_id,
                step,
                part,
            } => format!(
                "{at:>6}ms {name} {run_id} step={step} {}",
                stream_part(part)
            ),
            LiveEvent::Aborted {
                at,
                run_id,
                step,
                reason,
            } => format!(
                "{at:>6}ms {name} {run_id} step={step} aborted {}",
                quoted(reason)
            ),
            LiveEvent::Committed { at, version } => {
                format!("{at:>6}ms {name} refresh: version {version}")
            }
            LiveEvent::RunWaiting { at, run_id, calls } => {
                let calls: Vec<String> = calls
                    .iter()
                    .map(|c| format!("{} {} ({})", c.call_id, c.tool, c.kind.as_str()))
                    .collect();
                format!("{at:>6}ms {name} {run_id} waits on {}", calls.join(", "))
            }
            LiveEvent::RunEnded {
                at,
                run_id,
                status,
                outcome,
                reason,
            } => format!(
                "{at:>6}ms {name} {run_id} ended status={} outcome={} reason={}",
                status.as_str(),
                outcome.as_str(),
                opt(reason)
            ),
        };
        let _ = writeln!(out, "{line}");
        // A watcher's close follows its last event.
        if live.get(i + 1).is_none_or(|(next, _)| next != name) {
            closes.retain(|(n, at)| n != name || !close_line(out, n, *at));
        }
    }
    for (name, at) in closes {
        close_line(out, name, *at);
    }
}

fn close_line(out: &mut String, name: &str, at: u64) -> bool {
    let _ = writeln!(out, "{at:>6}ms {name} closed (thread deleted)");
    true
}
