//! SPEC T5: a thrown tool error's detail goes to logs only: no request and
//! no stored result carries it. A hook's replacement of a result (T4, L9) is
//! what is stored and what the model reads, whatever the original source.
//!
//! What a tool throws is known twice: from the runtime's own `tool_end`
//! (its detail), and independently from the scenario, whose scripted tools
//! say what they throw or panic with. The second catches a runtime that
//! files a panic as an ordinary failure: a throwing tool's text never
//! reaches the model, its result is never stored as an output or a
//! deliberate failure, and a thrown result not replaced by a hook holds the
//! one fixed message every thrown result of the run holds.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Part,
    event::EventKind,
    hook::ToolResultDecision,
    message::{ModelContent, ResultSource},
};
use serde_json::Value;

use super::observed::{Observed, Violation};
use crate::format::json;
use crate::scenario::{Behaviour, OracleId, Scenario};

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let replaced = replaced(o);
    let outputs = hook_outputs(o);
    let mut out = hidden_details(o);
    out.extend(replacements_read(o, &replaced));
    out.extend(thrown_texts_unsent(o, &outputs));
    out.extend(thrown_results_stored(o, &outputs));
    out
}

/// Every output an `after_tool_result` hook gave a call, by call id, in
/// any episode (one that lost its lease later may have committed it).
type HookOutputs<'a> = BTreeMap<&'a str, Vec<&'a Value>>;

fn hook_outputs<'a>(o: &Observed<'a>) -> HookOutputs<'a> {
    let raw = o.cluster.map_or(&[][..], |c| c.raw_events.as_slice());
    let mut out: HookOutputs<'a> = BTreeMap::new();
    for e in o.events.iter().chain(raw) {
        if let EventKind::AfterToolResult {
            call_id,
            decision: ToolResultDecision::ReplaceOutput(v),
            ..
        } = &e.kind
        {
            out.entry(call_id.as_str()).or_default().push(v);
        }
    }
    out
}

/// Whether `output` is what a hook gave the call (T4, L9).
fn from_hook(outputs: &HookOutputs<'_>, call: &str, output: &Value) -> bool {
    outputs.get(call).is_some_and(|vs| vs.contains(&output))
}

/// The scenario's tools that throw or panic (both are throws, T5), with
/// the text the throw carries; tools with an empty text are left out.
fn throwing_tools(s: &Scenario) -> BTreeMap<&str, &str> {
    s.agent
        .tools
        .iter()
        .filter_map(|t| match &t.behaviour {
            Behaviour::Throw(m) | Behaviour::Panic(m) if !m.trim().is_empty() => {
                Some((t.name.as_str(), m.as_str()))
            }
            _ => None,
        })
        .collect()
}

/// Everything else the scenario writes (user messages, model turns, hooks,
/// documents, instructions, other tools' outputs, a registered tool's
/// configuration): a text found there may reach the model without leaking
/// anything.
fn authored(s: &Scenario) -> String {
    let others: Vec<_> = s
        .agent
        .tools
        .iter()
        .filter(|t| !matches!(t.behaviour, Behaviour::Throw(_) | Behaviour::Panic(_)))
        .map(|t| &t.behaviour)
        .collect();
    format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}{others:?}",
        s.timeline, s.model, s.models, s.hooks, s.docs, s.agent.instructions
    )
}

/// What the scenario's registered tools returned in this run (outputs and
/// deliberate failures). Their code wrote these texts, not the file: where
/// [`authored`] reads a scripted tool's output from the file, a registered
/// tool's is read from the log, so a text it returned may reach the model
/// without leaking a throw.
fn registered_results<'a>(o: &Observed<'a>) -> Vec<&'a Value> {
    let tools = &o.scenario.agent.tools;
    let registered: BTreeSet<&str> = tools
        .iter()
        .filter(|t| matches!(t.behaviour, Behaviour::Registered(_)))
        .map(|t| t.name.as_str())
        .collect();
    if registered.is_empty() {
        return Vec::new();
    }
    let raw = o.cluster.map_or(&[][..], |c| c.raw_events.as_slice());
    let ends = o.events.iter().chain(raw).filter_map(|e| match &e.kind {
        EventKind::ToolEnd { result, .. } => Some(result),
        _ => None,
    });
    ends.filter(|r| registered.contains(r.tool.as_str()) && r.source != ResultSource::Throw)
        .map(|r| &r.output)
        .collect()
}

