//! The store seam's protocol: every operation the runtime asks of a store,
//! as plain serializable data, grouped by who asks. An in-process store
//! applies a request directly; a remote one carries it over a connection
//! (the simulator serves one over turmoil's simulated TCP). Each request is
//! one transaction: it is applied whole or not at all. The answers, one
//! reply type per group, are in `reply.rs`.
//!
//! The groups: a client's requests ([`ClientOp`], checked against the
//! thread's agent and owner, SPEC H4); a run's writes under its lease
//! token ([`RunOp`], fenced once, K2); reads a run's step makes without
//! its token ([`ReadOp`]); the thread facade's transactions
//! ([`FacadeOp`], H2, H3, R1); and trusted server code's and workers'
//! requests outside any lease ([`AdminOp`]).

use crate::id::{CallId, MessageId, RunId, ThreadId};
use crate::store::FencingToken;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::mutation::{Expect, Write, Writer};
use super::record::{RunEnd, StoreError};
use super::reply::StoreReply;
use super::waiting::{Answer, WaitingCall};
use crate::clock::Millis;
use crate::future::HookFuture;
use crate::message::NewMessage;

/// What a store answers one request with.
pub type StoreFuture<'a> = HookFuture<'a, Result<StoreReply, StoreError>>;

/// Where threads are kept. Every request is one transaction, applied
/// whole or not at all; a run's writes carry its lease token and are
/// refused under a stale one (K2). A store that cannot be reached answers
/// [`StoreError::Unavailable`]: the request may or may not have landed.
pub trait Store: Send + Sync + 'static {
    /// Applies one request as one transaction and answers it with the reply of
    /// the request's group; an error means nothing was applied (except
    /// [`StoreError::Unavailable`], which cannot know).
    fn call(&self, request: StoreRequest) -> StoreFuture<'_>;
}

/// One store request: an operation on one thread, or one of the two that
/// look across threads.
// A request is built once per exchange with the store and moved into it,
// never kept in bulk: boxing the common variant would cost an allocation
// per request for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoreRequest {
    /// An operation on the thread `thread` (it may not exist yet).
    On {
        /// The thread.
        thread: ThreadId,
        /// What is asked of it, by whom.
        op: Op,
    },
    /// Every thread's id, in order. Answered [`AdminReply::Ids`](super::AdminReply::Ids).
    ThreadIds,
    /// Takes the lease of a run on the first thread in id order that has
    /// one to take (see [`AdminOp::Claim`]). Answered
    /// [`AdminReply::Claimed`](super::AdminReply::Claimed).
    ClaimAny {
        /// The worker claiming, as its events and the lease name it.
        worker: String,
        /// How long the lease lasts unless renewed, in milliseconds; `None`: it
        /// never expires.
        ttl: Option<Millis>,
    },
}

/// An operation on one thread, by who asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// A client acting for `owner` on `agent`'s thread (SPEC H4).
    Client {
        /// The agent the client's runtime serves: a thread of another agent is
        /// refused.
        agent: String,
        /// The identity the client acts for: a thread of another owner is
        /// refused.
        owner: String,
        /// What the client asks.
        op: ClientOp,
    },
    /// A run's write (or fenced read) under its lease token: it lands only
    /// if `token` is the thread's newest and `run` holds the lease (K2).
    Run {
        /// The run writing.
        run: RunId,
        /// The lease token it holds.
        token: FencingToken,
        /// What the run asks.
        op: RunOp,
    },
    /// A read without a lease token.
    Read(ReadOp),
    /// The thread facade's transactions.
    Facade(FacadeOp),
    /// Trusted code's and workers' requests outside a lease.
    Admin(AdminOp),
}

