//! One thread's durable record (messages, versions, runs, the queue, the
//! lease). It keeps its own invariants through methods; nothing outside
//! this file writes its fields.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::record::{
    Answered, Appended, CancelMiss, CancelReached, CancelTarget, HandOver, RunEnd, RunRecord,
    RunStatus, StoreError, StoredThread,
};
use super::waiting::{self, Answer, AnswerMiss, WaitingCall};
use crate::id::RunId;
use crate::message::{Message, NewMessage, Outcome, Role};

#[path = "context_order.rs"]
mod context_order;
#[path = "lease.rs"]
mod lease;
#[path = "thread_ops.rs"]
mod thread_ops;

use lease::Lease;

/// One thread's durable record. A database store keeps the messages in
/// rows of their own and everything else as this record's JSON ("the
/// head"): `messages` and `clean` are not part of it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ThreadRec {
    agent: String,
    owner: String,
    incarnation: u64,
    version: u64,
    next_seq: u64,
    #[serde(skip)]
    messages: Vec<Message>,
    /// How many leading messages are unchanged since the record was loaded
    /// or last persisted: a database store rewrites only the rest.
    #[serde(skip)]
    clean: usize,
    /// Bumped whenever the stored messages change other than by an append:
    /// in place, removed, entering or leaving a queued run, or entering
    /// the context at another place than their own (M1). A reader that
    /// holds the visible messages through some sequence number under one
    /// epoch can extend them by the appends alone (SPEC M1; the runtime's
    /// per-run context cache).
    #[serde(default)]
    epoch: u64,
    metadata: Map<String, Value>,
    private_metadata: Map<String, Value>,
    runs: Vec<RunRecord>,
    /// Runs waiting for their turn, in arrival order (SPEC K1).
    queue: VecDeque<String>,
    /// Messages stored but not yet in any run's context (SPEC K1, M1), by
    /// id: the run whose claim lets each in. A queued run's trigger waits
    /// for its run; a steer left over when its run ended, for the run it
    /// starts; the message of a run cancelled while queued stays here
    /// until a run admitted after it is claimed.
    #[serde(default)]
    hidden: BTreeMap<String, String>,
    /// Messages that entered the context later than they were stored (M1):
    /// by sequence number, the sequence number they entered after and the
    /// entry's mark (entries after one message are read in mark order).
    #[serde(default)]
    entered: BTreeMap<u64, (u64, u64)>,
    /// The run being driven now, from its start to its end.
    current: Option<String>,
    lease: Lease,
    /// Steering messages of the current run not yet taken by a step or
    /// its `prepare_run`, oldest first (SPEC A4, L1).
    #[serde(default)]
    steers: Vec<String>,
    /// The incarnation was deleted and no new one created yet (SPEC H5).
    deleted: bool,
    /// Runs of incarnations that were deleted: their writes are refused.
    retired: BTreeMap<String, u64>,
}

/// A record's version and next sequence number, taken before a request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommitMark {
    version: u64,
    next_seq: u64,
}

impl ThreadRec {
    pub(super) fn new(agent: &str, owner: &str) -> ThreadRec {
        ThreadRec {
            agent: agent.to_string(),
            owner: owner.to_string(),
            incarnation: 1,
            version: 0,
            next_seq: 1,
            messages: Vec::new(),
            clean: 0,
            epoch: 0,
            metadata: Map::new(),
            private_metadata: Map::new(),
            runs: Vec::new(),
            queue: VecDeque::new(),
            hidden: BTreeMap::new(),
            entered: BTreeMap::new(),
            current: None,
            lease: Lease::default(),
            steers: Vec::new(),
            deleted: false,
            retired: BTreeMap::new(),
        }
    }

    /// Whether `owner` acting for `agent` may reach this thread (SPEC H4).
    pub(crate) fn check_scope(&self, id: &str, owner: &str, agent: &str) -> Result<(), StoreError> {
        if self.owner != owner || self.agent != agent {
            return Err(StoreError::Forbidden { thread: id.into() });
        }
        Ok(())
    }

