//! SPEC T5: a thrown tool error's detail goes to logs only: no request and
//! no stored result carries it. A hook's replacement of a result (T4, L9) is
//! what is stored and what the model reads, whatever the original source.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{EventKind, ModelContent, Part, ResultSource, ToolResultDecision};
use serde_json::Value;

use super::observed::{Observed, Violation};
use crate::format::json;
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = hidden_details(o);
    out.extend(replacements_read(o));
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
            let sent = c
                .request
                .messages
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

/// Where `after_tool_result` replaced a result, the stored result and every
/// later request carry the replacement.
fn replacements_read(o: &Observed<'_>) -> Vec<Violation> {
    let mut replaced: BTreeMap<&str, (&str, &Value)> = BTreeMap::new();
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
    let hidden = hidden_from_context(o);
    let removed = removed_by_rewrite(o, &replaced);
    for c in o.calls {
        for p in c.request.messages.iter().flat_map(|m| &m.content) {
            if let ModelContent::ToolResult {
                call_id, output, ..
            } = p
                && let Some((run, want)) = replaced.get(call_id.as_str())
                && !hidden.contains(call_id.as_str())
                && removed.get(call_id.as_str()).is_none_or(|at| c.at < *at)
            {
                let place = format!("the context of step {} for {call_id}", c.request.step);
                flag(run, place, output, want);
            }
        }
    }
    out
}

/// Replaced calls whose stored result a regeneration removed (R1: history
/// after the chosen message is truncated, and a result committed after a
/// queued user message is after it), with when the first removing rewrite
/// of their thread came: from then on the model is given the pairing's
/// stand-in (H6). A result still stored is never excused.
fn removed_by_rewrite<'a>(
    o: &Observed<'a>,
    replaced: &BTreeMap<&'a str, (&'a str, &'a Value)>,
) -> BTreeMap<&'a str, u64> {
    let stored: BTreeSet<&str> = o
        .threads
        .iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut first_removal: BTreeMap<&str, u64> = BTreeMap::new();
    let mut thread_of: BTreeMap<&str, &str> = BTreeMap::new();
    for e in o.events {
        match &e.kind {
            EventKind::HistoryRewritten { removed, .. } if !removed.is_empty() => {
                first_removal.entry(e.thread_id.as_str()).or_insert(e.at);
            }
            EventKind::AfterToolResult { call_id, .. } => {
                thread_of.insert(call_id.as_str(), e.thread_id.as_str());
            }
            _ => {}
        }
    }
    replaced
        .keys()
        .filter(|call| !stored.contains(*call))
        .filter_map(|call| {
            let at = first_removal.get(thread_of.get(call)?)?;
            Some((*call, *at))
        })
        .collect()
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