/// A client's requests (SPEC H4: a thread of someone else is refused).
/// Answered [`ClientReply`](super::ClientReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientOp {
    /// Creates the thread if it does not exist.
    Open,
    /// Stores a user message: a new queued run (with `new_run`), or a steer
    /// of the current run (with `steer`). A steer that finds no current run
    /// and no `new_run` is answered [`ClientReply::NeedRunId`](super::ClientReply::NeedRunId).
    Submit {
        /// The user message, numbered by the store at commit.
        message: NewMessage,
        /// A steer of the current run rather than a new run (SPEC A4).
        steer: bool,
        /// The id the run gets when the message starts one.
        new_run: Option<RunId>,
    },
    /// Cancels the named run, or the current one, or the oldest queued one.
    Cancel {
        /// The run to cancel; `None`: the current run, or else the oldest
        /// queued one.
        run: Option<RunId>,
    },
    /// Records a client's answer to a waiting call.
    Answer {
        /// The waiting call answered.
        call_id: CallId,
        /// The client's answer.
        answer: Answer,
    },
}

/// A run's requests under its lease token (SPEC K2). Answered
/// [`RunReply`](super::RunReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunOp {
    /// Moves the lease holder to a new episode under a newer token.
    NextEpisode,
    /// Extends the lease (a lease revision: one commit, SPEC H1); answers
    /// whether a cancel was asked for.
    Renew,
    /// Appends the run's messages; with `step`, the commit of that model step.
    Append {
        /// The messages, in order, numbered by the store at commit.
        messages: Vec<NewMessage>,
        /// The model step they commit, if they are a step's output.
        step: Option<u32>,
        /// The run's metadata, replaced in the same commit: what hooks wrote
        /// while the step's tool results were produced (SPEC K5).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// Takes a pending steer and answers the step's anchor.
    TakeAnchor,
    /// Takes the pending steering message: the transition of the run's
    /// last committed step hands over to it, which the run's record keeps
    /// (`RunRecord::handed_over`, SPEC K3).
    TakeSteer,
    /// What `prepare_run` sees: the messages visible to the run in context
    /// order (all, or only the run's newest user message) and that
    /// message's sequence number. A pending steer it hands to
    /// `prepare_run` is taken by the run for good (SPEC L1).
    RunMessages {
        /// Every visible message, or only the run's newest user message.
        all: bool,
    },
    /// Replaces the run's metadata.
    SetRunMetadata {
        /// The run's typed metadata, as JSON.
        value: Value,
    },
    /// Makes `calls` answerable while the run still works (SPEC T9): every
    /// `before_tool_call` of its step let them through. One commit.
    Await {
        /// The calls, in call order, each still unanswered.
        calls: Vec<WaitingCall>,
    },
    /// Puts the run to wait on `calls` (keeping answers already recorded
    /// for them) and releases its lease.
    Wait {
        /// The calls the run waits on, in call order.
        calls: Vec<WaitingCall>,
    },
    /// The run gives its answerable calls up (it completes or is cancelled
    /// without waiting, A3, T8): from now on the store takes no answer for
    /// them, and the answers it took are returned with the calls, so the
    /// results the run commits keep them (T9). No commit.
    CloseCalls,
    /// Appends a resumed run's results and forgets its waiting calls.
    CommitResumed {
        /// The results and messages the resumed run commits.
        messages: Vec<NewMessage>,
        /// The run's metadata, replaced in the same commit: what hooks wrote
        /// while those results were produced (SPEC K5).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    /// Records how the run ended. A steer left over is admitted as the run
    /// `next_run`; without one, the answer is [`Finish::NeedRunId`](super::Finish::NeedRunId).
    /// A run a cancel reached ends cancelled: another end is answered
    /// [`Finish::CancelFirst`](super::Finish::CancelFirst) and nothing changes.
    Finish {
        /// How the run ended.
        end: RunEnd,
        /// The id a leftover steer's run gets.
        next_run: Option<RunId>,
    },
}

/// Reads without a lease token. Answered [`ReadReply`](super::ReadReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReadOp {
    /// Whether a steering message waits for the next step of `run`.
    HasSteer {
        /// The run.
        run: RunId,
        /// Only a steer stored below this sequence number counts: a worker
        /// that took the run over asks for those stored before the last
        /// committed step's last commit, which that step's `after_step`
        /// heard of (SPEC K3, A3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<u64>,
    },
    /// The run's metadata.
    RunMetadata {
        /// The run.
        run: RunId,
    },
    /// The calls the run waits on.
    WaitingCalls {
        /// The run.
        run: RunId,
    },
    /// A history read fenced to the agent and incarnation (SPEC M3).
    History {
        /// The agent the reader serves: another agent's thread is refused (SPEC
        /// M3).
        agent: String,
        /// The incarnation the reader is bound to: a deleted one is refused
        /// (SPEC H5).
        incarnation: u64,
        /// What to read.
        read: HistoryRead,
    },
}

