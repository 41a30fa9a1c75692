//! SPEC M1, M3: every history read a hook makes, at any time during its
//! step, returns only messages at or before the step's anchor, and the view
//! reports that anchor.

use std::collections::BTreeMap;

use pai_runtime::{Event, EventKind};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let anchor = anchors(o.events);
    let mut out = Vec::new();
    for r in o.reads {
        let Some(&a) = anchor.get(&(r.run_id.as_str(), r.episode, r.step)) else {
            continue;
        };
        let above: Vec<u64> = r.seqs.iter().copied().filter(|s| *s > a).collect();
        if r.anchor != a || !above.is_empty() {
            let message = format!(
                "step {} {} read {above:?} past its anchor #{a} (the view said #{})",
                r.step, r.read, r.anchor
            );
            out.push(Violation::new(OracleId::M3, Some(&r.run_id), message));
        }
    }
    out
}

/// The anchor of every step, by run, episode and step: a step begun again
/// in another episode (a takeover, K3) has an anchor of its own.
fn anchors(events: &[Event]) -> BTreeMap<(&str, u32, u32), u64> {
    let mut episode: BTreeMap<&str, u32> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for e in events {
        match &e.kind {
            EventKind::LeaseAcquired { episode: n, .. } => {
                episode.insert(e.run_id.as_str(), *n);
            }
            EventKind::ResolveModelContext { step, anchor, .. } => {
                let n = episode.get(e.run_id.as_str()).copied().unwrap_or(0);
                out.insert((e.run_id.as_str(), n, *step), *anchor);
            }
            _ => {}
        }
    }
    out
}
