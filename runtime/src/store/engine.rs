//! The store's transactions, written once for every store: what an
//! operation does to the one thread it acts on ([`apply_thread`]), and an
//! unscoped claim's try on one thread ([`claim_first`]). A store only
//! finds the thread's record, hands it here, and keeps what comes back
//! (the in-memory store in its map, a database store in its tables, in one
//! transaction). Each request group is taken apart once, by its own
//! function; a run's lease token is checked once, before its operation
//! runs (SPEC K2). Pure: no I/O, no clock but the `now` passed in.

use super::cancelled;
use super::mutation::Writer;
use super::protocol::{AdminOp, ClientOp, FacadeOp, Op, ReadOp, RunOp};
use super::reads::{history, run_messages};
use super::record::{Claimed, RunEnd, RunStatus, StoreError, Submitted};
use super::reply::{AdminReply, ClientReply, FacadeReply, Finish, ReadReply, RunReply, StoreReply};
use super::thread::ThreadRec;
use crate::clock::Millis;
use crate::id::RunId;
use crate::store::FencingToken;

/// An unscoped claim tried on thread `id` (SPEC K1, K3).
pub(crate) fn claim_first(
    rec: &mut ThreadRec,
    id: &str,
    worker: &str,
    ttl: Option<Millis>,
    now: Millis,
) -> Option<Claimed> {
    let mark = rec.commit_mark();
    let claimed = rec.claim(id, worker, ttl, now);
    rec.debug_check_commit(mark);
    claimed
}

/// Applies an operation on thread `thread` as one transaction. `slot`
/// holds the thread's record, or `None` when the store has no such
/// thread; an opening request (`Submit`, `Open`) may fill it. On an error
/// the record is as it was: every operation changes it only after its
/// checks pass.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn apply_thread(
    slot: &mut Option<ThreadRec>,
    thread: &str,
    op: Op,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    match slot {
        Some(rec) => apply_existing(rec, thread, op, now),
        None => {
            let (reply, created) = apply_missing(thread, op);
            *slot = created;
            reply
        }
    }
}

/// An operation on a thread the store has a record of (live or deleted).
pub(crate) fn apply_existing(
    rec: &mut ThreadRec,
    thread: &str,
    op: Op,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    let mark = rec.commit_mark();
    let reply = match op {
        Op::Admin(op) => admin_op(rec, thread, op, now).map(StoreReply::Admin),
        Op::Client {
            agent,
            owner,
            op: op @ (ClientOp::Open | ClientOp::Submit { .. }),
        } => open(rec, (thread, &agent, &owner), op).map(StoreReply::Client),
        op => live_incarnation(rec, thread, op.run()).and_then(|()| on_live(rec, thread, op, now)),
    };
    rec.debug_check_commit(mark);
    reply
}

/// An operation on a live thread, by its group.
fn on_live(
    rec: &mut ThreadRec,
    thread: &str,
    op: Op,
    now: Millis,
) -> Result<StoreReply, StoreError> {
    match op {
        Op::Client { agent, owner, op } => {
            client_op(rec, (thread, &agent, &owner), op).map(StoreReply::Client)
        }
        Op::Read(op) => {
            // A step's look for a steer tells a cancelled run's holder (K6).
            if let ReadOp::HasSteer { run, .. } = &op {
                cancelled::admit_other(rec, run)?;
            }
            read_op(rec, thread, op).map(StoreReply::Read)
        }
        Op::Facade(op) => facade_op(rec, thread, op, now).map(StoreReply::Facade),
        Op::Run { run, token, op } => {
            // The one check of a run's token (K2): every run operation
            // below runs only under the newest token, held by `run`.
            rec.holding(&run, token)?;
            // A run a cancel reached writes only what closes it (K6).
            cancelled::admit(rec, &run, &op)?;
            let reply = run_op(rec, &run, token, op, now)?;
            Ok(StoreReply::Run(cancelled::mark(rec, &run, reply)))
        }
        Op::Admin(op) => admin_op(rec, thread, op, now).map(StoreReply::Admin),
    }
}

/// An operation on a thread the store has never had: an opening request
/// creates it (the new record comes back), any other finds nothing.
pub(crate) fn apply_missing(
    thread: &str,
    op: Op,
) -> (Result<StoreReply, StoreError>, Option<ThreadRec>) {
    let nothing = |reply| (Ok(StoreReply::Admin(reply)), None);
    match op {
        Op::Admin(AdminOp::Inspect) => nothing(AdminReply::Thread(None)),
        Op::Admin(AdminOp::Delete) => nothing(AdminReply::Deleted(None)),
        Op::Admin(AdminOp::Claim { .. }) => nothing(AdminReply::Claimed(None)),
        Op::Client {
            agent,
            owner,
            op: op @ (ClientOp::Open | ClientOp::Submit { .. }),
        } => {
            let mut rec = ThreadRec::new(&agent, &owner);
            let mark = rec.commit_mark();
            let reply = open(&mut rec, (thread, &agent, &owner), op).map(StoreReply::Client);
            rec.debug_check_commit(mark);
            (reply, Some(rec))
        }
        _ => (Err(StoreError::NoThread(thread.into())), None),
    }
}

