//! SPEC H6: in every model context sent, each tool call has exactly one
//! result after it and no result lacks its call.

use pai_runtime::message::ModelContent;

use super::observed::Violation;
use crate::scenario::OracleId;
use crate::world::Calls;

/// SPEC H6: in every model context sent, each tool call has exactly one
/// result after it (paired by order, as providers may reuse ids) and no
/// result lacks its call.
pub(super) fn check(calls: &Calls) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in calls {
        let mut open: Vec<&str> = Vec::new();
        let mut problem = None;
        for m in calls.messages(c) {
            for part in &m.content {
                match part {
                    ModelContent::ToolCall { call_id, .. } => open.push(call_id),
                    ModelContent::ToolResult { call_id, .. } => {
                        match open.iter().position(|o| *o == call_id.as_str()) {
                            Some(k) => {
                                open.remove(k);
                            }
                            None => {
                                problem = Some(format!("result {call_id} has no call before it"))
                            }
                        }
                    }
                    ModelContent::Text { .. } => {}
                }
            }
        }
        if let Some(first) = open.first() {
            problem.get_or_insert_with(|| format!("call {first} has no result"));
        }
        if let Some(p) = problem {
            out.push(Violation {
                oracle: OracleId::H6.into(),
                run: Some(c.request.run_id.to_string()),
                message: format!("model context of step {}: {p}", c.request.step),
            });
        }
    }
    out
}
