//! SPEC T7, approval decided per call: no call whose tool needed approval
//! for its input runs without an approval, and no call whose tool did not
//! waits. Judged from the log (`before_tool_call` replacements, `wait` and
//! `awaiting` lists, answers, tool starts) and the stored calls' inputs,
//! with the tool's rule evaluated again on the simulator's side: a
//! scripted tool's predicate by `scenario::Predicate`, a registered tool's
//! by the author's own tool (`Tool::needs_approval` of a copy the oracle
//! builds), never by the runtime's step loop.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use pai_runtime::event::EventKind;
use pai_runtime::hook::ToolCallDecision;
use pai_runtime::store::Answer;
use pai_runtime::{Event, Part, Tool};
use serde_json::Value;

use super::observed::{Observed, Violation};
use crate::scenario::{Approval, Behaviour, OracleId, ToolDef};

/// One tool's rule as the oracle evaluates it.
struct Rule<'a> {
    approval: &'a Approval,
    /// A registered tool's own decision, from a copy built for the oracle.
    own: Option<Arc<dyn Tool>>,
}

impl Rule<'_> {
    /// Whether a call with `input` needs approval; `None` when the
    /// author's tool panics deciding (that call is not judged).
    fn needs(&self, input: &Value) -> Option<bool> {
        if self.approval.holds(input) {
            return Some(true);
        }
        match &self.own {
            None => Some(false),
            Some(t) => catch_unwind(AssertUnwindSafe(|| t.needs_approval(input))).ok(),
        }
    }
}

/// A call by thread and call id.
type Key<'a> = (&'a str, &'a str);

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let rules: BTreeMap<&str, Rule<'_>> = o.scenario.agent.tools.iter().filter_map(rule).collect();
    if rules.is_empty() {
        return Vec::new();
    }
    let inputs = inputs(o);
    let log = Log::read(o.events);
    let mut out = Vec::new();
    for (key, (run, tool)) in &log.decided {
        let (Some(rule), Some(input)) = (rules.get(tool), inputs.get(key)) else {
            continue;
        };
        let Some(needs) = rule.needs(input) else {
            continue;
        };
        let message = match needs {
            true => log.unapproved_start(key, o.cluster.is_some()).then(|| {
                format!(
                    "call {} of {tool} ran without an approval, though its input needs one ({input})",
                    key.1
                )
            }),
            false => log.asked.contains(key).then(|| {
                format!(
                    "call {} of {tool} waited for an answer, though its input needs no approval ({input})",
                    key.1
                )
            }),
        };
        if let Some(message) = message {
            out.push(Violation::new(OracleId::T7, Some(run), message));
        }
    }
    out
}

/// The rule of a tool the runtime runs (a client tool's calls always wait:
/// T9 judges those).
fn rule(t: &ToolDef) -> Option<(&str, Rule<'_>)> {
    let own = match &t.behaviour {
        Behaviour::Client => return None,
        Behaviour::Registered(u) => Some(u.build(&t.name)),
        _ => None,
    };
    let rule = Rule {
        approval: &t.approval,
        own,
    };
    Some((t.name.as_str(), rule))
}

/// Each stored call's input, replaced where `before_tool_call` replaced it:
/// the input the call would run with.
fn inputs<'a>(o: &Observed<'a>) -> BTreeMap<Key<'a>, &'a Value> {
    let mut out = BTreeMap::new();
    for t in o.threads {
        for m in &t.messages {
            for p in &m.parts {
                if let Part::ToolCall { call_id, input, .. } = p {
                    out.insert((t.id.as_str(), call_id.as_str()), input);
                }
            }
        }
    }
    for e in o.events {
        if let EventKind::BeforeToolCall {
            call_id,
            decision: ToolCallDecision::ReplaceInput(v),
            ..
        } = &e.kind
        {
            out.insert((e.thread_id.as_str(), call_id.as_str()), v);
        }
    }
    out
}

