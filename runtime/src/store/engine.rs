//! The store's transactions, written once for every store: which threads
//! a request needs ([`scope`]), and what it does to the one thread it acts
//! on ([`apply_thread`]). A store only finds the thread's record, hands it
//! here, and keeps what comes back (the in-memory store in its map, a
//! database store in its tables, in one transaction). Pure: no I/O, no
//! clock but the `now` passed in.

use super::mutation::Writer;
use super::protocol::{StoreReply, StoreRequest};
use super::reads::{history, run_messages};
use super::record::{RunStatus, StoreError, Submitted};
use super::thread::ThreadRec;
use crate::clock::Millis;

/// What a request needs of the store's threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every live thread's id (`ThreadIds`).
    Ids,
    /// A claim naming no thread: the first thread in id order with a run
    /// to take ([`claim_first`] on each, in order, until one answers).
    AnyClaim { worker: String, ttl: Option<Millis> },
    /// The one thread named (it may not exist yet).
    Thread(String),
}

/// Which threads `request` reads or writes.
pub(crate) fn scope(request: &StoreRequest) -> Scope {
    match request {
        StoreRequest::ThreadIds => Scope::Ids,
        StoreRequest::Claim {
            thread: None,
            worker,
            ttl,
        } => Scope::AnyClaim {
            worker: worker.clone(),
            ttl: *ttl,
        },
        request => Scope::Thread(thread_of(request).to_string()),
    }
}

/// An unscoped claim tried on thread `id` (SPEC K1, K3).
pub(crate) fn claim_first(
    rec: &mut ThreadRec,
    id: &str,
    worker: &str,
    ttl: Option<Millis>,
    now: Millis,
) -> Option<super::record::Claimed> {
    rec.claim(id, worker, ttl, now)
}

/// Applies a request scoped to one thread as one transaction. `slot` holds
/// the thread's record, or `None` when the store has no such thread; an
/// opening request (`Submit`, `Open`) may fill it. On an error the record
/// is as it was: every operation changes it only after its checks pass.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn apply_thread(
    slot: &mut Option<ThreadRec>,
    request: StoreRequest,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    match slot {
        Some(rec) => apply_existing(rec, request, now),
        None => {
            let (reply, created) = apply_missing(request);
            *slot = created;
            reply
        }
    }
}

/// A request on a thread the store has a record of (live or deleted).
pub(crate) fn apply_existing(
    rec: &mut ThreadRec,
    request: StoreRequest,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    match request {
        StoreRequest::Inspect { thread } => Ok(StoreReply::Thread(
            (!rec.is_deleted()).then(|| rec.to_stored(&thread)),
        )),
        StoreRequest::Delete { .. } => Ok(StoreReply::Deleted(
            (!rec.is_deleted()).then(|| rec.delete()),
        )),
        StoreRequest::Claim {
            thread: Some(thread),
            worker,
            ttl,
        } => Ok(StoreReply::Claimed(rec.claim(&thread, &worker, ttl, now))),
        StoreRequest::Submit { .. } | StoreRequest::Open { .. } => open(rec, request),
        StoreRequest::ThreadIds | StoreRequest::Claim { thread: None, .. } => {
            Err(unscoped(&request))
        }
        request => {
            let thread = thread_of(&request);
            live_incarnation(rec, thread, &request)?;
            match request {
                StoreRequest::Mutate { .. } | StoreRequest::Regenerate { .. } => {
                    facade_op(rec, request, now)
                }
                request => client_op(rec, request, now),
            }
        }
    }
}

