//! The store host: the durable store every worker shares (it survives
//! worker crashes; the store itself is never crashed), answering each
//! request as one transaction on its own clock, and logging what bears on
//! leases. Two planted bugs (SPEC D5) let violation scenarios prove the
//! lease oracles fire.

use std::sync::Arc;

use pai_runtime::store::FencingToken;
use pai_runtime::{
    Clock, StoreError,
    store::{
        AdminOp, AdminReply, CancelTarget, ClientOp, ClientReply, FacadeOp, FacadeReply, Finish,
        Op, ReadOp, RunOp, RunReply, RunStatus, StoreReply, StoreRequest, StoredThread, Write,
        Writer,
    },
};

use super::feed::{Feeds, Note};
use super::triggers::{Arrival, Triggers};
use crate::report::SimError;
use crate::scenario::StoreBugs;
use crate::world::{
    ClientWrite, ClusterEvent, ClusterLog, CommitRecord, SimStore, StoreKind, StoreWatch,
    VirtualClock, reported, run_version,
};

/// The store, its clock, its planted bugs and its log.
#[derive(Debug)]
pub struct StoreHost {
    store: SimStore,
    clock: Arc<VirtualClock>,
    bugs: StoreBugs,
    log: Arc<ClusterLog>,
    /// Faults placed at a request: the store counts what it receives.
    triggers: Arc<Triggers>,
    /// Every commit the store reported, in the order it answered (H1).
    commits: std::sync::Mutex<Vec<CommitRecord>>,
    /// The claims of the current virtual millisecond, to tell a lost race.
    race: std::sync::Mutex<ClaimRace>,
    /// The change feed watchers subscribe to (H1, H5).
    feeds: Arc<Feeds>,
    /// What the world reads of the store as it goes (admissions, milestones).
    watch: Arc<StoreWatch>,
    /// Each deleted incarnation as it was just before its deletion.
    retired: std::sync::Mutex<Vec<StoredThread>>,
}

/// The claims the store answered in one virtual millisecond: who won a
/// run, and who found nothing (a claim race's losers, once someone wins).
#[derive(Debug, Default)]
struct ClaimRace {
    at: u64,
    won: Vec<(String, String)>,
    empty: Vec<String>,
}

/// The lease token a request writes under, with its thread and run, and
/// the messages it appends.
struct Fenced {
    thread: String,
    run: String,
    token: FencingToken,
    messages: Vec<String>,
    waits_on: Vec<String>,
}

impl StoreHost {
    pub fn new(
        bugs: StoreBugs,
        log: Arc<ClusterLog>,
        triggers: Arc<Triggers>,
        (kind, feeds, watch): (StoreKind, Arc<Feeds>, Arc<StoreWatch>),
    ) -> Result<StoreHost, SimError> {
        let clock = Arc::new(VirtualClock::turmoil());
        Ok(StoreHost {
            store: SimStore::new(kind, Some(clock.clone())).map_err(|e| {
                SimError::Setup(format!("opening the {} store: {e}", kind.as_str()))
            })?,
            clock,
            bugs,
            log,
            triggers,
            commits: std::sync::Mutex::new(Vec::new()),
            race: std::sync::Mutex::default(),
            feeds,
            watch,
            retired: std::sync::Mutex::default(),
        })
    }

    /// The change feed.
    pub fn feeds(&self) -> &Feeds {
        &self.feeds
    }

    /// The store, for reading its final state after the run.
    pub fn store(&self) -> &SimStore {
        &self.store
    }