/// The thread facade's transactions (SPEC H2, H3, H5, K4, R1). Answered
/// [`FacadeReply`](super::FacadeReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FacadeOp {
    /// Commits staged writes as one change if `expect` holds (SPEC H2,
    /// H3). Bound to `incarnation` when given (H5); a run's writes carry
    /// its token (K2); a trusted visibility rewrite waits for no run (K4).
    Mutate {
        /// The incarnation the writer read, when bound to one (SPEC H5).
        incarnation: Option<u64>,
        /// Who commits: trusted code or a run under its token.
        writer: Writer,
        /// What the stored thread must still be for the commit to land (SPEC
        /// H3).
        expect: Expect,
        /// The writes, applied in order.
        writes: Vec<Write>,
    },
    /// Truncates after user message `from`, applies the rewrite's metadata
    /// `writes` and queues `new_run` from `from`, in one commit (SPEC R1, R2).
    Regenerate {
        /// The incarnation the writer read, when bound to one (SPEC H5).
        incarnation: Option<u64>,
        /// The user message to regenerate from: every message after it is
        /// removed.
        from: MessageId,
        /// The id of the run the regeneration starts.
        new_run: RunId,
        /// What the stored thread must still be for the commit to land (SPEC
        /// H3).
        expect: Expect,
        /// Metadata writes `prepare_history_rewrite` hooks asked for, committed
        /// with the rewrite (SPEC L11).
        writes: Vec<Write>,
    },
}

/// Trusted code's and workers' requests outside a lease. Answered
/// [`AdminReply`](super::AdminReply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AdminOp {
    /// The whole thread.
    Inspect,
    /// Deletes the thread's incarnation (SPEC H5): its runs end cancelled.
    Delete,
    /// Takes the lease of the thread's run to drive: its current run if it
    /// can resume or its lease expired, else the next queued run.
    Claim {
        /// The worker claiming, as its events and the lease name it.
        worker: String,
        /// How long the lease lasts unless renewed, in milliseconds; `None`: it
        /// never expires.
        ttl: Option<Millis>,
    },
    /// Records how `run` ended without its lease ([`RunOp::Finish`] for
    /// trusted code). Answered [`AdminReply::Finished`](super::AdminReply::Finished).
    Finish {
        /// The run that ended.
        run: RunId,
        /// How it ended.
        end: RunEnd,
        /// The id a leftover steer's run gets.
        next_run: Option<RunId>,
    },
}

/// Which part of the history a fenced read wants; every read stops at `anchor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum HistoryRead {
    /// Messages with sequence numbers in `from..=through`.
    Range {
        /// The first sequence number.
        from: u64,
        /// The last sequence number, included.
        through: u64,
    },
    /// Up to `limit` messages before `end` (exclusive).
    Before {
        /// The sequence number the page ends before.
        end: u64,
        /// The most messages to return: the newest ones before `end`.
        limit: usize,
    },
    /// Messages visible to a step (not of queued runs) up to `anchor`.
    Visible {
        /// The step's anchor: the newest sequence number the read may see.
        anchor: u64,
    },
    /// [`Visible`](HistoryRead::Visible) for a reader that already holds
    /// the visible messages through `cached`: while the thread's history
    /// epoch is still the cached one, only the visible messages after it;
    /// otherwise (or without `cached`) all of them. Answered
    /// [`ReadReply::Visible`](super::ReadReply::Visible).
    VisibleAfter {
        /// The step's anchor: the newest sequence number the read may see.
        anchor: u64,
        /// What the reader already holds, if anything.
        cached: Option<CachedThrough>,
    },
    /// The client-readable thread metadata.
    Metadata,
    /// The private (server-only) thread metadata.
    PrivateMetadata,
}

/// What a reader holds of a thread's visible messages: every one through
/// sequence number `seq`, as of history epoch `epoch`. The epoch changes
/// whenever stored messages change other than by an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedThrough {
    /// The history epoch the reader's copy is of.
    pub epoch: u64,
    /// The sequence number the reader's copy runs through.
    pub seq: u64,
}

