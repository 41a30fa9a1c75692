//! A store's answers, one type per request group (`protocol.rs`): the
//! engine answers a group's operation with that group's reply, and each
//! variant answers one operation (or a few alike), so a caller takes an
//! answer apart by matching one variant.

use crate::id::{MessageId, RunId, ThreadId};
use crate::store::FencingToken;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mutation::{Deletion, Mutation, Refusal, Regeneration};
use super::record::{
    Answered, Appended, CancelMiss, CancelReached, Claimed, StoredThread, Submitted,
};
use super::waiting::{AnswerMiss, WaitingCall};
use crate::message::Message;

/// A store's answer to one request: the reply of the request's group.
// As large as an inspect's thread, as the flat reply was: one reply per
// request, moved once, so no box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum StoreReply {
    /// The answer to a client's request.
    Client(ClientReply),
    /// The answer to a run's request under its lease.
    Run(RunReply),
    /// The answer to a read without a lease.
    Read(ReadReply),
    /// The answer to a facade transaction.
    Facade(FacadeReply),
    /// The answer to a trusted request, `ThreadIds` or `ClaimAny`.
    Admin(AdminReply),
}

/// The answer to a [`ClientOp`](super::ClientOp).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientReply {
    /// `Open`: the thread exists.
    Opened,
    /// `Submit`: the message was stored.
    Submitted(Submitted),
    /// `Submit`: a steer found no current run; ask again with a run id.
    NeedRunId,
    /// `Cancel`: the run reached and how, or why none was.
    Cancelled(Result<CancelReached, CancelMiss>),
    /// `Answer`: what recording the answer did, or why it was refused (SPEC
    /// T9).
    Answered(Result<Answered, AnswerMiss>),
}

/// The answer to a [`RunOp`](super::RunOp).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RunReply {
    /// `NextEpisode`: the new episode's lease, and the thread's version
    /// after its commit.
    Lease {
        /// The new, newest fencing token (SPEC K2).
        token: FencingToken,
        /// The episode this lease begins, from 1.
        episode: u32,
        /// The thread's version after the commit.
        version: u64,
    },
    /// `Renew`.
    Renewed {
        /// A client asked to cancel the run: it must stop and end cancelled
        /// (SPEC K6).
        cancel_requested: bool,
        /// The thread's version after the renewal's commit.
        version: u64,
    },
    /// `Append` and `CommitResumed`.
    Appended(Appended),
    /// `TakeAnchor`.
    Anchor {
        /// The step's anchor: the newest sequence number when the step starts
        /// (SPEC M1); the step's reads stop there.
        last_seq: u64,
        /// The thread's incarnation, which the step's reads are bound to (SPEC
        /// H5).
        incarnation: u64,
    },
    /// `TakeSteer`.
    SteerTaken,
    /// `RunMessages`.
    RunMessages {
        /// The messages visible to the run, in context order: all of them, or
        /// only its newest user message.
        messages: Vec<Message>,
        /// The sequence number of the run's newest user message, if it has one.
        latest: Option<u64>,
    },
    /// `SetRunMetadata`: the thread's version after it.
    MetadataSet {
        /// The thread's version after the commit.
        version: u64,
    },
    /// `Await`: the thread's version after it.
    Awaited {
        /// The thread's version after the commit.
        version: u64,
    },
    /// `Wait`: the calls the run now waits on (with answers already
    /// recorded) and the thread's version; `None`: refused, a cancel came
    /// first.
    Waited(Option<(Vec<WaitingCall>, u64)>),
    /// `CloseCalls`: the calls given up, with the answers taken.
    Closed(Vec<WaitingCall>),
    /// `Finish`.
    Finished(Finish),
}

/// How a finish went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Finish {
    /// Stored at `version`; the run a leftover steer started, with its
    /// trigger, if any.
    Stored {
        /// The run a leftover steer started and the steer that triggered it, if
        /// any.
        admitted: Option<(RunId, MessageId)>,
        /// The thread's version after the commit.
        version: u64,
    },
    /// A steer is left over: ask again with a run id for it.
    NeedRunId,
    /// A cancel reached the run before its end was stored (K6): it must
    /// end cancelled.
    CancelFirst,
}

/// The answer to a [`ReadOp`](super::ReadOp).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ReadReply {
    /// `HasSteer`.
    HasSteer(bool),
    /// `RunMetadata`.
    RunMetadata(Option<Value>),
    /// `WaitingCalls`.
    WaitingCalls(Vec<WaitingCall>),
    /// `History` of messages (`Range`, `Before`, `Visible`).
    Messages(Vec<Message>),
    /// `History` of `VisibleAfter`: the thread's history epoch, and either
    /// every visible message (`whole`) or only those after the reader's
    /// cached ones.
    Visible {
        /// The thread's history epoch now: it changes whenever stored messages
        /// change other than by an append.
        epoch: u64,
        /// Whether `messages` holds every visible message (the reader's cache
        /// is stale or absent) or only those after the cached ones.
        whole: bool,
        /// The messages, in context order.
        messages: Vec<Message>,
    },
    /// `History` of `Metadata` or `PrivateMetadata`.
    Metadata(Map<String, Value>),
}

/// The answer to a [`FacadeOp`](super::FacadeOp).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FacadeReply {
    /// `Mutate`: what the committed mutation did, or why nothing committed.
    Mutated(Result<Mutation, Refusal>),
    /// `Regenerate`: what the committed regeneration did, or why nothing
    /// committed.
    Regenerated(Result<Regeneration, Refusal>),
}

/// The answer to an [`AdminOp`](super::AdminOp), `ThreadIds` or `ClaimAny`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AdminReply {
    /// `Inspect`: `None` when there is no live thread.
    Thread(Option<StoredThread>),
    /// `Delete`: `None` when there was no thread to delete.
    Deleted(Option<Deletion>),
    /// `Claim` and `ClaimAny`.
    Claimed(Option<Claimed>),
    /// `Finish` without a lease.
    Finished(Finish),
    /// `ThreadIds`.
    Ids(Vec<ThreadId>),
}
