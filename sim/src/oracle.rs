//! Invariant oracles. They only observe the event log and the final store;
//! they never steer a run (SPEC D3).

use std::collections::BTreeMap;

use pai_runtime::{
    Event, EventKind, LiveEvent, ModelContent, ModelRequest, Pattern, Role, StoredThread,
};

use crate::scenario::RequestExpect;
use crate::world::ModelCallRecord;

/// Every oracle, by the name scenarios use in `oracle = "..."`.
pub const ORACLES: &[&str] = &[
    "phase_grammar",
    "T1",
    "H1",
    "H6",
    "M1",
    "S3",
    "X3",
    "request",
];

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub oracle: &'static str,
    pub run: Option<String>,
    pub message: String,
}

/// Everything the oracles observe of one run.
#[derive(Debug)]
pub struct Observed<'a> {
    pub events: &'a [Event],
    pub threads: &'a [StoredThread],
    pub calls: &'a [ModelCallRecord],
    pub live: &'a [(String, LiveEvent)],
    /// Patterns of the scenario's canonical redaction hooks.
    pub redacted: &'a [Pattern],
}

/// Runs every oracle over one scenario run.
pub fn check_all(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = check(o.events, o.threads, o.calls);
    out.extend(s3_nothing_unredacted(o));
    out.extend(h1_one_invalidation_per_commit(o.live));
    out
}

/// SPEC H1 (watchers): each watcher gets one invalidation per commit, in
/// version order: the versions it is told about rise by exactly one.
pub fn h1_one_invalidation_per_commit(live: &[(String, LiveEvent)]) -> Vec<Violation> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (name, e) in live {
        if let LiveEvent::Committed { version, .. } = e {
            if let Some(prev) = last.insert(name.as_str(), *version)
                && *version != prev + 1
            {
                out.push(Violation {
                    oracle: "H1",
                    run: None,
                    message: format!("watcher {name} was told version {version} after {prev}"),
                });
            }
        }
    }
    out
}

/// SPEC S3: with canonical redaction installed, no assistant message stored,
/// no text a watcher received, and no assistant text sent back to the model
/// matches a redaction pattern. (User messages are the user's own text.)
pub fn s3_nothing_unredacted(o: &Observed<'_>) -> Vec<Violation> {
    if o.redacted.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut flag = |run: Option<&str>, place: String, text: &str| {
        if pai_runtime::text::matches_any(text, o.redacted) {
            out.push(Violation {
                oracle: "S3",
                run: run.map(str::to_string),
                message: format!("{place} holds unredacted text {text:?}"),
            });
        }
    };
    // Each text part on its own: a tool call ends a text run (the redactor
    // flushes at it), so text on either side of a call is judged apart.
    for t in o.threads {
        for m in t.messages.iter().filter(|m| m.role == Role::Assistant) {
            for p in &m.parts {
                if let pai_runtime::Part::Text { text } = p {
                    flag(
                        m.pai.run_id.as_deref(),
                        format!("stored message #{}", m.seq),
                        text,
                    );
                }
            }
        }
    }
    // Live text runs: consecutive deltas of one step, ended by any other part.
    let mut runs: Vec<(&str, &str, u32, String)> = Vec::new();
    let mut open: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, e) in o.live {
        let LiveEvent::Part {
            run_id, step, part, ..
        } = e
        else {
            continue;
        };
        match part {
            pai_runtime::StreamPart::TextDelta(t) => {
                let current = open
                    .get(name.as_str())
                    .copied()
                    .filter(|&i| runs[i].1 == run_id.as_str() && runs[i].2 == *step);
                match current {
                    Some(i) => runs[i].3.push_str(t),
                    None => {
                        open.insert(name.as_str(), runs.len());
                        runs.push((name.as_str(), run_id.as_str(), *step, t.clone()));
                    }
                }
            }
            _ => {
                open.remove(name.as_str());
            }
        }
    }
    for (name, run, step, text) in &runs {
        flag(
            Some(run),
            format!("watcher {name}'s live text of step {step}"),
            text,
        );
    }
    for c in o.calls {
        for m in c
            .request
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
        {
            for part in &m.content {
                if let ModelContent::Text { text } = part {
                    flag(
                        Some(&c.request.run_id),
                        format!("model context of step {}", c.request.step),
                        text,
                    );
                }
            }
        }
    }
    out
}

