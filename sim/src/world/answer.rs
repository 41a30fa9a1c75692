//! Timeline actions on waiting calls (SPEC T7, T9): a call is named by its
//! tool and order on the thread, found in the stored thread, then approved,
//! denied or given a client's output; and the check that a thread waits on
//! exactly the calls a scenario names.

use pai_runtime::{Part, Runtime, StoredThread, ThreadHandle, WaitingCall};
use serde_json::Value;

use crate::hooks::SimContext;
use crate::scenario::CallName;

/// The id of the call `name` on `thread`: the `nth` call of its tool, in
/// stored order.
fn call_id(stored: Option<&StoredThread>, name: &CallName) -> Result<String, String> {
    let calls = stored
        .into_iter()
        .flat_map(|t| &t.messages)
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolCall { call_id, tool, .. } if *tool == name.tool => Some(call_id),
            _ => None,
        });
    calls.into_iter().nth(name.nth - 1).cloned().ok_or_else(|| {
        format!(
            "the thread has no call {name} (no {} call of tool {} is stored)",
            ordinal(name.nth),
            name.tool
        )
    })
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
) -> Result<Option<String>, String> {
    let stored = runtime.inspect(thread.id()).await.ok().flatten();
    let id = call_id(stored.as_ref(), name)?;
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
) -> Option<String> {
    let stored = runtime.inspect(thread.id()).await.ok().flatten();
    let waiting: Vec<WaitingCall> = thread.waiting().await.unwrap_or_default();
    let actual: Vec<String> = waiting
        .iter()
        .filter(|c| c.answer.is_none())
        .map(|c| name_of(stored.as_ref(), &c.call_id))
        .collect();
    let wanted: Vec<String> = expected.iter().map(ToString::to_string).collect();
    (actual != wanted).then(|| {
        format!(
            "expected the thread to wait on [{}], but it waits on [{}]",
            wanted.join(", "),
            actual.join(", ")
        )
    })
}
