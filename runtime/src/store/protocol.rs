//! The store seam's protocol: every operation the runtime asks of a store,
//! and every answer, as plain serializable data. An in-process store
//! applies a request directly; a remote one carries it over a connection
//! (the simulator serves one over turmoil's simulated TCP). Each request is
//! one transaction: it is applied whole or not at all.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mutation::{Deletion, Expect, Mutation, Refusal, Regeneration, Write, Writer};
use super::record::{
    Answered, Appended, CancelMiss, CancelReached, Claimed, RunEnd, StoreError, StoredThread,
    Submitted,
};
use super::waiting::{Answer, AnswerMiss, WaitingCall};
use crate::clock::Millis;
use crate::future::HookFuture;
use crate::message::Message;

/// What a store answers one request with.
pub type StoreFuture<'a> = HookFuture<'a, Result<StoreReply, StoreError>>;

/// Where threads are kept. Every request is one transaction, applied
/// whole or not at all; a run's writes carry its lease token and are
/// refused under a stale one (K2). A store that cannot be reached answers
/// [`StoreError::Unavailable`]: the request may or may not have landed.
pub trait Store: Send + Sync + 'static {
    fn call(&self, request: StoreRequest) -> StoreFuture<'_>;
}

/// One store operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StoreRequest {
    /// Stores a user message: a new queued run (with `new_run`), or a steer
    /// of the current run (with `steer`). A steer that finds no current run
    /// and no `new_run` is answered [`StoreReply::NeedRunId`].
    Submit {
        thread: String,
        agent: String,
        owner: String,
        message: Message,
        steer: bool,
        new_run: Option<String>,
    },
    /// Creates the thread for `owner` and `agent` if it does not exist.
    Open {
        thread: String,
        agent: String,
        owner: String,
    },
    /// Cancels the named run, or the current one, or the oldest queued one.
    Cancel {
        thread: String,
        agent: String,
        owner: String,
        run: Option<String>,
    },
    /// Records a client's answer to a waiting call.
    Answer {
        thread: String,
        agent: String,
        owner: String,
        call_id: String,
        answer: Answer,
    },
    /// The whole thread, for trusted code.
    Inspect { thread: String },
    /// Every thread's id, in order.
    ThreadIds,
    /// Takes the lease of a run to drive: the current run of `thread` (or
    /// of the first thread in id order that has one, without `thread`) if
    /// it can resume or its lease expired, else the next queued run.
    Claim {
        thread: Option<String>,
        worker: String,
        ttl: Option<Millis>,
    },
    /// Moves the lease holder to a new episode under a newer token.
    NextEpisode {
        thread: String,
        run: String,
        token: u64,
    },
    /// Extends the lease (a lease revision: one commit, SPEC H1); answers
    /// whether a cancel was asked for.
    Renew {
        thread: String,
        run: String,
        token: u64,
    },
    /// Appends a run's messages; with `step`, the commit of that model step.
    Append {
        thread: String,
        run: String,
        token: u64,
        messages: Vec<Message>,
        step: Option<u32>,
    },
    /// Takes a pending steer and answers the step's anchor.
    TakeAnchor {
        thread: String,
        run: String,
        token: u64,
    },
    /// Whether a steering message waits for the next step of `run`.
    HasSteer { thread: String, run: String },
    /// Takes the pending steering message.
    TakeSteer {
        thread: String,
        run: String,
        token: u64,
    },
    /// What `prepare_run` sees: the messages visible to the run in context
    /// order (all, or only the run's newest user message) and that
    /// message's sequence number. Under the run's token: a pending steer
    /// it hands to `prepare_run` is taken by the run for good (SPEC L1).
    RunMessages {
        thread: String,
        run: String,
        token: u64,
        all: bool,
    },
    /// A fenced history read (SPEC M3).
    History {
        thread: String,
        agent: String,
        incarnation: u64,
        read: HistoryRead,
    },
    /// The run's metadata.
    RunMetadata { thread: String, run: String },
    /// Replaces the run's metadata.
    SetRunMetadata {
        thread: String,
        run: String,
        token: u64,
        value: Value,
    },
    /// Makes `calls` answerable while the run still works (SPEC T9): every
    /// `before_tool_call` of its step let them through. One commit.
    Await {
        thread: String,
        run: String,
        token: u64,
        calls: Vec<WaitingCall>,
    },
    /// Puts the run to wait on `calls` (keeping answers already recorded
    /// for them) and releases its lease.
    Wait {
        thread: String,
        run: String,
        token: u64,
        calls: Vec<WaitingCall>,
    },
    /// The calls the run waits on.
    WaitingCalls { thread: String, run: String },
    /// The run gives its answerable calls up (it completes or is cancelled
    /// without waiting, A3, T8): from now on the store takes no answer for
    /// them, and the answers it took are returned with the calls, so the
    /// results the run commits keep them (T9). Fenced, no commit.
    CloseCalls {
        thread: String,
        run: String,
        token: u64,
    },
    /// Appends a resumed run's results and forgets its waiting calls.
    CommitResumed {
        thread: String,
        run: String,
        token: u64,
        messages: Vec<Message>,
    },
    /// Records how the run ended. A steer left over is admitted as the run
    /// `next_run`; without one, the answer is [`StoreReply::NeedRunId`]. A
    /// run a cancel reached ends cancelled: another end is answered
    /// [`StoreReply::CancelFirst`] and nothing changes.
    Finish {
        thread: String,
        run: String,
        token: Option<u64>,
        end: RunEnd,
        next_run: Option<String>,
    },
    /// Commits staged writes as one change if `expect` holds (SPEC H2,
    /// H3). Bound to `incarnation` when given (H5); a run's writes carry
    /// its token (K2); a trusted visibility rewrite waits for no run (K4).
    Mutate {
        thread: String,
        incarnation: Option<u64>,
        writer: Writer,
        expect: Expect,
        writes: Vec<Write>,
    },
    /// Truncates after user message `from`, applies the rewrite's metadata
    /// `writes` and queues `new_run` from `from`, in one commit (SPEC R1, R2).
    Regenerate {
        thread: String,
        incarnation: Option<u64>,
        from: String,
        new_run: String,
        expect: Expect,
        writes: Vec<Write>,
    },
    /// Deletes the thread's incarnation (SPEC H5): its runs end cancelled.
    Delete { thread: String },
}