    /// Appends messages in one commit: sequence numbers assigned, version bumped
    /// once (SPEC H1). A run's append is fenced by the engine first (K2).
    pub(crate) fn append(&mut self, messages: impl IntoIterator<Item = NewMessage>) -> Appended {
        let first_seq = self.next_seq;
        for m in messages {
            self.messages.push(m.stored(self.next_seq));
            self.next_seq += 1;
        }
        self.version += 1;
        Appended {
            version: self.version,
            first_seq,
            cancel_requested: false,
        }
    }

    /// The version and next sequence number before a request: what
    /// [`ThreadRec::debug_check_commit`] compares the record with after it.
    pub(crate) fn commit_mark(&self) -> CommitMark {
        CommitMark {
            version: self.version,
            next_seq: self.next_seq,
        }
    }

    /// Post-conditions of one request (SPEC H1), checked in debug builds:
    /// it is at most one commit (the version goes up by 0 or exactly 1,
    /// and by 1 when it stored a message), and the messages it appended
    /// carry the consecutive sequence numbers from the mark's on, in order.
    /// Cheap: it reads only the newly appended tail.
    pub(crate) fn debug_check_commit(&self, mark: CommitMark) {
        if !cfg!(debug_assertions) {
            return;
        }
        let grew = self.version.wrapping_sub(mark.version);
        debug_assert!(grew <= 1, "one request, {grew} commits (H1)");
        debug_assert!(self.next_seq >= mark.next_seq, "sequence numbers reused");
        let appended = (self.next_seq - mark.next_seq) as usize;
        debug_assert!(
            appended == 0 || grew == 1,
            "messages stored without a commit"
        );
        debug_assert!(appended <= self.messages.len(), "appended messages missing");
        let tail = &self.messages[self.messages.len().saturating_sub(appended)..];
        for (k, m) in tail.iter().enumerate() {
            debug_assert_eq!(m.seq, mark.next_seq + k as u64, "seqs not consecutive");
        }
        let before = self.messages.len() - tail.len();
        if before > 0 {
            debug_assert!(self.messages[before - 1].seq < mark.next_seq, "seq order");
        }
    }

    /// Writes `run`'s metadata (fenced by the engine first, K2): one commit (H1).
    pub(crate) fn set_run_metadata(&mut self, run: &str, value: Value) -> u64 {
        self.put_run_metadata(run, Some(value));
        self.version += 1;
        self.version
    }

    /// Replaces `run`'s metadata when `value` is given: part of the commit
    /// of the results hooks wrote it about (SPEC K5), not a commit by
    /// itself.
    pub(crate) fn put_run_metadata(&mut self, run: &str, value: Option<Value>) {
        if let (Some(value), Some(r)) = (value, self.run_mut(run)) {
            r.metadata = Some(value);
        }
    }

    /// `run`'s metadata as stored.
    pub(crate) fn run_metadata(&self, run: &str) -> Option<&Value> {
        self.runs
            .iter()
            .find(|r| r.id == run)
            .and_then(|r| r.metadata.as_ref())
    }

    /// Makes `calls` of `run`'s step answerable while the run still works
    /// (SPEC T9): one commit (H1). The run stays running.
    pub(crate) fn await_calls(&mut self, run: &str, calls: Vec<WaitingCall>) -> u64 {
        if let Some(r) = self.run_mut(run) {
            // Calls registered again (a takeover's orphans) keep their answers.
            r.waiting = waiting::keep_answers(std::mem::take(&mut r.waiting), calls);
            r.calls_closed = false;
        }
        self.version += 1;
        self.version
    }

