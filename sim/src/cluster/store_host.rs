//! The store host: the durable store every worker shares (it survives
//! worker crashes; the store itself is never crashed), answering each
//! request as one transaction on its own clock, and logging what bears on
//! leases. Two planted bugs (SPEC D5) let violation scenarios prove the
//! lease oracles fire.

use std::sync::Arc;

use pai_runtime::{
    CancelTarget, Clock, RunStatus, StoreError, StoreReply, StoreRequest, StoredThread, Write,
    Writer,
};

use super::feed::{Feeds, Note};
use super::triggers::{Arrival, Triggers};
use crate::report::SimError;
use crate::scenario::StoreBugs;
use crate::world::{
    ClusterEvent, ClusterLog, CommitRecord, SimStore, StoreKind, VirtualClock, reported, thread_of,
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
    token: u64,
    messages: Vec<String>,
    waits_on: Vec<String>,
}

impl StoreHost {
    pub fn new(
        bugs: StoreBugs,
        log: Arc<ClusterLog>,
        triggers: Arc<Triggers>,
        (kind, feeds): (StoreKind, Arc<Feeds>),
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
        let thread = thread_of(&request).map(str::to_string);
        let note = Note::of(&request);
        let reply = self.answer(from, request);
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
        let fenced = fenced(&request);
        if self.bugs.accept_stale
            && let Some(f) = &fenced
        {
            let current = self.current_token(&f.thread);
            set_token(&mut request, current);
        }
        if self.bugs.refuse_takeover
            && matches!(request, StoreRequest::Claim { .. })
            && self.any_running()
        {
            return Ok(StoreReply::Claimed(None));
        }
        let name = request.name();
        let stored = client_write(&request);
        let deleted = match &request {
            StoreRequest::Delete { thread } => Some(thread.clone()),
            _ => None,
        };
        // A run's mutation may commit nothing (no change staged): the
        // versions before and after tell.
        let before = match (&request, &fenced) {
            (StoreRequest::Mutate { .. }, Some(f)) => Some(self.version(&f.thread)),
            _ => None,
        };
        let reply = match request {
            StoreRequest::Append {
                thread, messages, ..
            } if self.bugs.accept_stale && !self.holds(fenced.as_ref()) => {
                self.unfenced_append(thread, messages)
            }
            request => self.store.apply(request),
        };
        let stored = match (stored, &reply) {
            (Some(s), Ok(StoreReply::Submitted(_) | StoreReply::Answered(Ok(_)))) => Some(s),
            (Some((thread, _)), Ok(StoreReply::Cancelled(Ok(reached)))) => {
                Some((thread, cancelled_run(&reached.target).to_string()))
            }
            // A cancel that found no run (or no thread) is logged too: where
            // it happened matters to what it could have reached (K6). So is
            // a step's look for a steer: its decision is made there (A3).
            (Some((thread, key)), _) if key.is_empty() || key.starts_with("has_steer ") => {
                Some((thread, key))
            }
            _ => None,
        };
        if let Some((thread, key)) = stored {
            let from = from.to_string();
            let what = ClusterEvent::Stored {
                from,
                request: name,
                thread,
                key,
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

    fn record(
        &self,
        from: &str,
        (request, deleted): (&'static str, Option<String>),
        fenced: Option<Fenced>,
        reply: &Result<StoreReply, StoreError>,
        committed: bool,
    ) {
        let at = self.clock.now();
        if let Ok(StoreReply::Claimed(claimed)) = reply {
            let won = claimed.as_ref().map(|c| c.run.as_str());
            self.claim_race(at, from, won);
        }
        let from = from.to_string();
        let what = match (reply, fenced) {
            (Ok(StoreReply::Claimed(Some(c))), _) => ClusterEvent::Claimed {
                from,
                thread: c.thread.clone(),
                run: c.run.clone(),
                token: c.token,
                episode: c.episode,
                takeover: c.takeover.clone(),
            },
            (Ok(StoreReply::Deleted(Some(d))), None) => ClusterEvent::Deleted {
                from,
                thread: deleted.unwrap_or_default(),
                incarnation: d.incarnation,
                cancelled: d.cancelled.iter().map(|(run, _)| run.clone()).collect(),
            },
            (Ok(reply), Some(f)) => ClusterEvent::Wrote {
                from,
                request,
                thread: f.thread,
                run: f.run,
                token: f.token,
                next_token: match reply {
                    StoreReply::Lease { token, .. } => Some(*token),
                    _ => None,
                },
                releases: matches!(
                    reply,
                    StoreReply::Waited(Some(_)) | StoreReply::Finished { .. }
                ),
                messages: f.messages,
                waits_on: f.waits_on,
                admitted: match reply {
                    StoreReply::Finished { admitted, .. } => admitted.clone(),
                    _ => None,
                },
                committed,
                version: reply_version(reply),
            },
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
        thread: String,
        messages: Vec<pai_runtime::Message>,
    ) -> Result<StoreReply, StoreError> {
        let last_seq = match self.store.apply(StoreRequest::Inspect {
            thread: thread.clone(),
        })? {
            StoreReply::Thread(Some(t)) => t.messages.last().map_or(0, |m| m.seq),
            _ => return Err(StoreError::NoThread(thread)),
        };
        let write = StoreRequest::Mutate {
            thread,
            incarnation: None,
            writer: pai_runtime::Writer::Trusted,
            expect: pai_runtime::Expect::Nothing,
            writes: messages
                .into_iter()
                .map(pai_runtime::Write::Append)
                .collect(),
        };
        match self.store.apply(write)? {
            StoreReply::Mutated(Ok(done)) => Ok(StoreReply::Appended(pai_runtime::Appended {
                version: done.version,
                first_seq: last_seq + 1,
            })),
            other => Err(StoreError::Protocol(format!(
                "a planted append got {other:?}"
            ))),
        }
    }

    /// Whether a run's write is under the newest token of a run that holds
    /// the lease (what the store checks).
    fn holds(&self, fenced: Option<&Fenced>) -> bool {
        let Some(f) = fenced else {
            return true;
        };
        self.head(&f.thread, |t| {
            t.lease_token == f.token && t.lease_holder.as_deref() == Some(f.run.as_str())
        })
        .unwrap_or(false)
    }

    /// A run's end as the store recorded it, for the feed.
    fn run_end(&self, thread: &str, run: &str) -> Option<pai_runtime::LiveEvent> {
        let r = self.head(thread, |t| t.runs.iter().find(|r| r.id == run).cloned())??;
        Some(pai_runtime::LiveEvent::RunEnded {
            at: self.clock.now(),
            run_id: r.id,
            status: r.status,
            outcome: r.outcome?,
            reason: r.reason,
        })
    }

    /// The thread's version (0 when it does not exist).
    fn version(&self, thread: &str) -> u64 {
        self.head(thread, |t| t.version).unwrap_or(0)
    }

    fn current_token(&self, thread: &str) -> u64 {
        self.head(thread, |t| t.lease_token).unwrap_or(0)
    }

    /// `read` of the stored thread, if it exists (the host's own look, not
    /// a worker's request).
    fn head<T>(&self, thread: &str, read: impl FnOnce(&StoredThread) -> T) -> Option<T> {
        let inspected = self.store.apply(StoreRequest::Inspect {
            thread: thread.to_string(),
        });
        match inspected {
            Ok(StoreReply::Thread(Some(t))) => Some(read(&t)),
            _ => None,
        }
    }

    /// Whether some thread has a run being driven (a claim could only take it over).
    fn any_running(&self) -> bool {
        let Ok(StoreReply::Ids(ids)) = self.store.apply(StoreRequest::ThreadIds) else {
            return false;
        };
        ids.into_iter().any(|thread| {
            let read = self.store.apply(StoreRequest::Inspect { thread });
            matches!(read, Ok(StoreReply::Thread(Some(t)))
                if t.runs.iter().any(|r| r.status == RunStatus::Running))
        })
    }
}

/// The lease token a request writes under, if it is a run's write.
fn fenced(request: &StoreRequest) -> Option<Fenced> {
    use StoreRequest as R;
    let (thread, run, token) = match request {
        R::NextEpisode { thread, run, token }
        | R::Renew { thread, run, token }
        | R::Append {
            thread, run, token, ..
        }
        | R::TakeAnchor { thread, run, token }
        | R::TakeSteer { thread, run, token }
        | R::CloseCalls { thread, run, token }
        | R::SetRunMetadata {
            thread, run, token, ..
        }
        | R::Wait {
            thread, run, token, ..
        }
        | R::Await {
            thread, run, token, ..
        }
        | R::CommitResumed {
            thread, run, token, ..
        } => (thread, run, *token),
        R::Finish {
            thread,
            run,
            token: Some(token),
            ..
        }
        | R::Mutate {
            thread,
            writer: Writer::Run { run, token },
            ..
        } => (thread, run, *token),
        _ => return None,
    };
    let messages = match request {
        R::Append { messages, .. } | R::CommitResumed { messages, .. } => {
            messages.iter().map(|m| m.id.clone()).collect()
        }
        R::Mutate { writes, .. } => writes
            .iter()
            .filter_map(|w| match w {
                Write::Append(m) => Some(m.id.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let waits_on = match request {
        R::Wait { calls, .. } | R::Await { calls, .. } => {
            calls.iter().map(|c| c.call_id.clone()).collect()
        }
        _ => Vec::new(),
    };
    Some(Fenced {
        thread: thread.clone(),
        run: run.clone(),
        token,
        messages,
        waits_on,
    })
}

/// The thread and key of a client's write: a submitted message's id, the
/// call an answer is for; a cancel's key is the run it reaches, known from
/// the answer.
fn client_write(request: &StoreRequest) -> Option<(String, String)> {
    match request {
        StoreRequest::Submit {
            thread, message, ..
        } => Some((thread.clone(), message.id.clone())),
        StoreRequest::Answer {
            thread, call_id, ..
        } => Some((thread.clone(), call_id.clone())),
        StoreRequest::Cancel { thread, .. } => Some((thread.clone(), String::new())),
        StoreRequest::HasSteer { thread, run } => {
            Some((thread.clone(), format!("has_steer {run}")))
        }
        _ => None,
    }
}

/// The thread's version after a write, as its answer says.
fn reply_version(reply: &StoreReply) -> Option<u64> {
    match reply {
        StoreReply::Appended(a) => Some(a.version),
        StoreReply::Version(v) => Some(*v),
        StoreReply::Lease { version, .. }
        | StoreReply::Renewed { version, .. }
        | StoreReply::Finished { version, .. } => Some(*version),
        StoreReply::Waited(Some((_, v))) => Some(*v),
        StoreReply::Mutated(Ok(m)) => Some(m.version),
        _ => None,
    }
}

/// The run a cancel reached.
fn cancelled_run(target: &CancelTarget) -> &str {
    match target {
        CancelTarget::Active(r) | CancelTarget::Waiting(r) | CancelTarget::Queued(r) => r,
    }
}

/// Rewrites a run write's token (the planted `accept_stale` bug).
fn set_token(request: &mut StoreRequest, to: u64) {
    use StoreRequest as R;
    match request {
        R::NextEpisode { token, .. }
        | R::Renew { token, .. }
        | R::Append { token, .. }
        | R::TakeAnchor { token, .. }
        | R::TakeSteer { token, .. }
        | R::SetRunMetadata { token, .. }
        | R::Wait { token, .. }
        | R::CommitResumed { token, .. } => *token = to,
        R::Finish { token, .. } => *token = Some(to),
        R::Mutate {
            writer: Writer::Run { token, .. },
            ..
        } => *token = to,
        _ => {}
    }
}