/// A request on a thread the store has never had: an opening request
/// creates it (the new record comes back), any other finds nothing.
pub(crate) fn apply_missing(
    request: StoreRequest,
) -> (Result<StoreReply, StoreError>, Option<ThreadRec>) {
    match request {
        StoreRequest::Inspect { .. } => (Ok(StoreReply::Thread(None)), None),
        StoreRequest::Delete { .. } => (Ok(StoreReply::Deleted(None)), None),
        StoreRequest::Claim {
            thread: Some(_), ..
        } => (Ok(StoreReply::Claimed(None)), None),
        StoreRequest::Submit { .. } | StoreRequest::Open { .. } => {
            let Some((agent, owner)) = opener(&request) else {
                return (Err(unscoped(&request)), None);
            };
            let mut rec = ThreadRec::new(agent, owner);
            let reply = open(&mut rec, request);
            (reply, Some(rec))
        }
        StoreRequest::ThreadIds | StoreRequest::Claim { thread: None, .. } => {
            (Err(unscoped(&request)), None)
        }
        request => (
            Err(StoreError::NoThread(thread_of(&request).to_string())),
            None,
        ),
    }
}

fn unscoped(request: &StoreRequest) -> StoreError {
    StoreError::Protocol(format!("{} names no thread", request.name()))
}

/// The agent and owner an opening request creates its thread for.
fn opener(request: &StoreRequest) -> Option<(&str, &str)> {
    match request {
        StoreRequest::Submit { agent, owner, .. } | StoreRequest::Open { agent, owner, .. } => {
            Some((agent, owner))
        }
        _ => None,
    }
}

/// The thread a request acts on (every request but `ThreadIds` and an
/// unscoped `Claim` names one).
fn thread_of(request: &StoreRequest) -> &str {
    use StoreRequest as R;
    match request {
        R::Submit { thread, .. }
        | R::Open { thread, .. }
        | R::Cancel { thread, .. }
        | R::Answer { thread, .. }
        | R::Inspect { thread }
        | R::NextEpisode { thread, .. }
        | R::Renew { thread, .. }
        | R::Append { thread, .. }
        | R::TakeAnchor { thread, .. }
        | R::HasSteer { thread, .. }
        | R::TakeSteer { thread, .. }
        | R::RunMessages { thread, .. }
        | R::Await { thread, .. }
        | R::History { thread, .. }
        | R::RunMetadata { thread, .. }
        | R::SetRunMetadata { thread, .. }
        | R::Wait { thread, .. }
        | R::WaitingCalls { thread, .. }
        | R::CloseCalls { thread, .. }
        | R::CommitResumed { thread, .. }
        | R::Finish { thread, .. }
        | R::Mutate { thread, .. }
        | R::Regenerate { thread, .. }
        | R::Delete { thread } => thread,
        R::Claim { thread, .. } => thread.as_deref().unwrap_or(""),
        R::ThreadIds => "",
    }
}

/// The requests that may create a thread (SPEC H4: a thread of someone
/// else is refused).
fn open(rec: &mut ThreadRec, request: StoreRequest) -> Result<StoreReply, StoreError> {
    let (thread, agent, owner) = match &request {
        StoreRequest::Submit {
            thread,
            agent,
            owner,
            ..
        }
        | StoreRequest::Open {
            thread,
            agent,
            owner,
        } => (thread.clone(), agent.clone(), owner.clone()),
        _ => return Err(StoreError::Protocol("not an opening request".into())),
    };
    if rec.is_deleted() {
        rec.recreate(&agent, &owner);
    }
    rec.check_scope(&thread, &owner, &agent)?;
    let StoreRequest::Submit {
        message,
        steer,
        new_run,
        ..
    } = request
    else {
        return Ok(StoreReply::Done);
    };
    let steered = rec.current_run().filter(|_| steer).map(str::to_string);
    let (run, is_steer) = match (steered, new_run) {
        (Some(run), _) => (run, true),
        (None, Some(run)) => (run, false),
        (None, None) => return Ok(StoreReply::NeedRunId),
    };
    let mut message = message;
    message.pai.run_id = Some(run.clone());
    let appended = rec.append(None, [message.clone()])?;
    let submitted = match is_steer {
        true => {
            rec.steer(&message.id);
            Submitted::Steer {
                run,
                version: appended.version,
            }
        }
        false => {
            rec.admit(&run, &message.id);
            Submitted::Run {
                run,
                version: appended.version,
            }
        }
    };
    Ok(StoreReply::Submitted(submitted))
}