/// What the log says of each call.
#[derive(Default)]
struct Log<'a> {
    /// Calls the policy let through (not rejected), with run and tool.
    decided: BTreeMap<Key<'a>, (&'a str, &'a str)>,
    /// Calls that waited, were answerable, or took an answer.
    asked: BTreeSet<Key<'a>>,
    /// Each call's approvals and starts, by position in the log.
    approved: BTreeMap<Key<'a>, usize>,
    started: BTreeMap<Key<'a>, Vec<usize>>,
}

impl<'a> Log<'a> {
    fn read(events: &'a [Event]) -> Log<'a> {
        let mut log = Log::default();
        for (i, e) in events.iter().enumerate() {
            let thread = e.thread_id.as_str();
            match &e.kind {
                EventKind::BeforeToolCall {
                    call_id,
                    tool,
                    decision,
                    ..
                } if !matches!(decision, ToolCallDecision::Reject { .. }) => {
                    let run = (e.run_id.as_str(), tool.as_str());
                    log.decided.insert((thread, call_id.as_str()), run);
                }
                EventKind::Waiting { calls, .. } | EventKind::Awaiting { calls, .. } => {
                    log.asked.extend(calls.iter().map(|c| (thread, c.as_str())));
                }
                EventKind::Answered {
                    call_id, answer, ..
                } => {
                    let key = (thread, call_id.as_str());
                    log.asked.insert(key);
                    if *answer == Answer::Approved {
                        log.approved.entry(key).or_insert(i);
                    }
                }
                EventKind::ToolStart { call_id, .. } => {
                    let key = (thread, call_id.as_str());
                    log.started.entry(key).or_default().push(i);
                }
                _ => {}
            }
        }
        log
    }

    /// Whether the call started with no approval before it (among workers,
    /// where logs interleave out of the store's order: with none at all).
    fn unapproved_start(&self, key: &Key<'a>, cluster: bool) -> bool {
        let Some(starts) = self.started.get(key) else {
            return false;
        };
        match (self.approved.get(key), cluster) {
            (None, _) => true,
            (Some(_), true) => false,
            (Some(&at), false) => starts.iter().any(|&s| s < at),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::scenario::Predicate;

    fn ev(kind: EventKind) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: "r".into(),
            worker: None,
            kind,
        }
    }

    fn before(call: &str) -> Event {
        ev(EventKind::BeforeToolCall {
            step: 1,
            call_id: call.into(),
            tool: "book".into(),
            decision: ToolCallDecision::Continue,
        })
    }

    fn start(call: &str) -> Event {
        ev(EventKind::ToolStart {
            step: 1,
            call_id: call.into(),
            tool: "book".into(),
            input: json!({}),
            idempotency_key: format!("r/{call}"),
        })
    }

    fn approve(call: &str) -> Event {
        ev(EventKind::Answered {
            call_id: call.into(),
            answer: Answer::Approved,
            version: 2,
        })
    }

    /// SPEC T7: a start before its approval is unapproved; one after is not.
    #[test]
    fn t7_a_start_needs_an_approval_before_it() {
        let events = [before("a"), start("a"), approve("a")];
        let log = Log::read(&events);
        assert!(log.unapproved_start(&("t", "a"), false));
        assert!(!log.unapproved_start(&("t", "a"), true));
        let events = [before("a"), approve("a"), start("a")];
        let log = Log::read(&events);
        assert!(!log.unapproved_start(&("t", "a"), false));
        assert!(log.asked.contains(&("t", "a")));
    }

    #[test]
    fn t7_the_scripted_rule_is_the_predicate() {
        let p = Predicate::parse("fare > 500").unwrap();
        let approval = Approval::When(p);
        let rule = Rule {
            approval: &approval,
            own: None,
        };
        assert_eq!(rule.needs(&json!({"fare": 500})), Some(false));
        assert_eq!(rule.needs(&json!({"fare": 501})), Some(true));
    }
}
