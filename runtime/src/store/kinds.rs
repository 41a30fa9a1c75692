//! The names of the store's request kinds: the one list of them
//! ([`KINDS`]) and each request's name, which transcripts, faults placed
//! at a request and errors use.

use super::protocol::{AdminOp, ClientOp, FacadeOp, Op, ReadOp, RunOp, StoreRequest};

impl StoreRequest {
    /// Every request kind's name ([`StoreRequest::name`]), in declaration
    /// order: the one list of them (a simulator places faults at a request
    /// of a kind, and checks the kinds a scenario names against this).
    pub const KINDS: [&'static str; 26] = KINDS;

    /// The request's kind, in snake_case: its name in errors and
    /// transcripts, one of [`StoreRequest::KINDS`]. A finish without a
    /// lease is a `finish` too, and a claim on any thread a `claim`.
    pub fn name(&self) -> &'static str {
        match self {
            StoreRequest::ThreadIds => "thread_ids",
            StoreRequest::ClaimAny { .. } => "claim",
            StoreRequest::On { op, .. } => op_name(op),
        }
    }
}

/// Every request kind's name, in declaration order.
const KINDS: [&str; 26] = [
    "submit",
    "open",
    "cancel",
    "answer",
    "inspect",
    "thread_ids",
    "claim",
    "next_episode",
    "renew",
    "append",
    "take_anchor",
    "has_steer",
    "take_steer",
    "run_messages",
    "history",
    "run_metadata",
    "set_run_metadata",
    "await",
    "wait",
    "waiting_calls",
    "close_calls",
    "commit_resumed",
    "finish",
    "mutate",
    "regenerate",
    "delete",
];

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Client { op, .. } => client_name(op),
        Op::Run { op, .. } => run_name(op),
        Op::Read(op) => read_name(op),
        Op::Facade(FacadeOp::Mutate { .. }) => "mutate",
        Op::Facade(FacadeOp::Regenerate { .. }) => "regenerate",
        Op::Admin(op) => admin_name(op),
    }
}

fn client_name(op: &ClientOp) -> &'static str {
    match op {
        ClientOp::Open => "open",
        ClientOp::Submit { .. } => "submit",
        ClientOp::Cancel { .. } => "cancel",
        ClientOp::Answer { .. } => "answer",
    }
}

fn run_name(op: &RunOp) -> &'static str {
    match op {
        RunOp::NextEpisode => "next_episode",
        RunOp::Renew => "renew",
        RunOp::Append { .. } => "append",
        RunOp::TakeAnchor => "take_anchor",
        RunOp::TakeSteer => "take_steer",
        RunOp::RunMessages { .. } => "run_messages",
        RunOp::SetRunMetadata { .. } => "set_run_metadata",
        RunOp::Await { .. } => "await",
        RunOp::Wait { .. } => "wait",
        RunOp::CloseCalls => "close_calls",
        RunOp::CommitResumed { .. } => "commit_resumed",
        RunOp::Finish { .. } => "finish",
    }
}

fn read_name(op: &ReadOp) -> &'static str {
    match op {
        ReadOp::HasSteer { .. } => "has_steer",
        ReadOp::RunMetadata { .. } => "run_metadata",
        ReadOp::WaitingCalls { .. } => "waiting_calls",
        ReadOp::History { .. } => "history",
    }
}

fn admin_name(op: &AdminOp) -> &'static str {
    match op {
        AdminOp::Inspect => "inspect",
        AdminOp::Delete => "delete",
        AdminOp::Claim { .. } => "claim",
        AdminOp::Finish { .. } => "finish",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{NewMessage, Outcome, PaiMeta, Producer, Role, Visibility};
    use crate::store::{Answer, Expect, FencingToken, HistoryRead, RunEnd, RunStatus, Writer};

    fn end() -> RunEnd {
        RunEnd {
            status: RunStatus::Completed,
            outcome: Outcome::Completed,
            reason: None,
        }
    }

    /// A user message to submit.
    fn message() -> NewMessage {
        NewMessage {
            id: "m".into(),
            role: Role::User,
            parts: vec![],
            visibility: Visibility::ALL,
            pai: PaiMeta::new(Producer::User, None, None, 0),
        }
    }

    /// A trusted mutation and a regeneration, expecting nothing.
    fn facade_ops() -> (FacadeOp, FacadeOp) {
        (
            FacadeOp::Mutate {
                incarnation: None,
                writer: Writer::Trusted,
                expect: Expect::Nothing,
                writes: vec![],
            },
            FacadeOp::Regenerate {
                incarnation: None,
                from: "m".into(),
                new_run: "r2".into(),
                expect: Expect::Nothing,
                writes: vec![],
            },
        )
    }

    /// One request of every kind, in [`KINDS`] order.
    fn every_kind() -> Vec<StoreRequest> {
        let message = message();
        let client = |op| StoreRequest::client("t", "a", "o", op);
        let run = |op| StoreRequest::run("t", "r", FencingToken::new(1), op);
        let read = |op| StoreRequest::read("t", op);
        let admin = |op| StoreRequest::admin("t", op);
        let (mutate, regenerate) = facade_ops();
        let history = ReadOp::History {
            agent: "a".into(),
            incarnation: 1,
            read: HistoryRead::Metadata,
        };
        let (steer, new_run, next_run) = (false, None, None);
        let finish = RunOp::Finish {
            end: end(),
            next_run,
        };
        vec![
            client(ClientOp::Submit {
                message,
                steer,
                new_run,
            }),
            client(ClientOp::Open),
            client(ClientOp::Cancel { run: None }),
            client(ClientOp::Answer {
                call_id: "c".into(),
                answer: Answer::Approved,
            }),
            admin(AdminOp::Inspect),
            StoreRequest::ThreadIds,
            StoreRequest::claim(None, "w", None),
            run(RunOp::NextEpisode),
            run(RunOp::Renew),
            run(RunOp::Append {
                messages: vec![],
                step: None,
                metadata: None,
            }),
            run(RunOp::TakeAnchor),
            read(ReadOp::HasSteer {
                run: "r".into(),
                before: None,
            }),
            run(RunOp::TakeSteer),
            run(RunOp::RunMessages { all: true }),
            read(history),
            read(ReadOp::RunMetadata { run: "r".into() }),
            run(RunOp::SetRunMetadata {
                value: serde_json::Value::Null,
            }),
            run(RunOp::Await { calls: vec![] }),
            run(RunOp::Wait { calls: vec![] }),
            read(ReadOp::WaitingCalls { run: "r".into() }),
            run(RunOp::CloseCalls),
            run(RunOp::CommitResumed {
                messages: vec![],
                metadata: None,
            }),
            run(finish),
            StoreRequest::facade("t", mutate),
            StoreRequest::facade("t", regenerate),
            admin(AdminOp::Delete),
        ]
    }

    #[test]
    fn kinds_list_every_request_by_its_name_once() {
        let all = every_kind();
        assert_eq!(all.len(), KINDS.len());
        for (i, r) in all.iter().enumerate() {
            assert_eq!(KINDS[i], r.name(), "{r:?}");
        }
        let mut names = KINDS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KINDS.len(), "a kind is listed twice");
        let others = [
            StoreRequest::claim(Some("t".into()), "w", None),
            StoreRequest::admin(
                "t",
                AdminOp::Finish {
                    run: "r".into(),
                    end: end(),
                    next_run: None,
                },
            ),
        ];
        for r in others {
            assert!(KINDS.contains(&r.name()), "{r:?}");
        }
    }
}
