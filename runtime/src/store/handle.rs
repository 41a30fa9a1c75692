//! The typed calls the runtime makes on its store: each builds one
//! request of its group and takes the group's reply apart by the one
//! variant that answers it (a remote store's answer of another shape is a
//! protocol error).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::memory::MemoryStore;
use super::mutation::{Deletion, Expect, Mutation, Refusal, Regeneration, Write, Writer};
use super::protocol::{
    AdminOp, CachedThrough, ClientOp, FacadeOp, HistoryRead, ReadOp, RunOp, Store, StoreRequest,
};
use super::record::{
    Answered, Appended, CancelMiss, CancelReached, Claimed, RunEnd, StoreError, StoredThread,
    Submitted,
};
use super::reply::{AdminReply, ClientReply, FacadeReply, Finish, ReadReply, RunReply, StoreReply};
use super::waiting::{Answer, AnswerMiss, WaitingCall};
use crate::clock::Millis;
use crate::id::{RunId, ThreadId};
use crate::message::{Message, NewMessage};
use crate::store::FencingToken;

/// A runtime's store.
#[derive(Clone)]
pub(crate) struct StoreHandle(Arc<dyn Store>);

impl std::fmt::Debug for StoreHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreHandle")
    }
}

impl Default for StoreHandle {
    fn default() -> Self {
        StoreHandle(Arc::new(MemoryStore::default()))
    }
}

/// Takes an answer apart, or says it has the wrong shape.
macro_rules! expect {
    ($reply:expr, $pat:pat => $out:expr) => {
        match $reply {
            $pat => Ok($out),
            other => Err(StoreError::Protocol(format!("unexpected answer {other:?}"))),
        }
    };
}

/// Who acts on a thread: its id, the agent and the owner (SPEC H4).
pub(crate) struct Scope<'a> {
    pub(crate) thread: &'a str,
    pub(crate) agent: &'a str,
    pub(crate) owner: &'a str,
}

/// A run's fence: its thread, the run and its lease token.
type Fence<'a> = (&'a str, &'a str, FencingToken);

fn unexpected(reply: impl std::fmt::Debug) -> StoreError {
    StoreError::Protocol(format!("unexpected answer {reply:?}"))
}

/// One request of each group, answered by that group's reply.
impl StoreHandle {
    pub(crate) fn new(store: Arc<dyn Store>) -> StoreHandle {
        StoreHandle(store)
    }

    async fn ask(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        self.0.call(request).await
    }