    /// Puts `run` to wait on `calls` (T7): its episode ends and it releases
    /// the lease, but it stays the current run (T9); answers recorded
    /// while the run still worked are kept. One commit (H1): the thread's
    /// new version. Refused (`None`, nothing changed) when a cancel was
    /// requested: the run must end.
    pub(crate) fn wait(&mut self, run: &str, calls: Vec<WaitingCall>) -> Option<u64> {
        let r = self.run_mut(run)?;
        if r.cancel_requested {
            return None;
        }
        r.status = RunStatus::Waiting;
        r.waiting = waiting::keep_answers(std::mem::take(&mut r.waiting), calls);
        r.calls_closed = false;
        r.handed_over_by(HandOver::Wait);
        self.release_lease(run);
        self.version += 1;
        Some(self.version)
    }

    /// Records a client's answer to an answerable call of the current run
    /// (T9: from the moment its step's `before_tool_call`s let it through,
    /// until a cancel is asked for), one commit (H1): the run's id, whether
    /// it can resume now, and the thread's new version.
    pub(crate) fn answer(&mut self, call_id: &str, given: Answer) -> Result<Answered, AnswerMiss> {
        let current = self.current.clone().ok_or(AnswerMiss::NotWaiting)?;
        let r = self.run_mut(&current).ok_or(AnswerMiss::NotWaiting)?;
        // A run asked to cancel gives its open calls up (T8): an answer
        // then would be recorded but never honoured.
        if !matches!(r.status, RunStatus::Waiting | RunStatus::Running)
            || r.cancel_requested
            || r.calls_closed
        {
            return Err(AnswerMiss::NotWaiting);
        }
        waiting::answer(&mut r.waiting, call_id, given)?;
        let ready = r.resumable();
        self.version += 1;
        Ok(Answered {
            run: current.into(),
            ready,
            version: self.version,
        })
    }

    /// `run` gives its answerable calls up (A3, T8): the store takes no
    /// more answers for them; the calls come back with the answers taken
    /// so far. Fenced by the engine first; no commit.
    pub(crate) fn close_calls(&mut self, run: &str) -> Vec<WaitingCall> {
        match self.run_mut(run) {
            Some(r) => {
                r.calls_closed = true;
                r.waiting.clone()
            }
            None => Vec::new(),
        }
    }

    /// The waiting calls `run` resumes with.
    pub(crate) fn waiting_calls(&self, run: &str) -> Vec<WaitingCall> {
        self.runs
            .iter()
            .find(|r| r.id == run)
            .map(|r| r.waiting.clone())
            .unwrap_or_default()
    }

    /// Appends a resumed run's results and forgets its waiting calls, in
    /// one commit (T9, K5: a call with a committed result never runs again).
    pub(crate) fn commit_resumed(
        &mut self,
        run: &str,
        messages: Vec<NewMessage>,
        metadata: Option<Value>,
    ) -> Appended {
        let appended = self.append(messages);
        self.put_run_metadata(run, metadata);
        if let Some(r) = self.run_mut(run) {
            r.waiting.clear();
        }
        appended
    }

    /// Queues a new run, started by message `trigger`, behind the others
    /// (SPEC K1); the trigger enters a context only when the run is claimed.
    pub(crate) fn admit(&mut self, run: &str, trigger: &str) {
        self.epoch += 1;
        self.hidden.insert(trigger.to_string(), run.to_string());
        self.runs.push(RunRecord::queued(run, trigger));
        self.queue.push_back(run.to_string());
    }

    /// The run a cancel reaches (SPEC K6): the named run, or else the current
    /// run, or else the oldest queued run. A queued run is cancelled here, at
    /// once: it never starts. One commit (H1).
    pub(crate) fn cancel(&mut self, run: Option<&str>) -> Result<CancelReached, CancelMiss> {
        let target = self.cancel_target(run)?;
        self.version += 1;
        Ok(CancelReached {
            target,
            version: self.version,
        })
    }

