//! SPEC S3: with canonical redaction installed, no assistant message stored,
//! no text a watcher received, and no assistant text sent back to the model
//! matches a redaction pattern; nor the provider's words a refused step
//! stores as its reason (S6, S1). (User messages are the user's own text.)
//!
//! SPEC C3: a compaction summary is model output stored and reused as
//! context, so neither does a stored summary record, nor the summary a
//! step's context begins with.

use std::collections::BTreeMap;

use pai_runtime::{
    Part, Role, StreamPart,
    event::LiveEvent,
    message::{ModelContent, ModelMessage, Producer},
};

use super::facts::hook_written;
use super::observed::{Observed, Violation};
use super::reference::redactions;
use crate::scenario::OracleId;

/// A text to judge: its run, where it was seen, and the text.
type Seen = (Option<String>, String, String);

/// How the compaction helper opens a step's context with its summary (C2).
const SUMMARY: &str = "Summary of the earlier conversation:";

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let redactions = redactions(o.scenario);
    if redactions.is_empty() {
        return Vec::new();
    }
    let mut seen = stored(o);
    seen.extend(live(o));
    seen.extend(sent(o));
    seen.extend(summaries(o));
    seen.into_iter()
        .filter(|(_, _, text)| redactions.iter().any(|r| r.regex.is_match(text)))
        .map(|(run, place, text)| Violation {
            oracle: OracleId::S3.into(),
            run,
            message: format!("{place} holds unredacted text {text:?}"),
        })
        .collect()
}

/// Every stored assistant text part. Each part on its own: a tool call ends
/// a text run (the redactor flushes at it), so text on either side of a call
/// is judged apart.
fn stored(o: &Observed<'_>) -> Vec<Seen> {
    let mut out = Vec::new();
    for t in o.threads {
        for m in t.messages.iter().filter(|m| m.role == Role::Assistant) {
            // A provider's refusal: its words are stored as the reason (S6).
            if let (Producer::Model, Some(reason)) = (m.pai.producer, &m.pai.reason) {
                let place = format!("the refusal reason of stored message #{}", m.seq);
                let run = m.pai.run_id.as_ref().map(|r| r.to_string());
                out.push((run, place, reason.clone()));
            }
            for p in &m.parts {
                if let Part::Text { text } = p {
                    let place = format!("stored message #{}", m.seq);
                    out.push((
                        m.pai.run_id.as_ref().map(|r| r.to_string()),
                        place,
                        text.clone(),
                    ));
                }
            }
        }
    }
    out
}

/// Live text runs: consecutive deltas of one step a watcher received, ended
/// by any other part.
fn live(o: &Observed<'_>) -> Vec<Seen> {
    let mut runs: Vec<(&str, &str, u32, String)> = Vec::new();
    let mut open: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, e) in o.live {
        let LiveEvent::Part {
            run_id, step, part, ..
        } = e
        else {
            continue;
        };
        let StreamPart::TextDelta(t) = part else {
            open.remove(name.as_str());
            continue;
        };
        let current = open
            .get(name.as_str())
            .copied()
            .filter(|&i| runs[i].1 == run_id.as_str() && runs[i].2 == *step);
        match current {
            Some(i) => runs[i].3.push_str(t),
            None => {
                open.insert(name.as_str(), runs.len());
                runs.push((name.as_str(), run_id.as_str(), *step, t.to_string()));
            }
        }
    }
    runs.into_iter()
        .map(|(name, run, step, text)| {
            let place = format!("watcher {name}'s live text of step {step}");
            (Some(run.to_string()), place, text)
        })
        .collect()
}

/// Every assistant text the model was sent back as context (but those the
/// scenario's hooks wrote).
fn sent(o: &Observed<'_>) -> Vec<Seen> {
    let Some(written) = hook_written(o.scenario) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in o.calls {
        let r = &c.request;
        for m in o
            .calls
            .messages(c)
            .iter()
            .filter(|m| m.role == Role::Assistant)
        {
            for part in &m.content {
                if let ModelContent::Text { text } = part
                    && !written.contains(&text.as_str())
                {
                    let place = format!("model context of step {}", r.step);
                    out.push((Some(r.run_id.to_string()), place, text.clone()));
                }
            }
        }
    }
    out
}

/// Compaction summaries (SPEC C3): each stored summary record, and the
/// summary each model call's context opens with. (A previous summary the
/// summary model is sent is read from its stored record.)
fn summaries(o: &Observed<'_>) -> Vec<Seen> {
    let mut out = Vec::new();
    for t in o.threads {
        for m in &t.messages {
            if m.pai.producer == Producer::Compaction {
                let run = m.pai.run_id.as_ref().map(|r| r.to_string());
                out.push((run, format!("stored summary #{}", m.seq), m.text()));
            }
        }
    }
    for c in o.calls {
        let r = &c.request;
        for m in o
            .calls
            .messages(c)
            .iter()
            .filter(|m| m.role == Role::System)
        {
            let text = system_text(m);
            if let Some(summary) = text.strip_prefix(SUMMARY) {
                let place = format!("summary in the model context of step {}", r.step);
                out.push((Some(r.run_id.to_string()), place, summary.to_string()));
            }
        }
    }
    out
}

/// A system message's text.
fn system_text(m: &ModelMessage) -> String {
    m.content
        .iter()
        .filter_map(|c| match c {
            ModelContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