    async fn client(&self, s: &Scope<'_>, op: ClientOp) -> Result<ClientReply, StoreError> {
        match self
            .ask(StoreRequest::client(s.thread, s.agent, s.owner, op))
            .await?
        {
            StoreReply::Client(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    async fn run(
        &self,
        (thread, run, token): Fence<'_>,
        op: RunOp,
    ) -> Result<RunReply, StoreError> {
        match self.ask(StoreRequest::run(thread, run, token, op)).await? {
            StoreReply::Run(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    async fn read(&self, thread: &str, op: ReadOp) -> Result<ReadReply, StoreError> {
        match self.ask(StoreRequest::read(thread, op)).await? {
            StoreReply::Read(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    async fn facade(&self, thread: &str, op: FacadeOp) -> Result<FacadeReply, StoreError> {
        match self.ask(StoreRequest::facade(thread, op)).await? {
            StoreReply::Facade(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    async fn admin(&self, request: StoreRequest) -> Result<AdminReply, StoreError> {
        match self.ask(request).await? {
            StoreReply::Admin(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }
}

/// A client's calls (SPEC H4).
impl StoreHandle {
    /// `None`: a steer found no current run and needs a run id.
    pub(crate) async fn submit(
        &self,
        s: &Scope<'_>,
        message: NewMessage,
        steer: bool,
        new_run: Option<RunId>,
    ) -> Result<Option<Submitted>, StoreError> {
        let op = ClientOp::Submit {
            message,
            steer,
            new_run,
        };
        match self.client(s, op).await? {
            ClientReply::NeedRunId => Ok(None),
            other => expect!(other, ClientReply::Submitted(x) => Some(x)),
        }
    }

    pub(crate) async fn open(&self, s: &Scope<'_>) -> Result<(), StoreError> {
        expect!(self.client(s, ClientOp::Open).await?, ClientReply::Opened => ())
    }

    pub(crate) async fn cancel(
        &self,
        s: &Scope<'_>,
        run: Option<&str>,
    ) -> Result<Result<CancelReached, CancelMiss>, StoreError> {
        let op = ClientOp::Cancel {
            run: run.map(RunId::from),
        };
        expect!(self.client(s, op).await?, ClientReply::Cancelled(x) => x)
    }

    pub(crate) async fn answer(
        &self,
        s: &Scope<'_>,
        call_id: &str,
        answer: Answer,
    ) -> Result<Result<Answered, AnswerMiss>, StoreError> {
        let op = ClientOp::Answer {
            call_id: call_id.into(),
            answer,
        };
        expect!(self.client(s, op).await?, ClientReply::Answered(x) => x)
    }
}

/// Trusted code's and workers' calls outside a lease.
impl StoreHandle {
    pub(crate) async fn inspect(&self, thread: &str) -> Result<Option<StoredThread>, StoreError> {
        let reply = self
            .admin(StoreRequest::admin(thread, AdminOp::Inspect))
            .await?;
        expect!(reply, AdminReply::Thread(x) => x)
    }

    pub(crate) async fn ids(&self) -> Result<Vec<ThreadId>, StoreError> {
        expect!(self.admin(StoreRequest::ThreadIds).await?, AdminReply::Ids(x) => x)
    }

    pub(crate) async fn claim(
        &self,
        thread: Option<&str>,
        worker: &str,
        ttl: Option<Millis>,
    ) -> Result<Option<Claimed>, StoreError> {
        let request = StoreRequest::claim(thread.map(ThreadId::from), worker, ttl);
        expect!(self.admin(request).await?, AdminReply::Claimed(x) => x)
    }

    pub(crate) async fn delete(&self, thread: &str) -> Result<Option<Deletion>, StoreError> {
        let reply = self
            .admin(StoreRequest::admin(thread, AdminOp::Delete))
            .await?;
        expect!(reply, AdminReply::Deleted(x) => x)
    }
}

/// A run's calls under its lease token (SPEC K2).
impl StoreHandle {
    pub(crate) async fn next_episode(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
    ) -> Result<(FencingToken, u32, u64), StoreError> {
        let reply = self.run((thread, run, token), RunOp::NextEpisode).await?;
        expect!(reply, RunReply::Lease { token, episode, version } => (token, episode, version))
    }

    pub(crate) async fn renew(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
    ) -> Result<(bool, u64), StoreError> {
        let reply = self.run((thread, run, token), RunOp::Renew).await?;
        expect!(reply, RunReply::Renewed { cancel_requested, version } => (cancel_requested, version))
    }

    /// Appends a run's messages; `metadata`, when given, replaces the
    /// run's metadata in the same commit (SPEC K5).
    pub(crate) async fn append(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        messages: Vec<NewMessage>,
        step: Option<u32>,
        metadata: Option<Value>,
    ) -> Result<Appended, StoreError> {
        let op = RunOp::Append {
            messages,
            step,
            metadata,
        };
        expect!(self.run((thread, run, token), op).await?, RunReply::Appended(x) => x)
    }

    /// The step's anchor and the thread's incarnation; takes a pending steer.
    pub(crate) async fn take_anchor(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
    ) -> Result<(u64, u64), StoreError> {
        let reply = self.run((thread, run, token), RunOp::TakeAnchor).await?;
        expect!(reply, RunReply::Anchor { last_seq, incarnation } => (last_seq, incarnation))
    }

    pub(crate) async fn take_steer(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
    ) -> Result<(), StoreError> {
        let reply = self.run((thread, run, token), RunOp::TakeSteer).await?;
        expect!(reply, RunReply::SteerTaken => ())
    }

    pub(crate) async fn run_messages(
        &self,
        fence: Fence<'_>,
        all: bool,
    ) -> Result<(Vec<Message>, Option<u64>), StoreError> {
        let reply = self.run(fence, RunOp::RunMessages { all }).await?;
        expect!(reply, RunReply::RunMessages { messages, latest } => (messages, latest))
    }

    pub(crate) async fn set_run_metadata(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        value: Value,
    ) -> Result<u64, StoreError> {
        let op = RunOp::SetRunMetadata { value };
        expect!(self.run((thread, run, token), op).await?, RunReply::MetadataSet { version } => version)
    }

    /// Makes a running step's calls answerable (T9); the thread's version.
    pub(crate) async fn await_calls(
        &self,
        fence: Fence<'_>,
        calls: Vec<WaitingCall>,
    ) -> Result<u64, StoreError> {
        let reply = self.run(fence, RunOp::Await { calls }).await?;
        expect!(reply, RunReply::Awaited { version } => version)
    }

    /// The calls waited on and the thread's version; `None`: refused, a
    /// cancel came first.
    pub(crate) async fn wait(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        calls: Vec<WaitingCall>,
    ) -> Result<Option<(Vec<WaitingCall>, u64)>, StoreError> {
        let reply = self
            .run((thread, run, token), RunOp::Wait { calls })
            .await?;
        expect!(reply, RunReply::Waited(x) => x)
    }

    /// Gives the run's answerable calls up (A3, T8): the calls, with the
    /// answers the store took before it stopped taking them.
    pub(crate) async fn close_calls(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
    ) -> Result<Vec<WaitingCall>, StoreError> {
        let reply = self.run((thread, run, token), RunOp::CloseCalls).await?;
        expect!(reply, RunReply::Closed(x) => x)
    }

    pub(crate) async fn commit_resumed(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        messages: Vec<NewMessage>,
        metadata: Option<Value>,
    ) -> Result<Appended, StoreError> {
        let op = RunOp::CommitResumed { messages, metadata };
        expect!(self.run((thread, run, token), op).await?, RunReply::Appended(x) => x)
    }

    /// How a finish went: stored (with the run a leftover steer started,
    /// and its trigger), or it needs a run id, or a cancel came first.
    pub(crate) async fn finish(
        &self,
        thread: &str,
        run: &str,
        token: FencingToken,
        end: &RunEnd,
        next_run: Option<RunId>,
    ) -> Result<Finish, StoreError> {
        let op = RunOp::Finish {
            end: end.clone(),
            next_run,
        };
        expect!(self.run((thread, run, token), op).await?, RunReply::Finished(x) => x)
    }
}

/// Reads without a token: a run's, and fenced history reads (SPEC M3).
impl StoreHandle {
    pub(crate) async fn has_steer(
        &self,
        thread: &str,
        run: &str,
        before: Option<u64>,
    ) -> Result<bool, StoreError> {
        let op = ReadOp::HasSteer {
            run: run.into(),
            before,
        };
        expect!(self.read(thread, op).await?, ReadReply::HasSteer(x) => x)
    }

    pub(crate) async fn run_metadata(
        &self,
        thread: &str,
        run: &str,
    ) -> Result<Option<Value>, StoreError> {
        let op = ReadOp::RunMetadata { run: run.into() };
        expect!(self.read(thread, op).await?, ReadReply::RunMetadata(x) => x)
    }

    pub(crate) async fn waiting_calls(
        &self,
        thread: &str,
        run: &str,
    ) -> Result<Vec<WaitingCall>, StoreError> {
        let op = ReadOp::WaitingCalls { run: run.into() };
        expect!(self.read(thread, op).await?, ReadReply::WaitingCalls(x) => x)
    }

    pub(crate) async fn history_messages(
        &self,
        fence: (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<Vec<Message>, StoreError> {
        expect!(self.history(fence, read).await?, ReadReply::Messages(x) => x)
    }

    /// The visible messages a reader holding `cached` lacks, up to
    /// `anchor`: the history epoch, whether they are all of them, and the
    /// messages.
    pub(crate) async fn history_visible(
        &self,
        fence: (&str, &str, u64),
        anchor: u64,
        cached: Option<CachedThrough>,
    ) -> Result<(u64, bool, Vec<Message>), StoreError> {
        let reply = self
            .history(fence, HistoryRead::VisibleAfter { anchor, cached })
            .await?;
        expect!(reply, ReadReply::Visible { epoch, whole, messages } => (epoch, whole, messages))
    }

    pub(crate) async fn history_map(
        &self,
        fence: (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<Map<String, Value>, StoreError> {
        expect!(self.history(fence, read).await?, ReadReply::Metadata(x) => x)
    }

    async fn history(
        &self,
        (thread, agent, incarnation): (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<ReadReply, StoreError> {
        let op = ReadOp::History {
            agent: agent.into(),
            incarnation,
            read,
        };
        self.read(thread, op).await
    }
}

/// The thread facade's transactions (SPEC H2, H3, H5, K4, R1).
impl StoreHandle {
    pub(crate) async fn mutate(
        &self,
        thread: &str,
        incarnation: u64,
        writer: &Writer,
        expect: Expect,
        writes: Vec<Write>,
    ) -> Result<Result<Mutation, Refusal>, StoreError> {
        let op = FacadeOp::Mutate {
            incarnation: Some(incarnation),
            writer: writer.clone(),
            expect,
            writes,
        };
        expect!(self.facade(thread, op).await?, FacadeReply::Mutated(x) => x)
    }

    pub(crate) async fn regenerate(
        &self,
        thread: &str,
        incarnation: u64,
        from: &str,
        new_run: RunId,
        expect: Expect,
        writes: Vec<Write>,
    ) -> Result<Result<Regeneration, Refusal>, StoreError> {
        let op = FacadeOp::Regenerate {
            incarnation: Some(incarnation),
            from: from.into(),
            new_run,
            expect,
            writes,
        };
        expect!(self.facade(thread, op).await?, FacadeReply::Regenerated(x) => x)
    }
}
