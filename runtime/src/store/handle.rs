//! The typed calls the runtime makes on its store: each builds one
//! request and takes its answer apart; an answer of the wrong shape is a
//! protocol error.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::memory::MemoryStore;
use super::mutation::{Deletion, Expect, Mutation, Refusal, Regeneration, Write, Writer};
use super::protocol::Store;
use super::protocol::{CachedThrough, HistoryRead, StoreReply, StoreRequest};
use super::record::{
    Answered, Appended, CancelMiss, CancelReached, Claimed, RunEnd, StoreError, StoredThread,
    Submitted,
};
use super::waiting::{Answer, AnswerMiss, WaitingCall};
use crate::clock::Millis;
use crate::message::Message;

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

impl StoreHandle {
    pub(crate) fn new(store: Arc<dyn Store>) -> StoreHandle {
        StoreHandle(store)
    }

    async fn ask(&self, request: StoreRequest) -> Result<StoreReply, StoreError> {
        self.0.call(request).await
    }

    /// `None`: a steer found no current run and needs a run id.
    pub(crate) async fn submit(
        &self,
        s: &Scope<'_>,
        message: Message,
        steer: bool,
        new_run: Option<String>,
    ) -> Result<Option<Submitted>, StoreError> {
        let reply = self
            .ask(StoreRequest::Submit {
                thread: s.thread.into(),
                agent: s.agent.into(),
                owner: s.owner.into(),
                message,
                steer,
                new_run,
            })
            .await?;
        match reply {
            StoreReply::NeedRunId => Ok(None),
            other => expect!(other, StoreReply::Submitted(x) => Some(x)),
        }
    }

    pub(crate) async fn open(&self, s: &Scope<'_>) -> Result<(), StoreError> {
        let reply = self
            .ask(StoreRequest::Open {
                thread: s.thread.into(),
                agent: s.agent.into(),
                owner: s.owner.into(),
            })
            .await?;
        expect!(reply, StoreReply::Done => ())
    }

    pub(crate) async fn cancel(
        &self,
        s: &Scope<'_>,
        run: Option<&str>,
    ) -> Result<Result<CancelReached, CancelMiss>, StoreError> {
        let reply = self
            .ask(StoreRequest::Cancel {
                thread: s.thread.into(),
                agent: s.agent.into(),
                owner: s.owner.into(),
                run: run.map(str::to_string),
            })
            .await?;
        expect!(reply, StoreReply::Cancelled(x) => x)
    }

    pub(crate) async fn answer(
        &self,
        s: &Scope<'_>,
        call_id: &str,
        answer: Answer,
    ) -> Result<Result<Answered, AnswerMiss>, StoreError> {
        let reply = self
            .ask(StoreRequest::Answer {
                thread: s.thread.into(),
                agent: s.agent.into(),
                owner: s.owner.into(),
                call_id: call_id.into(),
                answer,
            })
            .await?;
        expect!(reply, StoreReply::Answered(x) => x)
    }

    pub(crate) async fn inspect(&self, thread: &str) -> Result<Option<StoredThread>, StoreError> {
        let reply = self
            .ask(StoreRequest::Inspect {
                thread: thread.into(),
            })
            .await?;
        expect!(reply, StoreReply::Thread(x) => x)
    }

    pub(crate) async fn ids(&self) -> Result<Vec<String>, StoreError> {
        let reply = self.ask(StoreRequest::ThreadIds).await?;
        expect!(reply, StoreReply::Ids(x) => x)
    }

    pub(crate) async fn claim(
        &self,
        thread: Option<&str>,
        worker: &str,
        ttl: Option<Millis>,
    ) -> Result<Option<Claimed>, StoreError> {
        let reply = self
            .ask(StoreRequest::Claim {
                thread: thread.map(str::to_string),
                worker: worker.into(),
                ttl,
            })
            .await?;
        expect!(reply, StoreReply::Claimed(x) => x)
    }

    pub(crate) async fn next_episode(
        &self,
        thread: &str,
        run: &str,
        token: u64,
    ) -> Result<(u64, u32, u64), StoreError> {
        let reply = self
            .ask(StoreRequest::NextEpisode {
                thread: thread.into(),
                run: run.into(),
                token,
            })
            .await?;
        expect!(reply, StoreReply::Lease { token, episode, version } => (token, episode, version))
    }