/// Whether any string inside `v` contains `text`.
fn holds(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|i| holds(i, text)),
        Value::Object(map) => map.iter().any(|(k, i)| k.contains(text) || holds(i, text)),
        _ => false,
    }
}

/// No model request carries a throwing tool's text: not in that tool's
/// results (unless a hook replaced the result), and not anywhere else
/// unless the scenario wrote the text there itself.
fn thrown_texts_unsent(o: &Observed<'_>, outputs: &HookOutputs<'_>) -> Vec<Violation> {
    let tools = throwing_tools(o.scenario);
    if tools.is_empty() {
        return Vec::new();
    }
    let authored = authored(o.scenario);
    let registered = registered_results(o);
    let mut out = Vec::new();
    for c in o.calls {
        let contents = o.calls.messages(c).iter().flat_map(|m| &m.content);
        for p in contents {
            let leaked = tools.iter().find(|(tool, text)| match p {
                ModelContent::ToolResult {
                    call_id,
                    tool: t,
                    output,
                    ..
                } if t == *tool && !from_hook(outputs, call_id, output) => holds(output, text),
                ModelContent::Text { text: sent } => {
                    sent.contains(*text)
                        && !authored.contains(*text)
                        && !registered.iter().any(|v| holds(v, text))
                }
                _ => false,
            });
            if let Some((tool, text)) = leaked {
                let message = format!(
                    "step {} was sent what {tool} threw: {text:?}",
                    c.request.step
                );
                out.push(Violation::new(
                    OracleId::T5,
                    Some(&c.request.run_id),
                    message,
                ));
            }
        }
    }
    out
}

/// A throwing tool's stored result (not replaced by a hook) is never an
/// output or a deliberate failure, never holds the tool's text, and when
/// it is the throw's own result it holds the one fixed message all thrown
/// results of the run hold.
fn thrown_results_stored(o: &Observed<'_>, outputs: &HookOutputs<'_>) -> Vec<Violation> {
    let tools = throwing_tools(o.scenario);
    let mut fixed: BTreeMap<String, &str> = BTreeMap::new();
    let mut out = Vec::new();
    let messages = o.threads.iter().flat_map(|t| &t.messages);
    let parts = messages.flat_map(|m| m.parts.iter().map(move |p| (m.pai.run_id.as_deref(), p)));
    for (run, p) in parts {
        let Part::ToolResult {
            call_id,
            tool,
            source,
            output,
            ..
        } = p
        else {
            continue;
        };
        if from_hook(outputs, call_id, output) {
            continue;
        }
        if *source == ResultSource::Throw {
            fixed.entry(json(output)).or_insert(call_id);
        }
        let Some(text) = tools.get(tool.as_str()) else {
            continue;
        };
        let mut flag = |message: String| {
            out.push(Violation::new(OracleId::T5, run, message));
        };
        if matches!(source, ResultSource::Tool | ResultSource::Fail) {
            flag(format!(
                "{tool} throws, yet its result {call_id} is stored as a {} result {}",
                source.as_str(),
                json(output)
            ));
        } else if holds(output, text) {
            flag(format!(
                "the stored result {call_id} holds what {tool} threw: {text:?}"
            ));
        }
    }
    if fixed.len() > 1 {
        let shown: Vec<String> = fixed
            .iter()
            .map(|(output, call)| format!("{call}: {output}"))
            .collect();
        let message = format!(
            "thrown results are stored with different messages, not one fixed message: {}",
            shown.join(", ")
        );
        out.push(Violation::new(OracleId::T5, None, message));
    }
    out
}

/// The text a thrown error's detail carries (a panic's message without its prefix).
fn detail_text(detail: &str) -> &str {
    detail.strip_prefix("panicked: ").unwrap_or(detail)
}

