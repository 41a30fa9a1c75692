//! SPEC M1: no step's context holds a message stored after the step started.

use std::collections::BTreeMap;

use pai_runtime::{Role, event::EventKind};

use super::facts::{hook_written, model_text};
use super::observed::{Observed, Violation};
use super::rewrites::Erasures;
use crate::scenario::OracleId;

/// SPEC M1: no step's context holds a stored message appended after the
/// step started. Every user text a request carries that matches a stored user
/// message must match one at or below that step's anchor.
pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let (events, threads, calls) = (o.events, o.threads, o.calls);
    let Some(written) = hook_written(o.scenario) else {
        return Vec::new();
    };
    let erased = Erasures::of(events);
    let mut anchors: BTreeMap<(&str, u32), (&str, u64)> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if let EventKind::ResolveModelContext { step, anchor, .. } = &e.kind {
            // Texts are matched to messages stored at the end: after a
            // deletion or a rewrite that removed messages, the message the
            // step saw may be gone and a later one carry its text (H5, R1).
            if erased.erased_after(&e.thread_id, i) {
                continue;
            }
            anchors.insert((e.run_id.as_str(), *step), (e.thread_id.as_str(), *anchor));
        }
    }
    let mut first_seq: BTreeMap<(&str, String), u64> = BTreeMap::new();
    for t in threads {
        for m in &t.messages {
            if m.role == Role::User {
                first_seq.entry((t.id.as_str(), m.text())).or_insert(m.seq);
            }
        }
    }
    let mut out = Vec::new();
    for c in calls {
        let r = &c.request;
        let Some(&(thread, anchor)) = anchors.get(&(r.run_id.as_str(), r.step)) else {
            continue;
        };
        for m in calls.messages(c).iter().filter(|m| m.role == Role::User) {
            let text = model_text(m);
            if let Some(&seq) = first_seq.get(&(thread, text.clone()))
                && seq > anchor
                && !written.contains(&text.as_str())
            {
                out.push(Violation {
                    oracle: OracleId::M1.into(),
                    run: Some(r.run_id.to_string()),
                    message: format!(
                        "step {} saw message #{seq} ({text:?}) above its anchor #{anchor}",
                        r.step
                    ),
                });
            }
        }
    }
    out
}