/// The requests that may create a thread (SPEC H4: a thread of someone
/// else is refused).
fn open(
    rec: &mut ThreadRec,
    (thread, agent, owner): (&str, &str, &str),
    op: ClientOp,
) -> Result<ClientReply, StoreError> {
    if rec.is_deleted() {
        rec.recreate(agent, owner);
    }
    rec.check_scope(thread, owner, agent)?;
    let ClientOp::Submit {
        message,
        steer,
        new_run,
    } = op
    else {
        return Ok(ClientReply::Opened);
    };
    let steered = rec.current_run().filter(|_| steer).map(RunId::from);
    let (run, is_steer) = match (steered, new_run) {
        (Some(run), _) => (run, true),
        (None, Some(run)) => (run, false),
        (None, None) => return Ok(ClientReply::NeedRunId),
    };
    let mut message = message;
    message.pai.run_id = Some(run.clone());
    let version = rec.append([message.clone()]).version;
    let submitted = match is_steer {
        true => {
            rec.steer(&message.id);
            Submitted::Steer { run, version }
        }
        false => {
            rec.admit(&run, &message.id);
            Submitted::Run { run, version }
        }
    };
    Ok(ClientReply::Submitted(submitted))
}

/// SPEC H5: a request of a run of a deleted incarnation is refused as
/// such; any other request on a deleted thread finds no thread.
fn live_incarnation(rec: &ThreadRec, thread: &str, run: Option<&str>) -> Result<(), StoreError> {
    if let Some(incarnation) = run.and_then(|run| rec.retired(run)) {
        return Err(StoreError::Deleted {
            thread: thread.into(),
            incarnation,
        });
    }
    match rec.is_deleted() {
        true => Err(StoreError::NoThread(thread.into())),
        false => Ok(()),
    }
}

/// A client's requests (H4, K6, T9): an opening one may recreate a
/// deleted thread; a cancel or an answer needs a live one.
fn client_op(
    rec: &mut ThreadRec,
    (thread, agent, owner): (&str, &str, &str),
    op: ClientOp,
) -> Result<ClientReply, StoreError> {
    match op {
        ClientOp::Cancel { run } => {
            rec.check_scope(thread, owner, agent)?;
            Ok(ClientReply::Cancelled(rec.cancel(run.as_deref())))
        }
        ClientOp::Answer { call_id, answer } => {
            rec.check_scope(thread, owner, agent)?;
            Ok(ClientReply::Answered(rec.answer(&call_id, answer)))
        }
        op @ (ClientOp::Open | ClientOp::Submit { .. }) => open(rec, (thread, agent, owner), op),
    }
}

/// Trusted code's requests: they find a deleted thread as none, but a
/// claim is tried on it and a finish is refused as any run's request is
/// (H5).
fn admin_op(
    rec: &mut ThreadRec,
    thread: &str,
    op: AdminOp,
    now: Millis,
) -> Result<AdminReply, StoreError> {
    Ok(match op {
        AdminOp::Inspect => AdminReply::Thread((!rec.is_deleted()).then(|| rec.to_stored(thread))),
        AdminOp::Delete => AdminReply::Deleted((!rec.is_deleted()).then(|| rec.delete())),
        AdminOp::Claim { worker, ttl } => AdminReply::Claimed(rec.claim(thread, &worker, ttl, now)),
        AdminOp::Finish { run, end, next_run } => {
            live_incarnation(rec, thread, Some(&run))?;
            let finished = finish(rec, &run, &end, next_run);
            rec.touch(now);
            AdminReply::Finished(finished)
        }
    })
}

/// Reads without a token.
fn read_op(rec: &ThreadRec, thread: &str, op: ReadOp) -> Result<ReadReply, StoreError> {
    Ok(match op {
        ReadOp::HasSteer { before, .. } => ReadReply::HasSteer(rec.has_steer(before)),
        ReadOp::RunMetadata { run } => ReadReply::RunMetadata(rec.run_metadata(&run).cloned()),
        ReadOp::WaitingCalls { run } => ReadReply::WaitingCalls(rec.waiting_calls(&run)),
        ReadOp::History {
            agent,
            incarnation,
            read,
        } => history(rec, thread, &agent, incarnation, read)?,
    })
}