    pub(crate) async fn renew(
        &self,
        thread: &str,
        run: &str,
        token: u64,
    ) -> Result<(bool, u64), StoreError> {
        let reply = self
            .ask(StoreRequest::Renew {
                thread: thread.into(),
                run: run.into(),
                token,
            })
            .await?;
        expect!(reply, StoreReply::Renewed { cancel_requested, version } => (cancel_requested, version))
    }

    pub(crate) async fn append(
        &self,
        thread: &str,
        run: &str,
        token: u64,
        messages: Vec<Message>,
        step: Option<u32>,
    ) -> Result<Appended, StoreError> {
        let reply = self
            .ask(StoreRequest::Append {
                thread: thread.into(),
                run: run.into(),
                token,
                messages,
                step,
            })
            .await?;
        expect!(reply, StoreReply::Appended(x) => x)
    }

    /// The step's anchor and the thread's incarnation; takes a pending steer.
    pub(crate) async fn take_anchor(
        &self,
        thread: &str,
        run: &str,
        token: u64,
    ) -> Result<(u64, u64), StoreError> {
        let reply = self
            .ask(StoreRequest::TakeAnchor {
                thread: thread.into(),
                run: run.into(),
                token,
            })
            .await?;
        expect!(reply, StoreReply::Anchor { last_seq, incarnation } => (last_seq, incarnation))
    }

    pub(crate) async fn has_steer(&self, thread: &str, run: &str) -> Result<bool, StoreError> {
        let reply = self
            .ask(StoreRequest::HasSteer {
                thread: thread.into(),
                run: run.into(),
            })
            .await?;
        expect!(reply, StoreReply::Flag(x) => x)
    }

    pub(crate) async fn take_steer(
        &self,
        thread: &str,
        run: &str,
        token: u64,
    ) -> Result<(), StoreError> {
        let reply = self
            .ask(StoreRequest::TakeSteer {
                thread: thread.into(),
                run: run.into(),
                token,
            })
            .await?;
        expect!(reply, StoreReply::Done => ())
    }

    pub(crate) async fn run_messages(
        &self,
        (thread, run, token): (&str, &str, u64),
        all: bool,
    ) -> Result<(Vec<Message>, Option<u64>), StoreError> {
        let reply = self
            .ask(StoreRequest::RunMessages {
                thread: thread.into(),
                run: run.into(),
                token,
                all,
            })
            .await?;
        expect!(reply, StoreReply::RunMessages { messages, latest } => (messages, latest))
    }

