//! What the store takes from the holder of a run a client asked to cancel
//! (SPEC K6, T8). From the cancel's commit on, the holder's next exchange
//! with the store tells it, whatever it asks, so among workers it stops
//! there: no step of the run is committed after the cancel reached the
//! store, and no model call or tool starts after that exchange.
//!
//! The store still takes what closes the run:
//! - a renewal (answered `cancel_requested`), so the holder keeps its
//!   lease while it closes;
//! - the results of its open step: an append of tool messages only,
//!   without a step (the running tools' cancelled results, T8, beside
//!   those that ended before the holder heard), and a resume's commit of
//!   the calls it gives up, each answered with `cancel_requested`;
//! - closing its answerable calls (`close_calls`) and a wait, which it
//!   refuses as before (the run must end, not wait);
//! - its end: cancelled (any other end is answered `CancelFirst`).
//!
//! Everything else the holder asks under its token is refused with
//! [`StoreError::Cancelled`] and changes nothing: a model step's commit, a
//! response, a hidden context message, run metadata, making calls
//! answerable, a new step's anchor, a steer taken, what `prepare_run`
//! reads, a new episode, the run's own facade mutations, and the step's
//! look for a steer.

use super::protocol::RunOp;
use super::record::StoreError;
use super::reply::RunReply;
use super::thread::ThreadRec;
use crate::message::Role;

/// Refuses `op` of `run` when a cancel reached the run and `op` is not one
/// that closes it.
pub(super) fn admit(rec: &ThreadRec, run: &str, op: &RunOp) -> Result<(), StoreError> {
    if !rec.cancel_requested(run) || closes(op) {
        return Ok(());
    }
    Err(refused(run))
}

/// Refuses a write (or a steer look) of `run` that is not a [`RunOp`],
/// when a cancel reached it while it is the thread's current run.
pub(super) fn admit_other(rec: &ThreadRec, run: &str) -> Result<(), StoreError> {
    match rec.current_run() == Some(run) && rec.cancel_requested(run) {
        true => Err(refused(run)),
        false => Ok(()),
    }
}

/// An accepted closing append of a run a cancel reached says so.
pub(super) fn mark(rec: &ThreadRec, run: &str, mut reply: RunReply) -> RunReply {
    if let RunReply::Appended(a) = &mut reply {
        a.cancel_requested = rec.cancel_requested(run);
    }
    reply
}

fn refused(run: &str) -> StoreError {
    StoreError::Cancelled { run: run.into() }
}

/// The run requests that close a run a cancel reached.
fn closes(op: &RunOp) -> bool {
    match op {
        RunOp::Renew
        | RunOp::CloseCalls
        | RunOp::CommitResumed { .. }
        | RunOp::Wait { .. }
        | RunOp::Finish { .. } => true,
        RunOp::Append {
            messages,
            step: None,
            ..
        } => !messages.is_empty() && messages.iter().all(|m| m.role == Role::Tool),
        _ => false,
    }
}