    /// Each deleted incarnation as it was just before its deletion (its
    /// runs as they were then), in the order of the deletions.
    pub fn take_retired(&self) -> Vec<StoredThread> {
        std::mem::take(&mut *self.retired.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The commits the store reported, for the oracles.
    pub fn take_commits(&self) -> Vec<CommitRecord> {
        std::mem::take(&mut *self.commits.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Counts a request from host `from` as it arrives, firing the faults
    /// placed at it: [`Arrival::Lose`] when one drops it unapplied.
    pub fn arrive(&self, from: &str, request: &StoreRequest) -> Arrival {
        self.triggers.arrive(from, request.name())
    }

    /// Whether a fault placed at a request fired and the simulator has
    /// not carried it out yet.
    pub fn fault_pending(&self) -> bool {
        self.triggers.pending()
    }

    /// Answers one request from host `from`, and records the commit it
    /// reports, if any.
    pub fn apply(&self, from: &str, request: StoreRequest) -> Result<StoreReply, StoreError> {
        let name = request.name();
        let thread = request.thread().map(str::to_string);
        let note = Note::of(&request);
        let pending = StoreWatch::ask(&request);
        let reply = self.answer(from, request);
        self.watch.note(pending, &reply);
        let ended = |thread: &str, run: &str| self.run_end(thread, run);
        self.feeds.after(note, &reply, self.clock.now(), ended);
        if let Some((thread, version)) = reported(thread.as_deref(), &reply) {
            let record = CommitRecord {
                from: from.to_string(),
                request: name,
                thread,
                version,
                after_event: self.log.after_event(),
            };
            let mut commits = self.commits.lock().unwrap_or_else(|e| e.into_inner());
            commits.push(record);
        }
        reply
    }

    fn answer(&self, from: &str, mut request: StoreRequest) -> Result<StoreReply, StoreError> {
        let fenced = Fenced::of(&request);
        if self.bugs.accept_stale
            && let Some(f) = &fenced
        {
            self.accept_stale(&mut request, f);
        }
        let claim = match &request {
            StoreRequest::ClaimAny { .. } => true,
            StoreRequest::On { op, .. } => matches!(op, Op::Admin(AdminOp::Claim { .. })),
            StoreRequest::ThreadIds => false,
        };
        if self.bugs.refuse_takeover && claim && self.any_running() {
            return Ok(StoreReply::Admin(AdminReply::Claimed(None)));
        }
        let name = request.name();
        let asked = client_write(&request);
        let deleted = match request.op() {
            Some(Op::Admin(AdminOp::Delete)) => request.thread().map(str::to_string),
            _ => None,
        };
        let doomed = deleted
            .as_deref()
            .and_then(|t| self.head(t, StoredThread::clone));
        // A run's mutation may commit nothing (no change staged): the
        // versions before and after tell.
        let before = match (request.op(), &fenced) {
            (Some(Op::Facade(_)), Some(f)) => Some(self.version(&f.thread)),
            _ => None,
        };
        let reply = match (self.bugs.accept_stale, planted_append(&request)) {
            // The planted bug's append: refused by the store, it lands
            // anyway, unfenced.
            (true, Some((thread, messages))) => match self.store.apply(request.clone()) {
                Err(_) => self.unfenced_append(thread, messages),
                landed => landed,
            },
            _ => self.store.apply(request),
        };
        let reply = match reply {
            Ok(StoreReply::Admin(AdminReply::Claimed(Some(mut c))))
                if self.bugs.cancel_on_takeover && c.takeover.is_some() =>
            {
                // The planted bug: the taker is told of a cancel nobody asked.
                c.cancel_requested = true;
                Ok(StoreReply::Admin(AdminReply::Claimed(Some(c))))
            }
            other => other,
        };
        if let (Some(t), Ok(StoreReply::Admin(AdminReply::Deleted(Some(_))))) = (doomed, &reply) {
            self.retired
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(t);
        }
        if let Some((thread, write)) = stored(asked, &reply) {
            let what = ClusterEvent::Stored {
                from: from.to_string(),
                thread,
                write,
            };
            self.log.push(self.clock.now(), what);
        }
        let committed = match (before, &fenced) {
            (Some(v), Some(f)) => self.version(&f.thread) > v,
            _ => false,
        };
        self.record(from, (name, deleted), fenced, &reply, committed);
        reply
    }

    /// The planted `accept_stale` bug: a run's write carries the thread's
    /// current token, whatever token it was given (an append is left as
    /// it is: [`planted_append`]).
    fn accept_stale(&self, request: &mut StoreRequest, f: &Fenced) {
        let current = self.current_token(&f.thread);
        let token = match request {
            StoreRequest::On {
                op:
                    Op::Run {
                        op: RunOp::Append { .. },
                        ..
                    },
                ..
            } => return,
            StoreRequest::On {
                op: Op::Run { token, .. },
                ..
            }
            | StoreRequest::On {
                op:
                    Op::Facade(FacadeOp::Mutate {
                        writer: Writer::Run { token, .. },
                        ..
                    }),
                ..
            } => token,
            _ => return,
        };
        *token = current;
    }

    fn record(
        &self,
        from: &str,
        (request, deleted): (&'static str, Option<String>),
        fenced: Option<Fenced>,
        reply: &Result<StoreReply, StoreError>,
        committed: bool,
    ) {
        let at = self.clock.now();
        if let Ok(StoreReply::Admin(AdminReply::Claimed(claimed))) = reply {
            let won = claimed.as_ref().map(|c| c.run.as_str());
            self.claim_race(at, from, won);
        }
        let from = from.to_string();
        let what = match (reply, fenced) {
            (Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))), _) => ClusterEvent::Claimed {
                from,
                thread: c.thread.to_string(),
                run: c.run.to_string(),
                token: c.token,
                episode: c.episode,
                takeover: c.takeover.clone(),
            },
            (Ok(StoreReply::Admin(AdminReply::Deleted(Some(d)))), None) => ClusterEvent::Deleted {
                from,
                thread: deleted.unwrap_or_default(),
                incarnation: d.incarnation,
                cancelled: d.cancelled.iter().map(|(run, _)| run.to_string()).collect(),
            },
            (Ok(reply), Some(f)) => wrote(from, request, f, reply, committed),
            (Err(StoreError::StaleLease { given, current }), Some(f)) => ClusterEvent::Refused {
                from,
                request,
                thread: f.thread,
                run: f.run,
                given: *given,
                current: *current,
            },
            (Err(StoreError::LeaseNotHeld { token, .. }), Some(f)) => ClusterEvent::Refused {
                from,
                request,
                thread: f.thread,
                run: f.run,
                given: *token,
                current: *token,
            },
            _ => return,
        };
        self.log.push(at, what);
    }

    /// Logs the claims that lost a race: a claim that found nothing in the
    /// same virtual millisecond as another worker's claim that took a run.
    fn claim_race(&self, at: u64, from: &str, won: Option<&str>) {
        let mut race = self.race.lock().unwrap_or_else(|e| e.into_inner());
        if race.at != at {
            *race = ClaimRace {
                at,
                ..ClaimRace::default()
            };
        }
        let lost = |loser: &str, winner: &str, run: &str| ClusterEvent::LostClaim {
            from: loser.to_string(),
            to: winner.to_string(),
            run: run.to_string(),
        };
        match won {
            Some(run) => {
                for loser in race.empty.iter().filter(|l| l.as_str() != from) {
                    self.log.push(at, lost(loser, from, run));
                }
                race.empty.clear();
                race.won.push((from.to_string(), run.to_string()));
            }
            None => match race.won.iter().find(|(w, _)| w != from) {
                Some((winner, run)) => self.log.push(at, lost(from, winner, run)),
                None => race.empty.push(from.to_string()),
            },
        }
    }

    /// The planted `accept_stale` bug's append: the messages land as a
    /// trusted write, neither token nor lease holder checked (the store
    /// itself fences every run write by both, SPEC K2).
    fn unfenced_append(
        &self,
        thread: &str,
        messages: Vec<pai_runtime::message::NewMessage>,
    ) -> Result<StoreReply, StoreError> {
        let Some(last_seq) = self.head(thread, |t| t.messages.last().map_or(0, |m| m.seq)) else {
            return Err(StoreError::NoThread(thread.into()));
        };
        let write = FacadeOp::Mutate {
            incarnation: None,
            writer: Writer::Trusted,
            expect: pai_runtime::store::Expect::Nothing,
            writes: messages.into_iter().map(Write::Append).collect(),
        };
        match self.store.apply(StoreRequest::facade(thread, write))? {
            StoreReply::Facade(FacadeReply::Mutated(Ok(done))) => Ok(StoreReply::Run(
                RunReply::Appended(pai_runtime::store::Appended {
                    version: done.version,
                    first_seq: last_seq + 1,
                    cancel_requested: false,
                }),
            )),
            other => Err(StoreError::Protocol(format!(
                "a planted append got {other:?}"
            ))),
        }
    }

    /// A run's end as the store recorded it, for the feed.
    fn run_end(&self, thread: &str, run: &str) -> Option<pai_runtime::event::LiveEvent> {
        let r = self.head(thread, |t| t.runs.iter().find(|r| r.id == run).cloned())??;
        Some(pai_runtime::event::LiveEvent::RunEnded {
            at: self.clock.now(),
            run_id: r.id.clone(),
            status: r.status,
            outcome: r.outcome?,
            reason: r.reason,
        })
    }

    /// The thread's version (0 when it does not exist).
    fn version(&self, thread: &str) -> u64 {
        self.head(thread, |t| t.version).unwrap_or(0)
    }

    fn current_token(&self, thread: &str) -> FencingToken {
        self.head(thread, |t| t.lease_token).unwrap_or_default()
    }

    /// `read` of the stored thread, if it exists (the host's own look, not
    /// a worker's request).
    fn head<T>(&self, thread: &str, read: impl FnOnce(&StoredThread) -> T) -> Option<T> {
        match self
            .store
            .apply(StoreRequest::admin(thread, AdminOp::Inspect))
        {
            Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) => Some(read(&t)),
            _ => None,
        }
    }

    /// Whether some thread has a run being driven (a claim could only take it over).
    fn any_running(&self) -> bool {
        let Ok(StoreReply::Admin(AdminReply::Ids(ids))) = self.store.apply(StoreRequest::ThreadIds)
        else {
            return false;
        };
        ids.into_iter().any(|thread| {
            self.head(&thread, |t| {
                t.runs.iter().any(|r| r.status == RunStatus::Running)
            }) == Some(true)
        })
    }
}

impl Fenced {
    /// The lease token a request writes under, if it is a run's write (a
    /// run's reads under its token, `run_messages`, are not logged).
    fn of(request: &StoreRequest) -> Option<Fenced> {
        let StoreRequest::On { thread, op } = request else {
            return None;
        };
        let (run, token) = op.fence()?;
        let (messages, waits_on) = match op {
            Op::Run {
                op: RunOp::RunMessages { .. },
                ..
            } => return None,
            Op::Run {
                op: RunOp::Append { messages, .. } | RunOp::CommitResumed { messages, .. },
                ..
            } => (
                messages.iter().map(|m| m.id.to_string()).collect(),
                Vec::new(),
            ),
            Op::Run {
                op: RunOp::Wait { calls } | RunOp::Await { calls },
                ..
            } => (
                Vec::new(),
                calls.iter().map(|c| c.call_id.to_string()).collect(),
            ),
            Op::Facade(FacadeOp::Mutate { writes, .. }) => {
                let appended = writes.iter().filter_map(|w| match w {
                    Write::Append(m) => Some(m.id.to_string()),
                    _ => None,
                });
                (appended.collect(), Vec::new())
            }
            _ => (Vec::new(), Vec::new()),
        };
        Some(Fenced {
            thread: thread.to_string(),
            run: run.to_string(),
            token,
            messages,
            waits_on,
        })
    }
}

/// What the log keeps of a run's write that landed.
fn wrote(
    from: String,
    request: &'static str,
    f: Fenced,
    reply: &StoreReply,
    committed: bool,
) -> ClusterEvent {
    let run = match reply {
        StoreReply::Run(r) => Some(r),
        _ => None,
    };
    let version = match reply {
        StoreReply::Facade(FacadeReply::Mutated(Ok(m))) => Some(m.version),
        _ => run.and_then(run_version),
    };
    ClusterEvent::Wrote {
        from,
        request,
        thread: f.thread,
        run: f.run,
        token: f.token,
        next_token: match run {
            Some(RunReply::Lease { token, .. }) => Some(*token),
            _ => None,
        },
        releases: matches!(
            run,
            Some(RunReply::Waited(Some(_)) | RunReply::Finished(Finish::Stored { .. }))
        ),
        messages: f.messages,
        waits_on: f.waits_on,
        admitted: match run {
            Some(RunReply::Finished(Finish::Stored { admitted, .. })) => admitted
                .as_ref()
                .map(|(r, m)| (r.to_string(), m.to_string())),
            _ => None,
        },
        committed,
        version,
    }
}

/// A client's request the log keeps, as asked; what it reached is known
/// from the answer ([`stored`]).
fn client_write(request: &StoreRequest) -> Option<(String, ClientWrite)> {
    let StoreRequest::On { thread, op } = request else {
        return None;
    };
    let write = match op {
        Op::Client { op, .. } => match op {
            ClientOp::Submit { message, .. } => ClientWrite::Message(message.id.to_string()),
            ClientOp::Answer { call_id, .. } => ClientWrite::Answer(call_id.to_string()),
            ClientOp::Cancel { .. } => ClientWrite::Cancel(None),
            ClientOp::Open => return None,
        },
        Op::Read(ReadOp::HasSteer { run, .. }) => ClientWrite::SteerLook(run.to_string()),
        _ => return None,
    };
    Some((thread.to_string(), write))
}

/// What the log keeps of a client's request, by its answer: a message or
/// an answer that landed; every cancel (where it happened matters to what
/// it could have reached, K6) with the run it reached; every look for a
/// steer (a step's decision is made there, A3).
fn stored(
    asked: Option<(String, ClientWrite)>,
    reply: &Result<StoreReply, StoreError>,
) -> Option<(String, ClientWrite)> {
    let (thread, write) = asked?;
    let landed = matches!(
        reply,
        Ok(StoreReply::Client(
            ClientReply::Submitted(_) | ClientReply::Answered(Ok(_))
        ))
    );
    match write {
        ClientWrite::Cancel(_) => {
            let reached = match reply {
                Ok(StoreReply::Client(ClientReply::Cancelled(Ok(c)))) => {
                    Some(cancelled_run(&c.target).to_string())
                }
                _ => None,
            };
            Some((thread, ClientWrite::Cancel(reached)))
        }
        ClientWrite::SteerLook(_) => Some((thread, write)),
        ClientWrite::Message(_) | ClientWrite::Answer(_) => landed.then_some((thread, write)),
    }
}

/// The thread and messages of a run's append, for the planted
/// `accept_stale` bug.
fn planted_append(request: &StoreRequest) -> Option<(&str, Vec<pai_runtime::message::NewMessage>)> {
    match request {
        StoreRequest::On {
            thread,
            op:
                Op::Run {
                    op: RunOp::Append { messages, .. },
                    ..
                },
        } => Some((thread, messages.clone())),
        _ => None,
    }
}

/// The run a cancel reached.
fn cancelled_run(target: &CancelTarget) -> &str {
    match target {
        CancelTarget::Active(r) | CancelTarget::Waiting(r) | CancelTarget::Queued(r) => r,
    }
}