impl StoreRequest {
    /// An operation on `thread`.
    pub fn on(thread: impl Into<ThreadId>, op: Op) -> StoreRequest {
        StoreRequest::On {
            thread: thread.into(),
            op,
        }
    }

    /// A client's request on `thread`, for `owner` on `agent`'s thread.
    pub fn client(
        thread: impl Into<ThreadId>,
        agent: impl Into<String>,
        owner: impl Into<String>,
        op: ClientOp,
    ) -> StoreRequest {
        let (agent, owner) = (agent.into(), owner.into());
        StoreRequest::on(thread, Op::Client { agent, owner, op })
    }

    /// A run's request under its lease token.
    pub fn run(
        thread: impl Into<ThreadId>,
        run: impl Into<RunId>,
        token: FencingToken,
        op: RunOp,
    ) -> StoreRequest {
        let run = run.into();
        StoreRequest::on(thread, Op::Run { run, token, op })
    }

    /// A read without a token.
    pub fn read(thread: impl Into<ThreadId>, op: ReadOp) -> StoreRequest {
        StoreRequest::on(thread, Op::Read(op))
    }

    /// A facade transaction.
    pub fn facade(thread: impl Into<ThreadId>, op: FacadeOp) -> StoreRequest {
        StoreRequest::on(thread, Op::Facade(op))
    }

    /// A trusted request.
    pub fn admin(thread: impl Into<ThreadId>, op: AdminOp) -> StoreRequest {
        StoreRequest::on(thread, Op::Admin(op))
    }

    /// A run's end: under its lease token, or without one by trusted code.
    pub fn finish(
        thread: impl Into<ThreadId>,
        run: impl Into<RunId>,
        token: Option<FencingToken>,
        end: RunEnd,
        next_run: Option<RunId>,
    ) -> StoreRequest {
        match token {
            Some(token) => StoreRequest::run(thread, run, token, RunOp::Finish { end, next_run }),
            None => {
                let run = run.into();
                StoreRequest::admin(thread, AdminOp::Finish { run, end, next_run })
            }
        }
    }

    /// A claim on `thread`, or without one on the first thread with a run to take.
    pub fn claim(thread: Option<ThreadId>, worker: impl Into<String>, ttl: Option<Millis>) -> Self {
        let worker = worker.into();
        match thread {
            Some(thread) => StoreRequest::admin(thread, AdminOp::Claim { worker, ttl }),
            None => StoreRequest::ClaimAny { worker, ttl },
        }
    }

    /// The thread the request acts on, if it names one.
    pub fn thread(&self) -> Option<&str> {
        match self {
            StoreRequest::On { thread, .. } => Some(thread),
            StoreRequest::ThreadIds | StoreRequest::ClaimAny { .. } => None,
        }
    }

    /// The operation on one thread, if it is one.
    pub fn op(&self) -> Option<&Op> {
        match self {
            StoreRequest::On { op, .. } => Some(op),
            _ => None,
        }
    }

    /// The run and lease token a run's write is fenced by (SPEC K2): a
    /// [`RunOp`], or a run's [`FacadeOp::Mutate`].
    pub fn fence(&self) -> Option<(&str, FencingToken)> {
        self.op().and_then(Op::fence)
    }
}

impl Op {
    /// The run and lease token the operation is fenced by, if any.
    pub fn fence(&self) -> Option<(&str, FencingToken)> {
        match self {
            Op::Run { run, token, .. }
            | Op::Facade(FacadeOp::Mutate {
                writer: Writer::Run { run, token },
                ..
            }) => Some((run, *token)),
            _ => None,
        }
    }

    /// The run the operation acts for, if it names one.
    pub fn run(&self) -> Option<&str> {
        match self {
            Op::Run { run, .. }
            | Op::Read(
                ReadOp::HasSteer { run, .. }
                | ReadOp::RunMetadata { run }
                | ReadOp::WaitingCalls { run },
            )
            | Op::Admin(AdminOp::Finish { run, .. }) => Some(run),
            op => op.fence().map(|(run, _)| run),
        }
    }
}