/// SPEC H6: in every model context sent, each tool call has exactly one
/// result after it (paired by order, as providers may reuse ids) and no
/// result lacks its call.
pub fn h6_pairing(calls: &[ModelCallRecord]) -> Vec<Violation> {
    let mut out = Vec::new();
    for c in calls {
        let mut open: Vec<&str> = Vec::new();
        let mut problem = None;
        for m in &c.request.messages {
            for part in &m.content {
                match part {
                    ModelContent::ToolCall { call_id, .. } => open.push(call_id),
                    ModelContent::ToolResult { call_id, .. } => {
                        match open.iter().position(|o| *o == call_id.as_str()) {
                            Some(k) => {
                                open.remove(k);
                            }
                            None => {
                                problem = Some(format!("result {call_id} has no call before it"))
                            }
                        }
                    }
                    ModelContent::Text { .. } => {}
                }
            }
        }
        if let Some(first) = open.first() {
            problem.get_or_insert_with(|| format!("call {first} has no result"));
        }
        if let Some(p) = problem {
            out.push(Violation {
                oracle: "H6",
                run: Some(c.request.run_id.clone()),
                message: format!("model context of step {}: {p}", c.request.step),
            });
        }
    }
    out
}

/// SPEC X3: whatever failed along the way, every message the log says was
/// committed is still stored, and stored messages keep strictly rising
/// sequence numbers.
pub fn x3_nothing_committed_is_lost(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let stored: BTreeMap<(&str, &str), ()> = threads
        .iter()
        .flat_map(|t| {
            t.messages
                .iter()
                .map(move |m| ((t.id.as_str(), m.id.as_str()), ()))
        })
        .collect();
    let mut out = Vec::new();
    for e in events {
        let id = match &e.kind {
            EventKind::Admitted { trigger: m }
            | EventKind::Steered { message: m }
            | EventKind::Respond { message: m, .. }
            | EventKind::CommitStep { message: m, .. }
            | EventKind::CommitToolResults { message: m, .. } => m,
            _ => continue,
        };
        if !stored.contains_key(&(e.thread_id.as_str(), id.as_str())) {
            out.push(Violation {
                oracle: "X3",
                run: Some(e.run_id.clone()),
                message: format!("committed message {id} is not stored any more"),
            });
        }
    }
    for t in threads {
        if let Some(w) = t.messages.windows(2).find(|w| w[0].seq >= w[1].seq) {
            out.push(Violation {
                oracle: "X3",
                run: None,
                message: format!("thread {} stores #{} before #{}", t.id, w[0].seq, w[1].seq),
            });
        }
    }
    out
}

/// Runs the oracles that need no scenario knowledge.
pub fn check(
    events: &[Event],
    threads: &[StoredThread],
    calls: &[ModelCallRecord],
) -> Vec<Violation> {
    let mut out = phase_grammar(events);
    out.extend(t1_policy_before_tools(events));
    out.extend(h1_versions(events, threads));
    out.extend(m1_anchored_context(events, threads, calls));
    out.extend(h6_pairing(calls));
    out.extend(x3_nothing_committed_is_lost(events, threads));
    out.extend(requests(calls));
    out
}

/// Scenario `expect` tables on model turns: each mismatch is a violation.
pub fn requests(calls: &[ModelCallRecord]) -> Vec<Violation> {
    calls
        .iter()
        .filter_map(|c| {
            c.mismatch.as_ref().map(|m| Violation {
                oracle: "request",
                run: Some(c.request.run_id.clone()),
                message: format!("step {} ({}): {m}", c.request.step, c.outcome),
            })
        })
        .collect()
}

