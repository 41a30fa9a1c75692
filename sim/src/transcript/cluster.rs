//! The events of a run with several workers, in virtual-time order: every
//! worker's events (tagged with the worker, stale workers' included), the
//! faults the simulator carried out (`!`), and what the store did with
//! leases (`~`): claims, takeovers, and stale writes it refused.

use std::fmt::Write as _;

use pai_runtime::event::EventKind;

use crate::oracle::ClusterObs;
use crate::world::{ClientWrite, ClusterEvent, ClusterRecord};

use super::event::event_line;

pub(super) fn events(out: &mut String, c: &ClusterObs) {
    let mut log = c.log.iter().peekable();
    for (i, e) in c.raw_events.iter().enumerate() {
        while let Some(r) = log.next_if(|r| r.after_event <= i) {
            record(out, r);
        }
        let worker = e.worker.as_deref().unwrap_or("-");
        let _ = write!(
            out,
            "{:>6}ms [{worker}] {} {}",
            e.at,
            e.run_id,
            event_line(e)
        );
        // Each tool attempt shows its idempotency key (K5).
        if let EventKind::ToolStart {
            idempotency_key, ..
        } = &e.kind
        {
            let _ = write!(out, " key={idempotency_key}");
        }
        out.push('\n');
    }
    for r in log {
        record(out, r);
    }
}

fn record(out: &mut String, r: &ClusterRecord) {
    let line = match &r.what {
        ClusterEvent::Fault {
            action,
            worker,
            placed,
        } => match placed {
            Some(placed) => format!("! {} {worker} {placed}", action.as_str()),
            None => format!("! {} {worker}", action.as_str()),
        },
        ClusterEvent::Claimed {
            from,
            run,
            token,
            episode,
            takeover,
            ..
        } => {
            let how = match takeover {
                None => String::new(),
                Some(t) => format!(
                    " (taking over from {} token {}, expired at {}ms)",
                    t.from.as_deref().unwrap_or("-"),
                    t.token,
                    t.expired_at
                ),
            };
            format!("~ store: {from} claims {run} token={token} episode={episode}{how}")
        }
        ClusterEvent::Refused {
            from,
            request,
            run,
            given,
            current,
            ..
        } if given == current => format!(
            "~ store: refused {request} of {run} from {from}: token {given} no longer holds the lease"
        ),
        ClusterEvent::Refused {
            from,
            request,
            run,
            given,
            current,
            ..
        } => format!(
            "~ store: refused {request} of {run} from {from}: stale token {given} (current {current})"
        ),
        ClusterEvent::Stored {
            from,
            write: ClientWrite::Cancel(None),
            ..
        } => format!("~ store: {from}'s cancel finds no run"),
        ClusterEvent::Stored {
            from,
            write: ClientWrite::Cancel(Some(run)),
            ..
        } => format!("~ store: {from}'s cancel reaches {run}"),
        ClusterEvent::LostClaim { from, to, run } => {
            format!("~ store: {from}'s claim finds nothing: {to} took {run} first")
        }
        // A deletion shows as the client's `thread_deleted` event.
        ClusterEvent::Wrote { .. } | ClusterEvent::Stored { .. } | ClusterEvent::Deleted { .. } => {
            return;
        }
    };
    let _ = writeln!(out, "{:>6}ms {line}", r.at);
}