/// Which part of the history a fenced read wants; every read stops at `anchor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum HistoryRead {
    /// Messages with sequence numbers in `from..=through`.
    Range {
        from: u64,
        through: u64,
    },
    /// Up to `limit` messages before `end` (exclusive).
    Before {
        end: u64,
        limit: usize,
    },
    /// Messages visible to a step (not of queued runs) up to `anchor`.
    Visible {
        anchor: u64,
    },
    /// [`Visible`](HistoryRead::Visible) for a reader that already holds
    /// the visible messages through `cached`: while the thread's history
    /// epoch is still the cached one, only the visible messages after it;
    /// otherwise (or without `cached`) all of them. Answered
    /// [`StoreReply::Visible`].
    VisibleAfter {
        anchor: u64,
        cached: Option<CachedThrough>,
    },
    Metadata,
    PrivateMetadata,
}

/// What a reader holds of a thread's visible messages: every one through
/// sequence number `seq`, as of history epoch `epoch`. The epoch changes
/// whenever stored messages change other than by an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedThrough {
    pub epoch: u64,
    pub seq: u64,
}

/// A store's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum StoreReply {
    Done,
    NeedRunId,
    /// A cancel reached the run before its end was stored (K6): it must end
    /// cancelled.
    CancelFirst,
    Submitted(Submitted),
    Cancelled(Result<CancelReached, CancelMiss>),
    Answered(Result<Answered, AnswerMiss>),
    Thread(Option<StoredThread>),
    Ids(Vec<String>),
    Claimed(Option<Claimed>),
    /// A new episode's lease, and the thread's version after its commit.
    Lease {
        token: u64,
        episode: u32,
        version: u64,
    },
    Renewed {
        cancel_requested: bool,
        version: u64,
    },
    Appended(Appended),
    Anchor {
        last_seq: u64,
        incarnation: u64,
    },
    Flag(bool),
    RunMessages {
        messages: Vec<Message>,
        latest: Option<u64>,
    },
    Messages(Vec<Message>),
    /// The answer to [`HistoryRead::VisibleAfter`]: the thread's history
    /// epoch, and either every visible message (`whole`) or only those
    /// after the reader's cached ones.
    Visible {
        epoch: u64,
        whole: bool,
        messages: Vec<Message>,
    },
    Map(Map<String, Value>),
    Value(Option<Value>),
    Version(u64),
    /// The calls the run now waits on (with answers already recorded) and
    /// the thread's version; `None`: refused, a cancel came first.
    Waited(Option<(Vec<WaitingCall>, u64)>),
    Calls(Vec<WaitingCall>),
    Finished {
        admitted: Option<(String, String)>,
        /// The thread's version after the run's end was stored.
        version: u64,
    },
    Mutated(Result<Mutation, Refusal>),
    Regenerated(Result<Regeneration, Refusal>),
    /// `None`: there was no thread to delete.
    Deleted(Option<Deletion>),
}

