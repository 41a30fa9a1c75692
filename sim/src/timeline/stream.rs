//! The runs' story and the faults as one sequence, each at its place on the
//! axis. The runs' story is the report's event log (among workers, the
//! linear log: each run keeps the events of the worker that held it); the
//! faults come from the simulator's log, each placed before the events of
//! its millisecond, as the simulator carries a fault out before it steps
//! the workers (and as the transcript lists it).

use pai_runtime::Event;

use super::axis::{Pos, Ranker};
use crate::scenario::FaultAction;
use crate::world::{ClusterEvent, ClusterRecord};

/// One thing on the runs' side of the page.
#[derive(Debug, Clone, Copy)]
pub(super) enum What<'a> {
    Event(&'a Event),
    Fault {
        action: FaultAction,
        worker: &'a str,
    },
}

/// A thing and its place.
#[derive(Debug, Clone, Copy)]
pub(super) struct Placed<'a> {
    pub(super) pos: Pos,
    pub(super) what: What<'a>,
}

/// The events and the faults of `log`, ranked together by virtual time.
pub(super) fn merge<'a>(events: &'a [Event], log: &'a [ClusterRecord]) -> Vec<Placed<'a>> {
    let mut faults = log
        .iter()
        .filter_map(|r| match &r.what {
            ClusterEvent::Fault { action, worker, .. } => Some((r.at, *action, worker.as_str())),
            _ => None,
        })
        .peekable();
    let mut ranker = Ranker::default();
    let mut out = Vec::with_capacity(events.len());
    let fault = |ranker: &mut Ranker, (at, action, worker)| Placed {
        pos: ranker.next(at),
        what: What::Fault { action, worker },
    };
    for e in events {
        while let Some(f) = faults.next_if(|f| f.0 <= e.at) {
            out.push(fault(&mut ranker, f));
        }
        out.push(Placed {
            pos: ranker.next(e.at),
            what: What::Event(e),
        });
    }
    for f in faults {
        out.push(fault(&mut ranker, f));
    }
    out
}

/// What a fault does, in a few words (for hover text).
pub(super) fn fault_effect(action: FaultAction) -> &'static str {
    match action {
        FaultAction::Crash => "the worker's process stops; what it held in memory is lost",
        FaultAction::Restart => "the worker starts again with nothing in memory",
        FaultAction::Partition => "the link between the worker and the store is cut",
        FaultAction::Heal => "the link between the worker and the store works again",
        FaultAction::Hold => "messages between the worker and the store are held back",
        FaultAction::Release => "messages held back are delivered",
        FaultAction::Pause => "the worker is paused: its messages to and from the store wait",
        FaultAction::Resume => "the worker goes on; what waited is delivered",
    }
}

/// A fault's label: what, and when, in the scenario format's words.
pub(super) fn fault_label(action: FaultAction, at: u64) -> String {
    format!("{} at_ms={at}", action.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::event::EventKind;

    fn event(at: u64) -> Event {
        Event {
            at,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: Some("w1".into()),
            kind: EventKind::LeaseRenewed {
                version: 1,
                token: 1.into(),
            },
        }
    }

    fn crash(at: u64) -> ClusterRecord {
        ClusterRecord {
            at,
            after_event: 0,
            what: ClusterEvent::Fault {
                action: FaultAction::Crash,
                worker: "w1".into(),
                placed: None,
            },
        }
    }

    #[test]
    fn a_fault_comes_before_the_events_of_its_millisecond() {
        let events = [event(5), event(10), event(10)];
        let log = [crash(10), crash(20)];
        let placed = merge(&events, &log);
        let kinds: Vec<(u64, u32, bool)> = placed
            .iter()
            .map(|p| (p.pos.at, p.pos.rank, matches!(p.what, What::Fault { .. })))
            .collect();
        assert_eq!(
            kinds,
            [
                (5, 0, false),
                (10, 0, true),
                (10, 1, false),
                (10, 2, false),
                (20, 0, true)
            ]
        );
    }
}
