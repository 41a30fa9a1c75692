//! Timeline actions on waiting calls (SPEC T7, T9): a call is named by its
//! tool and order on the thread (found in the stored thread) or by its id
//! (`#N`: the N-th the timeline saw the thread store), then approved,
//! denied or given a client's output; and the check that a thread waits on
//! exactly the calls a scenario names.

use pai_runtime::{
    Part, Runtime, ThreadHandle,
    store::{StoredThread, WaitingCall},
};
use serde_json::Value;

use crate::hooks::SimContext;
use crate::scenario::CallName;

/// The id of the call `name` on `thread`: the `nth` call of its tool, in
/// stored order; the `#N` call of `seen`; or the id it spells.
fn call_id(
    stored: Option<&StoredThread>,
    name: &CallName,
    seen: &[String],
) -> Result<String, String> {
    let (tool, nth) = match name {
        CallName::Nth { tool, nth } => (tool, *nth),
        CallName::Id(id) => return Ok(id.clone()),
        CallName::Seen(n) => {
            return seen.get(n - 1).cloned().ok_or_else(|| {
                format!(
                    "the timeline saw no call #{n} on the thread (it saw {})",
                    seen.len()
                )
            });
        }
    };
    let calls = stored
        .into_iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall {
                call_id, tool: t, ..
            } if t == tool => Some(call_id.to_string()),
            _ => None,
        });
    calls.into_iter().nth(nth - 1).ok_or_else(|| {
        format!(
            "the thread has no call {name} (no {} call of tool {tool} is stored)",
            ordinal(nth),
        )
    })
}

/// Adds the calls `thread` stores now that `seen` does not hold yet, in
/// stored order: what `call = "#N"` counts (calls of a deleted incarnation
/// or of regenerated-away messages stay in it).
pub async fn saw_calls(runtime: &Runtime<SimContext>, thread: &str, seen: &mut Vec<String>) {
    let stored = runtime.inspect(thread).await.ok().flatten();
    for p in stored
        .iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.parts)
    {
        if let Part::ToolCall { call_id, .. } = p
            && !seen.iter().any(|s| s == call_id)
        {
            seen.push(call_id.to_string());
        }
    }
}

fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

/// The name a call id has on `thread`: its tool and order.
fn name_of(stored: Option<&StoredThread>, id: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for p in stored
        .into_iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.parts)
    {
        if let Part::ToolCall { call_id, tool, .. } = p {
            seen.push(tool);
            if call_id == id {
                let nth = seen.iter().filter(|t| **t == tool.as_str()).count();
                return format!("{tool}#{nth}");
            }
        }
    }
    id.to_string()
}

/// Approves, denies or submits for the named call; the call's id on success.
pub async fn answer(
    runtime: &Runtime<SimContext>,
    thread: &ThreadHandle<SimContext>,
    name: &CallName,
    how: Answering<'_>,
    seen: &[String],
) -> Result<Option<String>, String> {
    let stored = match name.by_id() {
        true => None,
        false => runtime.inspect(thread.id()).await.ok().flatten(),
    };
    let id = call_id(stored.as_ref(), name, seen)?;
    let done = match how {
        Answering::Approve => thread.approve(&id).await,
        Answering::Deny(reason) => thread.deny(&id, reason).await,
        Answering::Submit(output) => thread.submit_tool_result(&id, output.clone()).await,
    };
    done.map(|()| Some(id)).map_err(|e| e.to_string())
}

/// How a call is answered.
#[derive(Debug, Clone, Copy)]
pub enum Answering<'a> {
    Approve,
    Deny(&'a str),
    Submit(&'a Value),
}

/// Whether the thread's current run waits on exactly `expected`, unanswered
/// and in order: `None` if so, else what it waits on.
pub async fn check_waiting(
    runtime: &Runtime<SimContext>,
    thread: &ThreadHandle<SimContext>,
    expected: &[CallName],
    seen: &[String],
) -> Option<String> {
    let stored = runtime.inspect(thread.id()).await.ok().flatten();
    let waiting: Vec<WaitingCall> = thread.waiting().await.unwrap_or_default();
    let actual: Vec<(&str, String)> = waiting
        .iter()
        .filter(|c| c.answer.is_none())
        .map(|c| (c.call_id.as_str(), name_of(stored.as_ref(), &c.call_id)))
        .collect();
    let same = |(id, name): &(&str, String), e: &CallName| match e {
        CallName::Nth { .. } => *name == e.to_string(),
        _ => call_id(None, e, seen).is_ok_and(|want| want == *id),
    };
    let matches =
        actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, e)| same(a, e));
    let wanted: Vec<String> = expected.iter().map(ToString::to_string).collect();
    let shown: Vec<&str> = actual.iter().map(|(_, n)| n.as_str()).collect();
    (!matches).then(|| {
        format!(
            "expected the thread to wait on [{}], but it waits on [{}]",
            wanted.join(", "),
            shown.join(", ")
        )
    })
}