impl StoreRequest {
    /// Every request kind's name ([`StoreRequest::name`]), in declaration
    /// order: the one list of them (a simulator places faults at a request
    /// of a kind, and checks the kinds a scenario names against this).
    pub const KINDS: [&'static str; 26] = [
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

    /// The request's kind, in snake_case: its name in errors and
    /// transcripts, one of [`StoreRequest::KINDS`].
    pub fn name(&self) -> &'static str {
        use StoreRequest as R;
        match self {
            R::Submit { .. } => "submit",
            R::Open { .. } => "open",
            R::Cancel { .. } => "cancel",
            R::Answer { .. } => "answer",
            R::Inspect { .. } => "inspect",
            R::ThreadIds => "thread_ids",
            R::Claim { .. } => "claim",
            R::NextEpisode { .. } => "next_episode",
            R::Renew { .. } => "renew",
            R::Append { .. } => "append",
            R::TakeAnchor { .. } => "take_anchor",
            R::HasSteer { .. } => "has_steer",
            R::TakeSteer { .. } => "take_steer",
            R::RunMessages { .. } => "run_messages",
            R::History { .. } => "history",
            R::RunMetadata { .. } => "run_metadata",
            R::SetRunMetadata { .. } => "set_run_metadata",
            R::Await { .. } => "await",
            R::Wait { .. } => "wait",
            R::WaitingCalls { .. } => "waiting_calls",
            R::CloseCalls { .. } => "close_calls",
            R::CommitResumed { .. } => "commit_resumed",
            R::Finish { .. } => "finish",
            R::Mutate { .. } => "mutate",
            R::Regenerate { .. } => "regenerate",
            R::Delete { .. } => "delete",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Outcome, PaiMeta, Producer, Role, Visibility};
    use crate::store::{RunEnd, RunStatus};

    /// Where `r`'s kind stands in [`StoreRequest::KINDS`]: an exhaustive
    /// match, so a new request kind does not compile until it is listed.
    fn position(r: &StoreRequest) -> usize {
        use StoreRequest as R;
        match r {
            R::Submit { .. } => 0,
            R::Open { .. } => 1,
            R::Cancel { .. } => 2,
            R::Answer { .. } => 3,
            R::Inspect { .. } => 4,
            R::ThreadIds => 5,
            R::Claim { .. } => 6,
            R::NextEpisode { .. } => 7,
            R::Renew { .. } => 8,
            R::Append { .. } => 9,
            R::TakeAnchor { .. } => 10,
            R::HasSteer { .. } => 11,
            R::TakeSteer { .. } => 12,
            R::RunMessages { .. } => 13,
            R::History { .. } => 14,
            R::RunMetadata { .. } => 15,
            R::SetRunMetadata { .. } => 16,
            R::Await { .. } => 17,
            R::Wait { .. } => 18,
            R::WaitingCalls { .. } => 19,
            R::CloseCalls { .. } => 20,
            R::CommitResumed { .. } => 21,
            R::Finish { .. } => 22,
            R::Mutate { .. } => 23,
            R::Regenerate { .. } => 24,
            R::Delete { .. } => 25,
        }
    }

    /// One request of every kind, in declaration order.
    fn every_kind() -> Vec<StoreRequest> {
        use StoreRequest as R;
        let (t, run) = ("t".to_string(), "r".to_string());
        let who = || (t.clone(), "a".to_string(), "o".to_string());
        let fenced = || (t.clone(), run.clone(), 1u64);
        let (thread, agent, owner) = who();
        let (ft, fr, token) = fenced();
        vec![
            R::Submit {
                thread: thread.clone(),
                agent: agent.clone(),
                owner: owner.clone(),
                message: Message {
                    id: "m".into(),
                    seq: 1,
                    role: Role::User,
                    parts: vec![],
                    visibility: Visibility::ALL,
                    pai: PaiMeta::new(Producer::User, None, None, 0),
                },
                steer: false,
                new_run: None,
            },
            R::Open {
                thread: thread.clone(),
                agent: agent.clone(),
                owner: owner.clone(),
            },
            R::Cancel {
                thread: thread.clone(),
                agent: agent.clone(),
                owner: owner.clone(),
                run: None,
            },
            R::Answer {
                thread: thread.clone(),
                agent: agent.clone(),
                owner,
                call_id: "c".into(),
                answer: Answer::Approved,
            },
            R::Inspect {
                thread: thread.clone(),
            },
            R::ThreadIds,
            R::Claim {
                thread: None,
                worker: "w".into(),
                ttl: None,
            },
            R::NextEpisode {
                thread: ft.clone(),
                run: fr.clone(),
                token,
            },
            R::Renew {
                thread: ft.clone(),
                run: fr.clone(),
                token,
            },
            R::Append {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                messages: vec![],
                step: None,
            },
            R::TakeAnchor {
                thread: ft.clone(),
                run: fr.clone(),
                token,
            },
            R::HasSteer {
                thread: ft.clone(),
                run: fr.clone(),
            },
            R::TakeSteer {
                thread: ft.clone(),
                run: fr.clone(),
                token,
            },
            R::RunMessages {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                all: true,
            },
            R::History {
                thread: ft.clone(),
                agent,
                incarnation: 1,
                read: HistoryRead::Metadata,
            },
            R::RunMetadata {
                thread: ft.clone(),
                run: fr.clone(),
            },
            R::SetRunMetadata {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                value: Value::Null,
            },
            R::Await {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                calls: vec![],
            },
            R::Wait {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                calls: vec![],
            },
            R::WaitingCalls {
                thread: ft.clone(),
                run: fr.clone(),
            },
            R::CloseCalls {
                thread: ft.clone(),
                run: fr.clone(),
                token,
            },
            R::CommitResumed {
                thread: ft.clone(),
                run: fr.clone(),
                token,
                messages: vec![],
            },
            R::Finish {
                thread: ft.clone(),
                run: fr,
                token: None,
                end: RunEnd {
                    status: RunStatus::Completed,
                    outcome: Outcome::Completed,
                    reason: None,
                },
                next_run: None,
            },
            R::Mutate {
                thread: ft.clone(),
                incarnation: None,
                writer: Writer::Trusted,
                expect: Expect::Nothing,
                writes: vec![],
            },
            R::Regenerate {
                thread: ft.clone(),
                incarnation: None,
                from: "m".into(),
                new_run: "r2".into(),
                expect: Expect::Nothing,
                writes: vec![],
            },
            R::Delete { thread: ft },
        ]
    }

    #[test]
    fn kinds_list_every_request_by_its_name_once() {
        let all = every_kind();
        assert_eq!(all.len(), StoreRequest::KINDS.len());
        for (i, r) in all.iter().enumerate() {
            assert_eq!(position(r), i, "{r:?} is out of order");
            assert_eq!(StoreRequest::KINDS[i], r.name(), "{r:?}");
        }
        let mut names = StoreRequest::KINDS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(
            names.len(),
            StoreRequest::KINDS.len(),
            "a kind is listed twice"
        );
    }
}
