//! The timeline's own checks: `expect_waiting` (SPEC T7, T9) and
//! `expect_error`. Each one that did not hold is a violation.

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    o.actions
        .iter()
        .filter_map(|a| {
            let found = a.check.as_ref()?;
            let m = &o.scenario.timeline[a.moment];
            let message = format!("{} at {}ms on {}: {found}", m.action.name(), a.at, m.thread);
            Some(Violation::new(OracleId::Check, None, message))
        })
        .collect()
}
