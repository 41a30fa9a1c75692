//! SPEC M1, M3: every history read a hook makes, at any time during its
//! step, returns only messages at or before the step's anchor, and the view
//! reports that anchor.

use super::facts::anchors;
use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let anchor = anchors(o.events);
    let mut out = Vec::new();
    for r in o.reads {
        let Some(&a) = anchor.get(&(r.run_id.as_str(), r.step)) else {
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