/// The run a request acts for, if it names one.
fn run_of(request: &StoreRequest) -> Option<&str> {
    use StoreRequest as R;
    match request {
        R::NextEpisode { run, .. }
        | R::Renew { run, .. }
        | R::Append { run, .. }
        | R::TakeAnchor { run, .. }
        | R::HasSteer { run, .. }
        | R::TakeSteer { run, .. }
        | R::RunMessages { run, .. }
        | R::Await { run, .. }
        | R::RunMetadata { run, .. }
        | R::SetRunMetadata { run, .. }
        | R::Wait { run, .. }
        | R::WaitingCalls { run, .. }
        | R::CloseCalls { run, .. }
        | R::CommitResumed { run, .. }
        | R::Finish { run, .. } => Some(run),
        R::Mutate {
            writer: Writer::Run { run, .. },
            ..
        } => Some(run),
        _ => None,
    }
}

/// SPEC H5: a request of a run of a deleted incarnation is refused as
/// such; any other request on a deleted thread finds no thread.
fn live_incarnation(
    rec: &ThreadRec,
    thread: &str,
    request: &StoreRequest,
) -> Result<(), StoreError> {
    if let Some(incarnation) = run_of(request).and_then(|run| rec.retired(run)) {
        return Err(StoreError::Deleted {
            thread: thread.to_string(),
            incarnation,
        });
    }
    match rec.is_deleted() {
        true => Err(StoreError::NoThread(thread.to_string())),
        false => Ok(()),
    }
}

/// The thread facade's transactions (SPEC H2, H3, H5, K4, R1).
fn facade_op(
    rec: &mut ThreadRec,
    request: StoreRequest,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    match request {
        StoreRequest::Mutate {
            thread,
            incarnation,
            writer,
            expect,
            writes,
        } => {
            rec.bound_to(&thread, incarnation)?;
            if let Writer::Run { run, token } = &writer {
                rec.holding(run, *token)?;
            }
            let done = rec.mutate(&writer, &expect, writes)?;
            if matches!(writer, Writer::Run { .. }) && done.is_ok() {
                rec.touch(now);
            }
            Ok(StoreReply::Mutated(done))
        }
        StoreRequest::Regenerate {
            thread,
            incarnation,
            from,
            new_run,
            expect,
            writes,
        } => {
            rec.bound_to(&thread, incarnation)?;
            Ok(StoreReply::Regenerated(
                rec.regenerate(&from, &new_run, &expect, writes)?,
            ))
        }
        other => Err(StoreError::Protocol(format!(
            "{} is not a facade request",
            other.name()
        ))),
    }
}

/// Requests on one existing thread.
fn client_op(
    rec: &mut ThreadRec,
    request: StoreRequest,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    use StoreRequest as R;
    match request {
        R::Cancel {
            thread,
            agent,
            owner,
            run,
        } => {
            rec.check_scope(&thread, &owner, &agent)?;
            Ok(StoreReply::Cancelled(rec.cancel(run.as_deref())))
        }
        R::Answer {
            thread,
            agent,
            owner,
            call_id,
            answer,
        } => {
            rec.check_scope(&thread, &owner, &agent)?;
            Ok(StoreReply::Answered(rec.answer(&call_id, answer)))
        }
        R::History {
            thread,
            agent,
            incarnation,
            read,
        } => history(rec, &thread, &agent, incarnation, read),
        R::HasSteer { .. } => Ok(StoreReply::Flag(rec.has_steer())),
        R::RunMetadata { run, .. } => Ok(StoreReply::Value(rec.run_metadata(&run).cloned())),
        R::WaitingCalls { run, .. } => Ok(StoreReply::Calls(rec.waiting_calls(&run))),
        request @ (R::RunMessages { .. }
        | R::TakeAnchor { .. }
        | R::TakeSteer { .. }
        | R::CloseCalls { .. }) => {
            // Fenced, but no commit: a run taking its input (K2, L1, A4),
            // or giving its answerable calls up (A3, T9).
            run_op(rec, request, now)
        }
        request => {
            let reply = run_op(rec, request, now)?;
            rec.touch(now);
            Ok(reply)
        }
    }
}

