//! SPEC H5 for trusted handles: a handle `bind_thread` bound to an
//! incarnation can no longer read or write the thread once that
//! incarnation was deleted. Judged from the timeline's own records: an
//! action through the handle that began after the `thread_deleted` of its
//! incarnation must fail; one refused as deleted while its incarnation was
//! never deleted (by the time it returned) was refused wrongly.

use pai_runtime::{Event, event::EventKind};

use super::observed::{Observed, Violation};
use crate::scenario::{Action, OracleId};
use crate::world::ActionRecord;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let timeline = &o.scenario.timeline;
    let mut out = Vec::new();
    for r in o.actions {
        let m = &timeline[r.moment];
        let Some(name) = &m.handle else { continue };
        let Some(incarnation) = bound_incarnation(o, name) else {
            continue;
        };
        let deleted = |upto: usize| deleted_within(&o.events[..upto], &m.thread, incarnation);
        let what = format!(
            "{} at {}ms through handle {name} (bound to incarnation {incarnation} of {})",
            m.action.name(),
            r.at,
            m.thread
        );
        match &r.outcome {
            Ok(_) if deleted(r.before_event.min(o.events.len())) => {
                let message = format!("{what} succeeded after that incarnation was deleted");
                out.push(Violation::new(OracleId::H5, None, message));
            }
            // Among workers the deletion may be logged by another process.
            Err(e)
                if o.cluster.is_none()
                    && e.contains("was deleted")
                    && !deleted(r.after_event.min(o.events.len())) =>
            {
                let message = format!(
                    "{what} was refused as deleted, but that incarnation was never deleted: {e}"
                );
                out.push(Violation::new(OracleId::H5, None, message));
            }
            _ => {}
        }
    }
    out
}

/// The incarnation the `bind_thread` of `name` bound its handle to, as its
/// answer said (`None`: the bind failed).
fn bound_incarnation(o: &Observed<'_>, name: &str) -> Option<u64> {
    let bind = o
        .actions
        .iter()
        .find(|r| matches!(&o.scenario.timeline[r.moment].action, Action::Bind(n) if n == name))?;
    bound_in(bind)
}

fn bound_in(r: &ActionRecord) -> Option<u64> {
    let said = r.outcome.as_ref().ok()?.as_deref()?;
    said.rsplit(' ').next()?.parse().ok()
}

fn deleted_within(events: &[Event], thread: &str, incarnation: u64) -> bool {
    events.iter().any(|e| {
        e.thread_id == thread
            && matches!(e.kind, EventKind::ThreadDeleted { incarnation: i, .. } if i == incarnation)
    })
}