/// No request message and no stored result holds a thrown detail.
fn hidden_details(o: &Observed<'_>) -> Vec<Violation> {
    let details: Vec<(&str, &str)> = o
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolEnd {
                result,
                detail: Some(d),
                ..
            } if result.source == ResultSource::Throw && !detail_text(d).is_empty() => {
                Some((e.run_id.as_str(), detail_text(d)))
            }
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (run, detail) in &details {
        for c in o.calls {
            let sent = o
                .calls
                .messages(c)
                .iter()
                .flat_map(|m| &m.content)
                .any(|p| match p {
                    ModelContent::Text { text } => text.contains(detail),
                    ModelContent::ToolResult { output, .. } => json(output).contains(detail),
                    ModelContent::ToolCall { .. } => false,
                });
            if sent {
                let message = format!(
                    "step {} was sent the thrown detail {detail:?}",
                    c.request.step
                );
                out.push(Violation::new(OracleId::T5, Some(run), message));
            }
        }
        let stored = o
            .threads
            .iter()
            .flat_map(|t| &t.messages)
            .flat_map(|m| &m.parts);
        for p in stored {
            if let Part::ToolResult { output, .. } = p
                && json(output).contains(detail)
            {
                let message = format!("a stored result holds the thrown detail {detail:?}");
                out.push(Violation::new(OracleId::T5, Some(run), message));
            }
        }
    }
    out
}

/// Calls whose result an `after_tool_result` hook replaced, with the run
/// and the replacement.
type Replaced<'a> = BTreeMap<&'a str, (&'a str, &'a Value)>;

fn replaced<'a>(o: &Observed<'a>) -> Replaced<'a> {
    let mut replaced: Replaced<'a> = BTreeMap::new();
    for e in o.events {
        match &e.kind {
            EventKind::AfterToolResult {
                call_id,
                decision: ToolResultDecision::ReplaceOutput(v),
                ..
            } => {
                replaced.insert(call_id, (&e.run_id, v));
            }
            // An episode that lost its lease (K3) committed none of its
            // replacements: the next holder gives the call its own result.
            EventKind::LeaseLost { .. } | EventKind::TakenOver { .. } => {
                replaced.retain(|_, (run, _)| *run != e.run_id);
            }
            _ => {}
        }
    }
    replaced
}

/// Where `after_tool_result` replaced a result, the stored result and every
/// later request carry the replacement.
fn replacements_read(o: &Observed<'_>, replaced: &Replaced<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut flag = |run: &str, place: String, got: &Value, want: &Value| {
        if got != want {
            let message = format!(
                "{place} holds {} instead of the replacement {}",
                json(got),
                json(want)
            );
            out.push(Violation::new(OracleId::T5, Some(run), message));
        }
    };
    for m in o.threads.iter().flat_map(|t| &t.messages) {
        for p in &m.parts {
            if let Part::ToolResult {
                call_id, output, ..
            } = p
                && let Some((run, want)) = replaced.get(call_id.as_str())
            {
                flag(run, format!("stored result {call_id}"), output, want);
            }
        }
    }
    // A regeneration never removes a result whose call it keeps (R1, the
    // R1-kept oracle): a call the model still reads has its replacement.
    let hidden = hidden_from_context(o);
    for c in o.calls {
        for p in o.calls.messages(c).iter().flat_map(|m| &m.content) {
            if let ModelContent::ToolResult {
                call_id, output, ..
            } = p
                && let Some((run, want)) = replaced.get(call_id.as_str())
                && !hidden.contains(call_id.as_str())
            {
                let place = format!("the context of step {} for {call_id}", c.request.step);
                flag(run, place, output, want);
            }
        }
    }
    out
}

/// Calls whose stored result a visibility rewrite hid from the model at
/// some point (R1): the model is then given the pairing's stand-in (H6),
/// not the replacement.
fn hidden_from_context<'a>(o: &Observed<'a>) -> BTreeSet<&'a str> {
    let rewritten: BTreeSet<&str> = o
        .events
        .iter()
        .flat_map(|e| match &e.kind {
            EventKind::Mutated { visibility, .. } => visibility.as_slice(),
            _ => &[],
        })
        .filter(|c| !c.after.context)
        .map(|c| c.message.as_str())
        .collect();
    let results = o.threads.iter().flat_map(|t| &t.messages);
    results
        .filter(|m| rewritten.contains(m.id.as_str()))
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}
