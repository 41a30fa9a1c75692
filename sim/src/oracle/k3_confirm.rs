//! SPEC K3 (with K5) among workers: a holder that cannot renew stops. The
//! moment that matters most is just before a tool with side effects
//! starts: the worker must know it still holds the run's lease, or a call
//! whose result the next holder may commit runs again. Judged from each
//! worker's own events, as data: after a `before_tool_call` (the worker
//! decided a call), a `tool_start` of that worker for that run comes only
//! once a `lease_renewed` of that worker for that run was logged. A
//! renewal that was refused or never answered logs nothing, so a worker
//! that ignores it and starts its tools is caught.
//!
//! Only among workers: one process holds no lease that can be lost.

use std::collections::BTreeMap;

use pai_runtime::{Event, event::EventKind};

use super::observed::{ClusterObs, Violation};
use crate::scenario::OracleId;

pub(super) fn check(c: &ClusterObs) -> Vec<Violation> {
    judge(&c.raw_events)
}

fn judge(events: &[Event]) -> Vec<Violation> {
    // Per (worker, run): whether a renewal was answered since the worker
    // last decided a call.
    let mut confirmed: BTreeMap<(&str, &str), bool> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Some(worker) = e.worker.as_deref() else {
            continue;
        };
        let key = (worker, e.run_id.as_str());
        match &e.kind {
            EventKind::BeforeToolCall { .. } => {
                confirmed.insert(key, false);
            }
            EventKind::LeaseRenewed { .. } => {
                confirmed.insert(key, true);
            }
            EventKind::ToolStart { call_id, .. }
                if !confirmed.get(&key).copied().unwrap_or(false) =>
            {
                let message = format!(
                    "{worker} started {call_id} at {}ms without a renewal of its lease answered since it decided the call",
                    e.at
                );
                out.push(Violation::new(OracleId::K3, Some(&e.run_id), message));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::hook::ToolCallDecision;

    fn ev(at: u64, worker: &str, kind: EventKind) -> Event {
        Event {
            at,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: Some(worker.to_string()),
            kind,
        }
    }

    fn decided() -> EventKind {
        EventKind::BeforeToolCall {
            step: 0,
            call_id: "c1".into(),
            tool: "charge".to_string(),
            decision: ToolCallDecision::Continue,
        }
    }

    fn renewed() -> EventKind {
        EventKind::LeaseRenewed {
            token: 1.into(),
            version: 3,
        }
    }

    fn started() -> EventKind {
        EventKind::ToolStart {
            step: 0,
            call_id: "c1".into(),
            tool: "charge".to_string(),
            input: serde_json::Value::Null,
            idempotency_key: "r/c1".to_string(),
        }
    }

    #[test]
    fn a_start_after_a_renewal_is_quiet() {
        let log = [
            ev(1, "w1", decided()),
            ev(2, "w1", renewed()),
            ev(2, "w1", started()),
            ev(2, "w1", started()),
        ];
        assert!(judge(&log).is_empty());
    }

    #[test]
    fn a_start_with_no_renewal_since_the_decision_is_caught() {
        let log = [
            ev(1, "w1", renewed()),
            ev(2, "w1", decided()),
            ev(3, "w1", started()),
        ];
        let found = judge(&log);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].message.contains("w1 started c1 at 3ms"),
            "{found:?}"
        );
    }

    #[test]
    fn another_workers_renewal_does_not_count() {
        let log = [
            ev(1, "w1", decided()),
            ev(2, "w2", renewed()),
            ev(3, "w1", started()),
        ];
        assert_eq!(judge(&log).len(), 1);
    }
}