/// The run and token a run's write is fenced by (SPEC K2): the write lands
/// only if the token is the thread's newest and that run holds the lease,
/// so neither a queued run nor one that waited or ended writes under it.
fn fenced_run(request: &StoreRequest) -> Option<(&str, u64)> {
    use StoreRequest as R;
    match request {
        R::Append { run, token, .. }
        | R::TakeAnchor { run, token, .. }
        | R::TakeSteer { run, token, .. }
        | R::RunMessages { run, token, .. }
        | R::SetRunMetadata { run, token, .. }
        | R::Await { run, token, .. }
        | R::Wait { run, token, .. }
        | R::CloseCalls { run, token, .. }
        | R::CommitResumed { run, token, .. }
        | R::Finish {
            run,
            token: Some(token),
            ..
        } => Some((run, *token)),
        R::Mutate {
            writer: Writer::Run { run, token },
            ..
        } => Some((run, *token)),
        _ => None,
    }
}

/// A run's writes, each under its lease token (SPEC K2).
fn run_op(
    rec: &mut ThreadRec,
    request: StoreRequest,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    use StoreRequest as R;
    if let Some((run, token)) = fenced_run(&request) {
        rec.holding(run, token)?;
    }
    match request {
        R::NextEpisode { run, token, .. } => {
            let (token, episode, version) = rec.next_episode(&run, token, now)?;
            Ok(StoreReply::Lease {
                token,
                episode,
                version,
            })
        }
        R::Renew { run, token, .. } => {
            let (cancel_requested, version) = rec.renew(&run, token, now)?;
            Ok(StoreReply::Renewed {
                cancel_requested,
                version,
            })
        }
        R::RunMessages { run, all, .. } => {
            // The run's newest user message is handed to `prepare_run`:
            // a pending steer is the run's for good (L1).
            rec.take_steers();
            Ok(run_messages(rec, &run, all))
        }
        R::Append {
            run,
            token,
            messages,
            step,
            ..
        } => {
            let appended = rec.append(Some(token), messages)?;
            if step.is_some() {
                rec.step_committed(&run);
            }
            Ok(StoreReply::Appended(appended))
        }
        R::TakeAnchor { token, .. } => {
            rec.fenced(Some(token))?;
            rec.take_steers();
            Ok(StoreReply::Anchor {
                last_seq: rec.last_seq(),
                incarnation: rec.incarnation(),
            })
        }
        R::TakeSteer { token, .. } => {
            rec.fenced(Some(token))?;
            rec.take_steers();
            Ok(StoreReply::Done)
        }
        R::Await {
            run, token, calls, ..
        } => Ok(StoreReply::Version(rec.await_calls(&run, token, calls)?)),
        R::CloseCalls { run, token, .. } => Ok(StoreReply::Calls(rec.close_calls(&run, token)?)),
        R::SetRunMetadata {
            run, token, value, ..
        } => Ok(StoreReply::Version(
            rec.set_run_metadata(&run, token, value)?,
        )),
        R::Wait {
            run, token, calls, ..
        } => {
            let waits = rec.wait(&run, token, calls)?;
            Ok(StoreReply::Waited(
                waits.map(|version| (rec.waiting_calls(&run), version)),
            ))
        }
        R::CommitResumed {
            run,
            token,
            messages,
            ..
        } => Ok(StoreReply::Appended(
            rec.commit_resumed(&run, token, messages)?,
        )),
        R::Finish {
            run,
            token,
            end,
            next_run,
            ..
        } => {
            rec.fenced(token)?;
            if end.status != RunStatus::Cancelled && rec.cancel_requested(&run) {
                return Ok(StoreReply::CancelFirst);
            }
            if rec.has_steer() && next_run.is_none() {
                return Ok(StoreReply::NeedRunId);
            }
            let version = rec.end_run(&run, &end);
            let admitted = next_run
                .and_then(|next| rec.admit_leftover_steers(&next).map(|steer| (next, steer)));
            Ok(StoreReply::Finished { admitted, version })
        }
        other => Err(StoreError::Protocol(format!(
            "{} is not a request on a thread",
            other.name()
        ))),
    }
}