    fn cancel_target(&mut self, run: Option<&str>) -> Result<CancelTarget, CancelMiss> {
        let target = match run {
            Some(r) => r.to_string(),
            None => self
                .current
                .clone()
                .or_else(|| self.queue.front().cloned())
                .ok_or(CancelMiss::NoRun)?,
        };
        if self.current.as_deref() == Some(target.as_str()) {
            let r = self
                .run_mut(&target)
                .ok_or(CancelMiss::Unknown(target.clone().into()))?;
            r.cancel_requested = true;
            return Ok(match r.status {
                RunStatus::Waiting => CancelTarget::Waiting(target.into()),
                _ => CancelTarget::Active(target.into()),
            });
        }
        if let Some(k) = self.queue.iter().position(|q| *q == target) {
            // Its messages stay out of every context until a run admitted
            // after it is claimed (M1).
            self.queue.remove(k);
            let end = RunEnd {
                status: RunStatus::Cancelled,
                outcome: Outcome::Cancelled,
                reason: Some("cancelled while queued".to_string()),
            };
            self.finish_run(&target, &end);
            return Ok(CancelTarget::Queued(target.into()));
        }
        match self.runs.iter().any(|r| r.id == target) {
            true => Err(CancelMiss::Ended(target.into())),
            false => Err(CancelMiss::Unknown(target.into())),
        }
    }

    /// The run being driven now, if any.
    pub(crate) fn current_run(&self) -> Option<&str> {
        self.current.as_deref()
    }

    /// The newest user message that belongs to `run` (SPEC L1): the one that
    /// started it, or a steer stored for it. Never one of a run queued behind.
    pub(crate) fn latest_user_of(&self, run: &str) -> Option<&Message> {
        let trigger = self
            .runs
            .iter()
            .find(|r| r.id == run)
            .map(|r| r.trigger.as_str());
        self.messages.iter().rev().find(|m| {
            m.role == Role::User
                && (m.pai.run_id.as_deref() == Some(run) || Some(m.id.as_str()) == trigger)
        })
    }

    /// How many model steps `run` has committed: its next step's number.
    #[cfg(test)]
    pub(crate) fn steps(&self, run: &str) -> u32 {
        self.runs
            .iter()
            .find(|r| r.id == run)
            .map_or(0, |r| r.steps)
    }

    /// How many episodes `run` has begun.
    #[cfg(test)]
    pub(crate) fn episodes(&self, run: &str) -> u32 {
        self.runs
            .iter()
            .find(|r| r.id == run)
            .map_or(0, |r| r.episodes)
    }

    /// Records a steering message for the current run's next step (SPEC A4).
    pub(crate) fn steer(&mut self, message: &str) {
        self.steers.push(message.to_string());
    }

    /// The current run takes every pending steering message (a step, or
    /// its `prepare_run`, L1): each enters the context after every message
    /// stored so far (M1) and belongs to the run for good.
    pub(crate) fn take_steers(&mut self) {
        let steers = std::mem::take(&mut self.steers);
        if !steers.is_empty() {
            self.enter_now(&steers);
        }
    }

    /// `run`'s last committed step handed over to a steering message (A4):
    /// the step's transition took every pending steer. Recorded, so a
    /// worker taking the run over goes on with it (K3). Not a commit.
    pub(crate) fn steer_taken(&mut self, run: &str) {
        self.take_steers();
        if let Some(r) = self.run_mut(run) {
            r.handed_over_by(HandOver::Steer);
        }
    }

    /// Whether a steering message waits for the next step; with `before`,
    /// one stored below that sequence number.
    pub(crate) fn has_steer(&self, before: Option<u64>) -> bool {
        match before {
            None => !self.steers.is_empty(),
            Some(bound) => self.steers.iter().any(|id| {
                self.messages
                    .iter()
                    .any(|m| m.id.as_str() == id && m.seq < bound)
            }),
        }
    }

    /// The run's end left steering messages no step took (A4): `next`
    /// starts from the newest; all of them enter its context when it is
    /// claimed. `None` when there were none.
    pub(crate) fn admit_leftover_steers(&mut self, next: &str) -> Option<String> {
        let steers = std::mem::take(&mut self.steers);
        let trigger = steers.last()?.clone();
        for id in &steers[..steers.len() - 1] {
            self.hidden.insert(id.clone(), next.to_string());
        }
        self.admit(next, &trigger);
        Some(trigger)
    }

