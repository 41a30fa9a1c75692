//! The transcript: a plain-text story of one run with a stable layout, made
//! to be read in a snapshot diff. Rendered from the same observed value the
//! oracles judge, and their verdicts.

mod event;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pai_runtime::{LiveEvent, Message, ModelMessage, ModelRequest, Part, ToolResult};

use crate::format::{json, model_message, opt, quoted, result, role, route, stream_part};
use crate::oracle::{Observed, Verdicts};
use event::event;

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

/// Renders the whole transcript of one run.
pub(crate) fn render(o: &Observed<'_>, verdicts: &Verdicts, notes: &[String]) -> String {
    let mut out = String::new();
    let s = o.scenario;
    let _ = writeln!(out, "scenario: {}", s.name);
    let _ = writeln!(out, "rules: {}", s.rules.join(", "));
    let _ = writeln!(out, "seed: {}", o.seed);
    let _ = writeln!(out, "expect: {}", s.expect);
    out.push_str("\n== events ==\n");
    for e in o.events {
        let _ = writeln!(out, "{:>6}ms {} {}", e.at, e.run_id, event(&e.kind));
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
        }
    }
    live(&mut out, o.live);
    out.push_str("\n== oracles ==\n");
    if verdicts.violations.is_empty() {
        out.push_str("all quiet\n");
    }
    for v in &verdicts.violations {
        let run = v.run.as_deref().unwrap_or("-");
        let _ = writeln!(out, "VIOLATION {} run={run}: {}", v.oracle, v.message);
    }
    for n in notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// Every model call with the request it carried. A call lists only what
/// changed since the previous call on the same thread, so a transcript grows
/// with a thread's length, not with its square.
fn calls(out: &mut String, o: &Observed<'_>, verdicts: &Verdicts) {
    out.push_str("\n== model calls ==\n");
    if o.calls.is_empty() {
        out.push_str("(none)\n");
    }
    let threads: BTreeMap<&str, &str> = o
        .events
        .iter()
        .map(|e| (e.run_id.as_str(), e.thread_id.as_str()))
        .collect();
    let mut previous: BTreeMap<&str, (usize, &ModelRequest)> = BTreeMap::new();
    for (i, c) in o.calls.iter().enumerate() {
        let r = &c.request;
        let _ = writeln!(
            out,
            "call {} at {}ms run={} step={} script={} {} route {{{}}}",
            i + 1,
            c.at,
            r.run_id,
            r.step,
            c.script,
            c.answer,
            route(&r.route)
        );
        if let Some(t) = r.timeout_ms {
            let _ = writeln!(out, "    timeout {t}ms");
        }
        if let Some((_, m)) = verdicts.mismatches.iter().find(|(k, _)| *k == i) {
            let _ = writeln!(out, "    EXPECT MISMATCH {}", m.replace('\n', "\n    "));
        }
        let thread = threads.get(r.run_id.as_str()).copied().unwrap_or("?");
        request_body(out, r, previous.get(thread).copied());
        previous.insert(thread, (i + 1, r));
    }
}

/// What a model call was sent, as the transcript compares it between calls.
#[derive(Clone, Copy)]
struct Sent<'a> {
    instructions: &'a str,
    messages: &'a [ModelMessage],
}

impl<'a> From<&'a ModelRequest> for Sent<'a> {
    fn from(r: &'a ModelRequest) -> Self {
        Sent {
            instructions: &r.instructions,
            messages: &r.messages,
        }
    }
}

/// A request's tools, instructions and messages; with `before` (the previous
/// call on the thread, numbered from 1) only what differs from it.
fn request_body(out: &mut String, r: &ModelRequest, before: Option<(usize, &ModelRequest)>) {
    let tools: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(out, "    tools [{}]", tools.join(","));
    sent_changes(out, r.into(), before.map(|(n, b)| (n, b.into())));
}

fn sent_changes(out: &mut String, now: Sent<'_>, before: Option<(usize, Sent<'_>)>) {
    let same_instructions = before.is_some_and(|(_, b)| b.instructions == now.instructions);
    if !now.instructions.is_empty() && !same_instructions {
        let _ = writeln!(out, "    instructions {}", quoted(now.instructions));
    }
    let kept = before.map_or(0, |(_, b)| {
        b.messages
            .iter()
            .zip(now.messages)
            .take_while(|(x, y)| x == y)
            .count()
    });
    if let Some((n, b)) = before {
        if now.instructions.is_empty() && !b.instructions.is_empty() {
            let _ = writeln!(out, "    instructions none (call {n} had some)");
        }
        let total = now.messages.len();
        let _ = write!(
            out,
            "    messages {total}: first {kept} as in call {n}, then {} new",
            total - kept
        );
        if b.messages.len() > kept {
            let _ = write!(out, " (call {n} had {})", b.messages.len());
        }
        out.push('\n');
    }
    for m in &now.messages[kept..] {
        let _ = writeln!(out, "    {}", model_message(m));
    }
}

/// What each watcher received, if anybody watched.
fn live(out: &mut String, live: &[(String, LiveEvent)]) {
    if live.is_empty() {
        return;
    }
    out.push_str("\n== live ==\n");
    for (name, e) in live {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::ModelMessage as M;

    fn changes(now: (&str, &[M]), before: Option<(&str, &[M])>) -> String {
        let mut out = String::new();
        let before = before.map(|(i, m)| {
            (
                3,
                Sent {
                    instructions: i,
                    messages: m,
                },
            )
        });
        let now = Sent {
            instructions: now.0,
            messages: now.1,
        };
        sent_changes(&mut out, now, before);
        out
    }

    #[test]
    fn a_first_call_lists_everything() {
        let m = [M::user("a"), M::system("s")];
        assert_eq!(
            changes(("be brief", &m), None),
            "    instructions \"be brief\"\n    user: \"a\"\n    system: \"s\"\n"
        );
    }

    #[test]
    fn a_later_call_lists_only_what_follows_the_shared_prefix() {
        let before = [M::user("a"), M::system("s")];
        let now = [M::user("a"), M::user("b"), M::system("s")];
        assert_eq!(
            changes(("i", &now), Some(("i", &before))),
            "    messages 3: first 1 as in call 3, then 2 new (call 3 had 2)\n    user: \"b\"\n    system: \"s\"\n"
        );
        let grown = [M::user("a"), M::system("s"), M::user("c")];
        assert_eq!(
            changes(("", &grown), Some(("i", &before))),
            "    instructions none (call 3 had some)\n    messages 3: first 2 as in call 3, then 1 new\n    user: \"c\"\n"
        );
        assert_eq!(
            changes(("j", &before), Some(("i", &before))),
            "    instructions \"j\"\n    messages 2: first 2 as in call 3, then 0 new\n"
        );
    }
}