/// The thread facade's transactions (SPEC H2, H3, H5, K4, R1).
fn facade_op(
    rec: &mut ThreadRec,
    thread: &str,
    op: FacadeOp,
    now: Millis,
) -> Result<FacadeReply, StoreError> {
    match op {
        FacadeOp::Mutate {
            incarnation,
            writer,
            expect,
            writes,
        } => {
            rec.bound_to(thread, incarnation)?;
            if let Writer::Run { run, token } = &writer {
                // The one check of a run's token (K2); a run a cancel
                // reached mutates nothing (K6).
                rec.holding(run, *token)?;
                cancelled::admit_other(rec, run)?;
            }
            let done = rec.mutate(&writer, &expect, writes)?;
            if matches!(writer, Writer::Run { .. }) && done.is_ok() {
                rec.touch(now);
            }
            Ok(FacadeReply::Mutated(done))
        }
        FacadeOp::Regenerate {
            incarnation,
            from,
            new_run,
            expect,
            writes,
        } => {
            rec.bound_to(thread, incarnation)?;
            let done = rec.regenerate(&from, &new_run, &expect, writes)?;
            Ok(FacadeReply::Regenerated(done))
        }
    }
}

/// A run's operations, its token already checked (SPEC K2). A landed
/// write extends the lease; taking input (K2, L1, A4) or giving answerable
/// calls up (A3, T9) commits nothing and does not.
fn run_op(
    rec: &mut ThreadRec,
    run: &str,
    token: FencingToken,
    op: RunOp,
    now: Millis,
) -> Result<RunReply, StoreError> {
    let reply = match op {
        RunOp::RunMessages { all } => {
            // The run's newest user message is handed to `prepare_run`:
            // a pending steer is the run's for good (L1).
            rec.take_steers();
            return Ok(run_messages(rec, run, all));
        }
        RunOp::TakeAnchor => {
            rec.take_steers();
            return Ok(RunReply::Anchor {
                last_seq: rec.last_seq(),
                incarnation: rec.incarnation(),
            });
        }
        RunOp::TakeSteer => {
            rec.steer_taken(run);
            return Ok(RunReply::SteerTaken);
        }
        RunOp::CloseCalls => return Ok(RunReply::Closed(rec.close_calls(run))),
        op => run_write(rec, run, token, op, now)?,
    };
    rec.touch(now);
    Ok(reply)
}

/// A run's writes that commit (or are refused whole).
fn run_write(
    rec: &mut ThreadRec,
    run: &str,
    token: FencingToken,
    op: RunOp,
    now: Millis,
) -> Result<RunReply, StoreError> {
    Ok(match op {
        RunOp::NextEpisode => {
            let (token, episode, version) = rec.next_episode(run, token, now)?;
            RunReply::Lease {
                token,
                episode,
                version,
            }
        }
        RunOp::Renew => {
            let (cancel_requested, version) = rec.renew(run, now);
            RunReply::Renewed {
                cancel_requested,
                version,
            }
        }
        RunOp::Append {
            messages,
            step,
            metadata,
        } => {
            let appended = rec.append(messages);
            // What hooks wrote about the results lands with them (K5).
            rec.put_run_metadata(run, metadata);
            if step.is_some() {
                rec.step_committed(run);
            }
            RunReply::Appended(appended)
        }
        RunOp::Await { calls } => RunReply::Awaited {
            version: rec.await_calls(run, calls),
        },
        RunOp::SetRunMetadata { value } => RunReply::MetadataSet {
            version: rec.set_run_metadata(run, value),
        },
        RunOp::Wait { calls } => {
            let waits = rec.wait(run, calls);
            RunReply::Waited(waits.map(|version| (rec.waiting_calls(run), version)))
        }
        RunOp::CommitResumed { messages, metadata } => {
            RunReply::Appended(rec.commit_resumed(run, messages, metadata))
        }
        RunOp::Finish { end, next_run } => RunReply::Finished(finish(rec, run, &end, next_run)),
        op @ (RunOp::RunMessages { .. }
        | RunOp::TakeAnchor
        | RunOp::TakeSteer
        | RunOp::CloseCalls) => {
            return Err(StoreError::Protocol(format!("{op:?} commits nothing")));
        }
    })
}

/// Records how `run` ended (K6: a run a cancel reached ends cancelled; a
/// leftover steer starts `next_run`, A4).
fn finish(rec: &mut ThreadRec, run: &str, end: &RunEnd, next_run: Option<RunId>) -> Finish {
    if end.status != RunStatus::Cancelled && rec.cancel_requested(run) {
        return Finish::CancelFirst;
    }
    if rec.has_steer(None) && next_run.is_none() {
        return Finish::NeedRunId;
    }
    let version = rec.end_run(run, end);
    let admitted = next_run.and_then(|next| {
        rec.admit_leftover_steers(&next)
            .map(|steer| (next, steer.into()))
    });
    Finish::Stored { admitted, version }
}
