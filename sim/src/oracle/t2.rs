//! SPEC T2: a step's tool results are committed in call order, whatever
//! order the tools finished in.

use std::collections::BTreeMap;

use pai_runtime::{Part, Role};

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for t in o.threads {
        let mut calls: BTreeMap<(Option<&str>, Option<u32>), Vec<&str>> = BTreeMap::new();
        for m in &t.messages {
            let key = (m.pai.run_id.as_deref(), m.pai.step);
            let ids = |kind_call: bool| -> Vec<&str> {
                m.parts
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolCall { call_id, .. } if kind_call => Some(call_id.as_str()),
                        Part::ToolResult { call_id, .. } if !kind_call => Some(call_id.as_str()),
                        _ => None,
                    })
                    .collect()
            };
            match m.role {
                Role::Assistant => {
                    calls.insert(key, ids(true));
                }
                Role::Tool => {
                    let results = ids(false);
                    let expected = calls.get(&key).cloned().unwrap_or_default();
                    if results != expected {
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
    }
    out
}