/// Compares a request with a turn's expectation; `None` when it matches.
pub(crate) fn request_mismatch(expect: &RequestExpect, request: &ModelRequest) -> Option<String> {
    use crate::transcript::model_message;
    let mut out = Vec::new();
    let mut field = |name: &str, expected: String, got: String| {
        if expected != got {
            out.push(format!("{name}: expected {expected}, got {got}"));
        }
    };
    if let Some(m) = &expect.model {
        field("model", m.clone(), request.route.model.clone());
    }
    if let Some(s) = &expect.settings {
        field(
            "settings",
            serde_json::to_string(s).unwrap_or_default(),
            serde_json::to_string(&request.route.settings).unwrap_or_default(),
        );
    }
    if let Some(p) = &expect.provider_options {
        field(
            "provider_options",
            serde_json::to_string(p).unwrap_or_default(),
            serde_json::to_string(&request.route.provider_options).unwrap_or_default(),
        );
    }
    if let Some(t) = &expect.tools {
        let got: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        field("tools", format!("{t:?}"), format!("{got:?}"));
    }
    if let Some(t) = expect.timeout_ms {
        field(
            "timeout_ms",
            t.to_string(),
            request
                .timeout_ms
                .map_or_else(|| "none".into(), |t| t.to_string()),
        );
    }
    if let Some(m) = &expect.messages {
        let got: Vec<String> = request.messages.iter().map(model_message).collect();
        if *m != got {
            out.push(format!(
                "messages differ:\n{}",
                crate::snapshot::diff(
                    &(m.join("\n") + "\n"),
                    &(got.join("\n") + "\n"),
                    "expected",
                    "sent"
                )
            ));
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// SPEC M1: no step's context holds a stored message appended after the
/// step started. Every user text a request carries that matches a stored user
/// message must match one at or below that step's anchor.
pub fn m1_anchored_context(
    events: &[Event],
    threads: &[StoredThread],
    calls: &[ModelCallRecord],
) -> Vec<Violation> {
    let mut anchors: BTreeMap<(&str, u32), (&str, u64)> = BTreeMap::new();
    for e in events {
        if let EventKind::ResolveModelContext { step, anchor, .. } = &e.kind {
            anchors.insert((e.run_id.as_str(), *step), (e.thread_id.as_str(), *anchor));
        }
    }
    let mut first_seq: BTreeMap<(&str, String), u64> = BTreeMap::new();
    for t in threads {
        for m in &t.messages {
            if m.role == Role::User {
                first_seq.entry((t.id.as_str(), m.text())).or_insert(m.seq);
            }
        }
    }
    let mut out = Vec::new();
    for c in calls {
        let r = &c.request;
        let Some(&(thread, anchor)) = anchors.get(&(r.run_id.as_str(), r.step)) else {
            continue;
        };
        for m in r.messages.iter().filter(|m| m.role == Role::User) {
            let text: String = m
                .content
                .iter()
                .filter_map(|c| match c {
                    ModelContent::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            if let Some(&seq) = first_seq.get(&(thread, text.clone()))
                && seq > anchor
            {
                out.push(Violation {
                    oracle: "M1",
                    run: Some(r.run_id.clone()),
                    message: format!(
                        "step {} saw message #{seq} ({text:?}) above its anchor #{anchor}",
                        r.step
                    ),
                });
            }
        }
    }
    out
}

/// Where a run is in the phase grammar of SPEC §1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    Admitted,
    Leased,
    /// After prepare_run, or after a step's after_step: a step may begin.
    Ready,
    Responded,
    Resolved,
    Prepared,
    Called,
    AttemptFailed,
    Streamed,
    Committed,
    Policy,
    Tools,
    ToolsCommitted,
    Failed,
    Released,
    Ended,
    /// A violation was reported; later events of the run are not checked.
    Broken,
}

/// SPEC §1: each run's events follow
/// `admit (lease_acquired prepare_run (respond | step*) lease_released)+ end`
/// (a steering message ends an episode and the next one continues the run),
/// where a step is `resolve_model_context prepare_model_step (around_model_call
/// attempt_failed?)+ stream commit_step tools? after_step` and tools is `before_tool_call+
/// (tool_start | tool_end | after_tool_result)+ commit_tool_results`. A run
/// that fails may stop anywhere inside its episode with `failed`, then
/// releases its lease and ends. Step numbers run 0, 1, 2, ... within a run.
/// Only the first violation of each run is reported.
pub fn phase_grammar(events: &[Event]) -> Vec<Violation> {
    use State::*;
    let mut runs: BTreeMap<&str, (State, Option<u32>)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if matches!(
            e.kind,
            EventKind::Hook(_) | EventKind::ContextLeaf { .. } | EventKind::Steered { .. }
        ) {
            continue;
        }
        let entry = runs.entry(e.run_id.as_str()).or_insert((Start, None));
        let (state, last_step) = *entry;
        if state == Broken {
            continue;
        }
        let name = e.kind.name();
        let in_episode = !matches!(state, Start | Admitted | Released | Ended | Failed);
        let next = match (state, &e.kind) {
            (Start, EventKind::Admitted { .. }) => Some(Admitted),
            (Admitted | Released, EventKind::LeaseAcquired { .. }) => Some(Leased),
            (Leased, EventKind::PrepareRun { .. }) => Some(Ready),
            (Leased, EventKind::Respond { .. }) => Some(Responded),
            (Ready, EventKind::ResolveModelContext { step, .. }) => {
                let expected = last_step.map_or(0, |s| s + 1);
                if *step != expected {
                    out.push(Violation {
                        oracle: "phase_grammar",
                        run: Some(e.run_id.clone()),
                        message: format!("step {step} began, expected step {expected}"),
                    });
                }
                entry.1 = Some(*step);
                Some(Resolved)
            }
            (Resolved, EventKind::PrepareModelStep { .. }) => Some(Prepared),
            (Prepared | Called | AttemptFailed, EventKind::ModelCall { .. }) => Some(Called),
            (Called, EventKind::AttemptFailed { .. }) => Some(AttemptFailed),
            (Called, EventKind::Stream { .. }) => Some(Streamed),
            (Streamed, EventKind::CommitStep { .. }) => Some(Committed),
            (Committed | Policy, EventKind::BeforeToolCall { .. }) => Some(Policy),
            (
                Policy | Tools,
                EventKind::ToolStart { .. }
                | EventKind::ToolEnd { .. }
                | EventKind::AfterToolResult { .. },
            ) => Some(Tools),
            (Tools, EventKind::CommitToolResults { .. }) => Some(ToolsCommitted),
            (Committed | ToolsCommitted, EventKind::AfterStep { .. }) => Some(Ready),
            (_, EventKind::Failed { .. } | EventKind::Cancelled { .. }) if in_episode => {
                Some(Failed)
            }
            (Ready | Responded | Failed, EventKind::LeaseReleased { .. }) => Some(Released),
            (Released, EventKind::Ended { .. }) => Some(Ended),
            _ => None,
        };
        match next {
            Some(s) => entry.0 = s,
            None => {
                out.push(Violation {
                    oracle: "phase_grammar",
                    run: Some(e.run_id.clone()),
                    message: format!("unexpected {name} after state {state:?}"),
                });
                entry.0 = Broken;
            }
        }
    }
    for (run, (state, _)) in runs {
        if !matches!(state, Ended | Broken) {
            out.push(Violation {
                oracle: "phase_grammar",
                run: Some(run.to_string()),
                message: format!("run never ended (last state {state:?})"),
            });
        }
    }
    out
}

/// SPEC T1: within one step, no tool starts before every `before_tool_call`
/// of that step has finished.
pub fn t1_policy_before_tools(events: &[Event]) -> Vec<Violation> {
    let mut started: BTreeMap<(&str, u32), &str> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::ToolStart { step, call_id, .. } => {
                started.entry((e.run_id.as_str(), *step)).or_insert(call_id);
            }
            EventKind::BeforeToolCall { step, call_id, .. } => {
                if let Some(first) = started.get(&(e.run_id.as_str(), *step)) {
                    out.push(Violation {
                        oracle: "T1",
                        run: Some(e.run_id.clone()),
                        message: format!(
                            "before_tool_call for {call_id} ran after tool {first} had started (step {step})"
                        ),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// SPEC H1: each commit bumps its thread's version by exactly one, so the
/// versions the log reports rise strictly and the final version equals the
/// number of commits (user messages plus the run commits in the log).
pub fn h1_versions(events: &[Event], threads: &[StoredThread]) -> Vec<Violation> {
    let mut commits: BTreeMap<&str, u64> = BTreeMap::new();
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut user_messages = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for e in events {
        let version = match &e.kind {
            // A user message (sent or steering) is one commit; the log has no
            // version for it. A run admitted for an earlier steering message
            // names a message already counted.
            EventKind::Admitted { trigger: m } | EventKind::Steered { message: m } => {
                if user_messages.insert((e.thread_id.as_str(), m.as_str())) {
                    *commits.entry(e.thread_id.as_str()).or_default() += 1;
                }
                continue;
            }
            EventKind::Respond { version, .. }
            | EventKind::CommitStep { version, .. }
            | EventKind::CommitToolResults { version, .. } => *version,
            _ => continue,
        };
        *commits.entry(e.thread_id.as_str()).or_default() += 1;
        let prev = last.insert(e.thread_id.as_str(), version);
        if prev.is_some_and(|p| version <= p) {
            out.push(Violation {
                oracle: "H1",
                run: Some(e.run_id.clone()),
                message: format!(
                    "version went from {} to {version} on thread {}",
                    prev.unwrap_or_default(),
                    e.thread_id
                ),
            });
        }
    }
    for t in threads {
        let n = commits.get(t.id.as_str()).copied().unwrap_or(0);
        if t.version != n {
            out.push(Violation {
                oracle: "H1",
                run: None,
                message: format!(
                    "thread {} is at version {} after {n} commits",
                    t.id, t.version
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use pai_runtime::{Event, EventKind, StoredThread};

    use super::*;

    fn commit(message: &str) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: "r".into(),
            kind: EventKind::CommitStep {
                step: 0,
                message: message.into(),
                version: 2,
            },
        }
    }

    #[test]
    fn x3_reports_a_committed_message_that_is_gone() {
        let thread = StoredThread {
            id: "t".into(),
            agent: "a".into(),
            owner: "o".into(),
            incarnation: 1,
            version: 2,
            messages: vec![],
            metadata: Default::default(),
            runs: vec![],
        };
        let v = x3_nothing_committed_is_lost(&[commit("m2")], &[thread]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].oracle, "X3");
    }
}
