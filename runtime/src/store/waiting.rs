//! What a waiting run records (SPEC T7, T9): the calls its step left
//! waiting for a client, and each call's answer once it comes.

use crate::id::CallId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::ToolKind;

/// A client's answer to a waiting call (SPEC T9).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Answer {
    /// The approval call may run.
    Approved,
    /// The approval call must not run.
    Denied {
        /// What the model is told.
        reason: String,
    },
    /// A client tool's output.
    // Checked against the tool's output type.
    Submitted {
        /// The output.
        output: Value,
    },
}

impl Answer {
    /// The answer's name in the event log (`approved`, `denied`, `submitted`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Answer::Approved => "approved",
            Answer::Denied { .. } => "denied",
            Answer::Submitted { .. } => "submitted",
        }
    }

    /// Whether this answer fits a call of `kind`.
    fn fits(&self, kind: ToolKind) -> bool {
        match self {
            Answer::Approved | Answer::Denied { .. } => kind == ToolKind::Approval,
            Answer::Submitted { .. } => kind == ToolKind::Client,
        }
    }
}

/// One call a waiting run's step is waiting on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitingCall {
    /// The call's id, as the model's stream gave it: what a client answers.
    pub call_id: CallId,
    /// The name of the tool called.
    pub tool: String,
    /// The input the policy let through (after any replacement).
    pub input: Value,
    /// Whether a client approves the call (`approval`) or runs it and submits
    /// its output (`client`).
    pub kind: ToolKind,
    /// The step that asked for it.
    pub step: u32,
    /// The client's answer, once it came; `None` while the call is unanswered.
    pub answer: Option<Answer>,
}

/// Why an answer was refused (SPEC T9). Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnswerMiss {
    /// No waiting call of the thread's current run has this id.
    NotWaiting,
    /// The call has its answer already.
    AlreadyAnswered,
    /// An approval for a client call, or an output for an approval call.
    WrongKind(ToolKind),
}

/// The calls a run waits on: `calls`, each with the answer `recorded`
/// already holds for it (answered while the run still worked, T9).
pub(crate) fn keep_answers(
    recorded: Vec<WaitingCall>,
    mut calls: Vec<WaitingCall>,
) -> Vec<WaitingCall> {
    for c in &mut calls {
        if let Some(r) = recorded.iter().find(|r| r.call_id == c.call_id) {
            c.answer.clone_from(&r.answer);
        }
    }
    calls
}

/// Records `answer` for the call `call_id` among `calls`; `Ok(true)` when
/// every call now has its answer.
pub(crate) fn answer(
    calls: &mut [WaitingCall],
    call_id: &str,
    answer: Answer,
) -> Result<bool, AnswerMiss> {
    let call = calls
        .iter_mut()
        .find(|c| c.call_id == call_id)
        .ok_or(AnswerMiss::NotWaiting)?;
    if call.answer.is_some() {
        return Err(AnswerMiss::AlreadyAnswered);
    }
    if !answer.fits(call.kind) {
        return Err(AnswerMiss::WrongKind(call.kind));
    }
    call.answer = Some(answer);
    Ok(calls.iter().all(|c| c.answer.is_some()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A waiting call `id` of a tool of `kind`, unanswered.
    pub(crate) fn call(id: &str, kind: ToolKind) -> WaitingCall {
        WaitingCall {
            call_id: id.into(),
            tool: "t".into(),
            input: Value::Null,
            kind,
            step: 0,
            answer: None,
        }
    }

    /// SPEC T9: the run is ready when every call has its answer; a second
    /// answer, an unknown call or an answer of the wrong kind change nothing.
    #[test]
    fn t9_answers_are_once_each_and_of_the_right_kind() {
        let mut calls = vec![call("a", ToolKind::Approval), call("c", ToolKind::Client)];
        assert_eq!(
            answer(&mut calls, "x", Answer::Approved),
            Err(AnswerMiss::NotWaiting)
        );
        assert_eq!(
            answer(&mut calls, "c", Answer::Approved),
            Err(AnswerMiss::WrongKind(ToolKind::Client))
        );
        let out = Answer::Submitted {
            output: Value::Null,
        };
        assert_eq!(
            answer(&mut calls, "a", out.clone()),
            Err(AnswerMiss::WrongKind(ToolKind::Approval))
        );
        assert_eq!(answer(&mut calls, "a", Answer::Approved), Ok(false));
        let before = calls.clone();
        let deny = Answer::Denied {
            reason: "no".into(),
        };
        assert_eq!(
            answer(&mut calls, "a", deny),
            Err(AnswerMiss::AlreadyAnswered)
        );
        assert_eq!(calls, before);
        assert_eq!(answer(&mut calls, "c", out), Ok(true));
    }
}
