//! The timeline's `expect_waiting` checks and what each found: one that
//! holds leaves a line too, so a reader sees what the scenario asserted,
//! not only what broke (a broken one is also the `check` oracle's
//! violation). An `expect_error` already leaves its note (`(expected)`).

use std::fmt::Write as _;

use crate::oracle::Observed;
use crate::scenario::Action;

/// The `== checks ==` section, when the timeline has an `expect_waiting`.
pub(super) fn checks(out: &mut String, o: &Observed<'_>) {
    let mut lines = String::new();
    for a in o.actions {
        let Some(m) = o.scenario.timeline.get(a.moment) else {
            continue;
        };
        let Action::ExpectWaiting(calls) = &m.action else {
            continue;
        };
        let names: Vec<String> = calls.iter().map(ToString::to_string).collect();
        let what = format!("expect_waiting [{}]", names.join(", "));
        let verdict = match &a.check {
            None => "holds".to_string(),
            Some(found) => format!("fails: {found}"),
        };
        let _ = writeln!(
            lines,
            "{:>6}ms {} {} {what}: {verdict}",
            a.at, m.client, m.thread
        );
    }
    if !lines.is_empty() {
        out.push_str("\n== checks ==\n");
        out.push_str(&lines);
    }
}