    /// Counts one committed model step of `run`.
    pub(crate) fn step_committed(&mut self, run: &str) {
        if let Some(r) = self.run_mut(run) {
            r.steps += 1;
        }
    }

    /// Whether a cancel reached `run` (K6).
    pub(crate) fn cancel_requested(&self, run: &str) -> bool {
        self.runs.iter().any(|r| r.id == run && r.cancel_requested)
    }

    /// Records how `run` ended; it is no longer current and holds no lease.
    /// Not a commit by itself: its callers bump the version once.
    pub(crate) fn finish_run(&mut self, run: &str, end: &RunEnd) {
        self.release_lease(run);
        if let Some(r) = self.run_mut(run) {
            r.status = end.status;
            r.outcome = Some(end.outcome);
            r.reason.clone_from(&end.reason);
            // An ended run waits on nothing, answered or not.
            r.waiting.clear();
        }
        if self.current.as_deref() == Some(run) {
            self.current = None;
        }
    }

    /// Records how `run` ended: one commit (H1), the thread's new version.
    pub(crate) fn end_run(&mut self, run: &str, end: &RunEnd) -> u64 {
        self.finish_run(run, end);
        self.version += 1;
        self.version
    }

    fn run_mut(&mut self, id: &str) -> Option<&mut RunRecord> {
        self.runs.iter_mut().find(|r| r.id == id)
    }

    /// The newest sequence number stored: a step's anchor (SPEC M1).
    pub(crate) fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// The history epoch (see the field).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnation
    }

    pub(crate) fn agent(&self) -> &str {
        &self.agent
    }

    #[cfg(test)]
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    #[cfg(test)]
    pub(crate) fn runs(&self) -> &[RunRecord] {
        &self.runs
    }

    pub(crate) fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }

    pub(crate) fn private_metadata(&self) -> &Map<String, Value> {
        &self.private_metadata
    }

    /// A record read back from a database store: its head and its messages.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn from_parts(head: &str, messages: Vec<Message>) -> serde_json::Result<ThreadRec> {
        let mut rec: ThreadRec = serde_json::from_str(head)?;
        rec.clean = messages.len();
        rec.messages = messages;
        Ok(rec)
    }

    /// The record without its messages, as JSON.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn head(&self) -> serde_json::Result<String> {
        serde_json::to_string(self)
    }

    /// The messages that changed since the record was loaded or persisted:
    /// every stored message from position `from` on must be replaced by
    /// the returned ones.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn changed_messages(&self) -> (usize, &[Message]) {
        let from = self.clean.min(self.messages.len());
        (from, &self.messages[from..])
    }

    /// The store has persisted every message.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn persisted(&mut self) {
        self.clean = self.messages.len();
    }

    /// Messages from position `at` on changed in place or went away.
    pub(in crate::store) fn touch_messages(&mut self, at: usize) {
        self.clean = self.clean.min(at);
        self.epoch += 1;
    }

    /// Whether an unscoped claim could find a run here (a current run to
    /// resume or take over, or a queued one): a database store's index.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
    pub(crate) fn may_claim(&self) -> bool {
        !self.deleted && (self.current.is_some() || !self.queue.is_empty())
    }

    /// The whole thread, as trusted server code sees it.
    pub(crate) fn to_stored(&self, id: &str) -> StoredThread {
        StoredThread {
            id: id.into(),
            agent: self.agent.clone(),
            owner: self.owner.clone(),
            incarnation: self.incarnation,
            version: self.version,
            messages: self.messages.clone(),
            metadata: self.metadata.clone(),
            private_metadata: self.private_metadata.clone(),
            runs: self.runs.clone(),
            lease_holder: self.lease.holder.clone().map(RunId::from),
            lease_token: self.lease.token,
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