    pub(crate) async fn history_messages(
        &self,
        fence: (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<Vec<Message>, StoreError> {
        let reply = self.history(fence, read).await?;
        expect!(reply, StoreReply::Messages(x) => x)
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
        expect!(reply, StoreReply::Visible { epoch, whole, messages } => (epoch, whole, messages))
    }

    pub(crate) async fn history_map(
        &self,
        fence: (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<Map<String, Value>, StoreError> {
        let reply = self.history(fence, read).await?;
        expect!(reply, StoreReply::Map(x) => x)
    }

    async fn history(
        &self,
        (thread, agent, incarnation): (&str, &str, u64),
        read: HistoryRead,
    ) -> Result<StoreReply, StoreError> {
        self.ask(StoreRequest::History {
            thread: thread.into(),
            agent: agent.into(),
            incarnation,
            read,
        })
        .await
    }

    pub(crate) async fn run_metadata(
        &self,
        thread: &str,
        run: &str,
    ) -> Result<Option<Value>, StoreError> {
        let reply = self
            .ask(StoreRequest::RunMetadata {
                thread: thread.into(),
                run: run.into(),
            })
            .await?;
        expect!(reply, StoreReply::Value(x) => x)
    }

    pub(crate) async fn set_run_metadata(
        &self,
        thread: &str,
        run: &str,
        token: u64,
        value: Value,
    ) -> Result<u64, StoreError> {
        let reply = self
            .ask(StoreRequest::SetRunMetadata {
                thread: thread.into(),
                run: run.into(),
                token,
                value,
            })
            .await?;
        expect!(reply, StoreReply::Version(x) => x)
    }

    /// Makes a running step's calls answerable (T9); the thread's version.
    pub(crate) async fn await_calls(
        &self,
        (thread, run, token): (&str, &str, u64),
        calls: Vec<WaitingCall>,
    ) -> Result<u64, StoreError> {
        let reply = self
            .ask(StoreRequest::Await {
                thread: thread.into(),
                run: run.into(),
                token,
                calls,
            })
            .await?;
        expect!(reply, StoreReply::Version(x) => x)
    }

    /// The calls waited on and the thread's version; `None`: refused, a
    /// cancel came first.
    pub(crate) async fn wait(
        &self,
        thread: &str,
        run: &str,
        token: u64,
        calls: Vec<WaitingCall>,
    ) -> Result<Option<(Vec<WaitingCall>, u64)>, StoreError> {
        let reply = self
            .ask(StoreRequest::Wait {
                thread: thread.into(),
                run: run.into(),
                token,
                calls,
            })
            .await?;
        expect!(reply, StoreReply::Waited(x) => x)
    }

    pub(crate) async fn waiting_calls(
        &self,
        thread: &str,
        run: &str,
    ) -> Result<Vec<WaitingCall>, StoreError> {
        let reply = self
            .ask(StoreRequest::WaitingCalls {
                thread: thread.into(),
                run: run.into(),
            })
            .await?;
        expect!(reply, StoreReply::Calls(x) => x)
    }

    /// Gives the run's answerable calls up (A3, T8): the calls, with the
    /// answers the store took before it stopped taking them.
    pub(crate) async fn close_calls(
        &self,
        thread: &str,
        run: &str,
        token: u64,
    ) -> Result<Vec<WaitingCall>, StoreError> {
        let reply = self
            .ask(StoreRequest::CloseCalls {
                thread: thread.into(),
                run: run.into(),
                token,
            })
            .await?;
        expect!(reply, StoreReply::Calls(x) => x)
    }

    pub(crate) async fn commit_resumed(
        &self,
        thread: &str,
        run: &str,
        token: u64,
        messages: Vec<Message>,
    ) -> Result<Appended, StoreError> {
        let reply = self
            .ask(StoreRequest::CommitResumed {
                thread: thread.into(),
                run: run.into(),
                token,
                messages,
            })
            .await?;
        expect!(reply, StoreReply::Appended(x) => x)
    }

    /// How a finish went: stored (with the run a leftover steer started,
    /// and its trigger), or it needs a run id, or a cancel came first.
    pub(crate) async fn finish(
        &self,
        thread: &str,
        run: &str,
        token: Option<u64>,
        end: &RunEnd,
        next_run: Option<String>,
    ) -> Result<Finish, StoreError> {
        let reply = self
            .ask(StoreRequest::Finish {
                thread: thread.into(),
                run: run.into(),
                token,
                end: end.clone(),
                next_run,
            })
            .await?;
        match reply {
            StoreReply::NeedRunId => Ok(Finish::NeedRunId),
            StoreReply::CancelFirst => Ok(Finish::CancelFirst),
            other => {
                expect!(other, StoreReply::Finished { admitted, version } => Finish::Stored { admitted, version })
            }
        }
    }
}

/// How a finish went.
#[derive(Debug)]
pub(crate) enum Finish {
    /// Stored at `version`; the run a leftover steer started, with its
    /// trigger, if any.
    Stored {
        admitted: Option<(String, String)>,
        version: u64,
    },
    /// A steer is left over: ask again with a run id for it.
    NeedRunId,
    /// A cancel reached the run first: it must end cancelled (K6).
    CancelFirst,
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
        let reply = self
            .ask(StoreRequest::Mutate {
                thread: thread.into(),
                incarnation: Some(incarnation),
                writer: writer.clone(),
                expect,
                writes,
            })
            .await?;
        expect!(reply, StoreReply::Mutated(x) => x)
    }

    pub(crate) async fn regenerate(
        &self,
        thread: &str,
        incarnation: u64,
        from: &str,
        new_run: String,
        expect: Expect,
        writes: Vec<Write>,
    ) -> Result<Result<Regeneration, Refusal>, StoreError> {
        let reply = self
            .ask(StoreRequest::Regenerate {
                thread: thread.into(),
                incarnation: Some(incarnation),
                from: from.into(),
                new_run,
                expect,
                writes,
            })
            .await?;
        expect!(reply, StoreReply::Regenerated(x) => x)
    }

    pub(crate) async fn delete(&self, thread: &str) -> Result<Option<Deletion>, StoreError> {
        let reply = self
            .ask(StoreRequest::Delete {
                thread: thread.into(),
            })
            .await?;
        expect!(reply, StoreReply::Deleted(x) => x)
    }
}
