//! SPEC T2: a step's tool results are committed in call order, whatever
//! order the tools finished in. A step's results may span several tool
//! messages (those ready before a wait, then the resumed ones, T7, T9);
//! each message holds its results in the step's call order.

use std::collections::BTreeMap;

use pai_runtime::{Part, Role, store::StoredThread};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    o.threads.iter().flat_map(thread).collect()
}

/// The call ids (or result ids) among a message's parts, in order.
fn ids(parts: &[Part], calls: bool) -> Vec<&str> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall { call_id, .. } if calls => Some(call_id.as_str()),
            Part::ToolResult { call_id, .. } if !calls => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether `part` is `whole` with some items left out, the rest in order.
fn subsequence(part: &[&str], whole: &[&str]) -> bool {
    let mut rest = whole.iter();
    part.iter().all(|p| rest.any(|w| w == p))
}

fn thread(t: &StoredThread) -> Vec<Violation> {
    let mut calls: BTreeMap<(Option<&str>, Option<u32>), Vec<&str>> = BTreeMap::new();
    let mut out = Vec::new();
    for m in &t.messages {
        let key = (m.pai.run_id.as_deref(), m.pai.step);
        match m.role {
            Role::Assistant => {
                calls.insert(key, ids(&m.parts, true));
            }
            Role::Tool => {
                let results = ids(&m.parts, false);
                let expected = calls.get(&key).cloned().unwrap_or_default();
                if !subsequence(&results, &expected) {
                    let message = format!(
                        "tool message #{} holds results {results:?} for calls {expected:?}",
                        m.seq
                    );
                    out.push(Violation::new(OracleId::T2, key.0, message));
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::subsequence;

    /// SPEC T2: results in call order with some calls left for a later
    /// message pass; results out of order or twice do not.
    #[test]
    fn t2_results_are_a_subsequence_of_the_calls() {
        let calls = ["a", "b", "c"];
        assert!(subsequence(&["a", "c"], &calls));
        assert!(subsequence(&["b"], &calls));
        assert!(subsequence(&["a", "b", "c"], &calls));
        assert!(!subsequence(&["c", "a"], &calls));
        assert!(!subsequence(&["a", "a"], &calls));
        assert!(!subsequence(&["d"], &calls));
    }
}
