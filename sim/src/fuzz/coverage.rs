//! What generated cases reached (issue: coverage), counted over the events of
//! each case: phases, decisions, transitions, tool kinds and outcomes,
//! aborts, fallbacks, queueing, steers, cancels, waiting and its answers,
//! `on_output` handlers and the metadata hooks. What no case reached is a
//! blind spot of the generator, or of the runtime's reachability.

use std::collections::{BTreeMap, BTreeSet};

use pai_runtime::{
    Event, Part,
    event::{EventKind, RunStage, Transition},
    hook::{AfterStepDecision, NoteDecision, RunDecision, ToolCallDecision, ToolResultDecision},
    message::ResultSource,
    store::{RunStatus, StoredThread},
};

use crate::hooks::HookSpec;
use crate::scenario::{ApprovalSpec, ScenarioSpec};

pub use super::coverage_keys::KEYS;
use super::coverage_keys::NAMED_HOOKS;

/// How often each behaviour was reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage(BTreeMap<&'static str, u64>);

impl Coverage {
    fn hit(&mut self, key: &'static str) {
        *self.0.entry(key).or_default() += 1;
    }

    /// A case that ran on memory and on SQLite and was compared.
    pub(super) fn compared_stores(&mut self) {
        self.hit("diff.sqlite");
    }

    fn hit_if(&mut self, reached: bool, key: &'static str) {
        if reached {
            self.hit(key);
        }
    }

    /// Adds what one case reached: its events, the tool results stored, and
    /// what its waiting calls met.
    pub fn add(&mut self, spec: &ScenarioSpec, events: &[Event], threads: &[StoredThread]) {
        self.waiting(spec, events);
        for m in threads.iter().flat_map(|t| &t.messages) {
            for p in &m.parts {
                if let Part::ToolResult { source, .. } = p {
                    self.hit(tool(*source));
                }
            }
        }
        self.events(events);
        self.crossings(spec, events);
    }

    /// What each event reached: phases, hook decisions, queues, steers,
    /// failed attempts and fallbacks, stream ends, hand-overs, run ends.
    fn events(&mut self, events: &[Event]) {
        let mut active: BTreeMap<&str, &str> = BTreeMap::new();
        let mut last_failed_attempt: Option<(&str, u32)> = None;
        for e in events {
            if let Some(k) = phase(&e.kind) {
                self.hit(k);
            }
            match &e.kind {
                EventKind::Hook(n) => {
                    self.note(&n.decision);
                    let named = NAMED_HOOKS.iter().find(|(p, _)| n.hook.starts_with(p));
                    if let Some((_, key)) = named {
                        self.hit(key);
                    }
                }
                EventKind::Admitted { .. } if active.contains_key(e.thread_id.as_str()) => {
                    self.hit("queue.overlap");
                }
                EventKind::LeaseAcquired { .. } => {
                    active.insert(&e.thread_id, &e.run_id);
                }
                EventKind::Steered { .. } => self.hit("steer.stored"),
                EventKind::Mutated { visibility, .. }
                    if !visibility.is_empty() && !e.run_id.is_empty() =>
                {
                    self.hit("visibility.mid_run");
                }
                EventKind::AttemptFailed { step, .. } => {
                    self.hit("attempt.failed");
                    last_failed_attempt = Some((&e.run_id, *step));
                }
                EventKind::ModelCall { step, .. } => {
                    let retried = last_failed_attempt.take() == Some((&e.run_id, *step));
                    self.hit_if(retried, "attempt.fallback");
                }
                EventKind::Stream { aborted, error, .. } => {
                    if aborted.is_some() {
                        self.hit("stream.abort");
                    }
                    if error.is_some() {
                        self.hit("stream.provider_error");
                    }
                }
                EventKind::AfterStep { transition, .. } => self.hit(transition_key(transition)),
                EventKind::Failed {
                    phase: RunStage::Phase(_),
                    message,
                } if !provider_failure(message) => self.hit("run.hook_error"),
                EventKind::Ended { status, reason, .. } => {
                    self.ended(*status, reason.as_deref());
                    if active.get(e.thread_id.as_str()) == Some(&e.run_id.as_str()) {
                        active.remove(e.thread_id.as_str());
                    }
                }
                _ => {}
            }
        }
    }

    /// The crossings of features the case reached (issue 25).
    fn crossings(&mut self, spec: &ScenarioSpec, events: &[Event]) {
        self.steer_runs(events);
        let on_resume = spec.lifecycle.iter().any(|h| match h.library() {
            Some(HookSpec::Fail(f)) => f.on_resume,
            Some(HookSpec::Delay(d)) => d.on_resume,
            _ => false,
        });
        let resumed = events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PrepareRun { resumed: true, .. }));
        self.hit_if(on_resume && resumed, "cross.hook_on_resume");
        for key in super::crossings::reached(events) {
            self.hit(key);
        }
        let by_id = super::crossings::answer_by_call_id(spec, events);
        self.hit_if(by_id, "cross.answer_by_call_id");
        let late = super::crossings::answer_after_cancel(spec, events);
        self.hit_if(late, "cross.answer_after_cancel");
        let cut_off = super::crossings::hook_write_cut_off(events);
        self.hit_if(cut_off, "cross.hook_write_cut_off");
        let (redacted, taken) = super::crossings::summary_redacted(spec, events);
        self.hit_if(redacted, "cross.summary_redacted");
        self.hit_if(taken, "cross.summary_redacted_cut_off");
        self.replayed(spec, events);
    }

    /// A case whose default model replays recordings, and what it met.
    fn replayed(&mut self, spec: &ScenarioSpec, events: &[Event]) {
        if spec.model.replay.is_empty() {
            return;
        }
        self.hit("replay.case");
        let any = |f: fn(&EventKind) -> bool| events.iter().any(|e| f(&e.kind));
        self.hit_if(
            any(|k| matches!(k, EventKind::Waiting { .. })),
            "cross.replay_and_wait",
        );
        self.hit_if(!spec.workers.is_empty(), "cross.replay_among_workers");
        let transform = |k: &EventKind| matches!(k, EventKind::Hook(n) if n.phase == pai_runtime::hook::Phase::TransformStepStream);
        self.hit_if(any(transform), "cross.replay_through_a_transform");
        let cancelled = |k: &EventKind| matches!(k, EventKind::CancelRequested { .. });
        self.hit_if(any(cancelled), "cross.replay_and_cancel");
        let cut = spec.model.replay.iter().any(|r| r.contains("/cut-"));
        self.hit_if(cut, "replay.cut");
        let reached = |k: &EventKind| matches!(k, EventKind::Stream { error: Some(e), .. } if e.contains("the stream was cut"));
        self.hit_if(any(reached), "replay.cut_reached_the_run");
        let refused = |k: &EventKind| matches!(k, EventKind::Stream { finish: Some(f), .. } if f.refusal().is_some());
        self.hit_if(any(refused), "replay.refused");
        self.hit_if(stream_answered(events), "cross.replay_stream_answered");
    }

    fn note(&mut self, d: &NoteDecision) {
        let key = match d {
            NoteDecision::Run(RunDecision::Respond(_)) => "decision.respond",
            NoteDecision::Run(RunDecision::Continue(p)) if !p.is_empty() => "decision.run_patch",
            NoteDecision::Step(s) if *s != Default::default() => "decision.step_patch",
            NoteDecision::ToolCall(ToolCallDecision::ReplaceInput(_)) => "decision.replace_input",
            NoteDecision::ToolCall(ToolCallDecision::Reject { .. }) => "decision.reject",
            NoteDecision::ToolResult(ToolResultDecision::ReplaceOutput(_)) => {
                "decision.replace_output"
            }
            NoteDecision::AfterStep(AfterStepDecision::NextStep) => "decision.after_step.next_step",
            NoteDecision::AfterStep(AfterStepDecision::Complete) => "decision.after_step.complete",
            NoteDecision::Next { patch } if *patch != Default::default() => {
                "decision.next_with_patch"
            }
            _ => return,
        };
        self.hit(key);
    }

    fn ended(&mut self, status: RunStatus, reason: Option<&str>) {
        match status {
            RunStatus::Completed => self.hit("run.completed"),
            RunStatus::Failed => self.hit("run.failed"),
            _ => {
                self.hit("run.cancelled");
                let queued = reason == Some("cancelled while queued");
                self.hit(if queued {
                    "cancel.queued"
                } else {
                    "cancel.active"
                });
            }
        }
    }

    /// Waiting and its answers (SPEC T6, T7, T9): the kinds of the calls
    /// the policy saw, answers taken and refused, resumed episodes, sends
    /// queued and cancels landing while a run waits, `on_output` handlers,
    /// and what hooks wrote.
    fn waiting(&mut self, spec: &ScenarioSpec, events: &[Event]) {
        let kind = |tool: &str| {
            let t = spec
                .agent
                .tools
                .iter()
                .find(|t| t.name() == tool)?
                .scripted()?;
            Some(match (t.client, &t.approval) {
                (true, _) => "tool.kind.client",
                (_, ApprovalSpec::Flag(true)) => "tool.kind.approval",
                (_, ApprovalSpec::When(_)) => "tool.kind.approval_when",
                _ => "tool.kind.backend",
            })
        };
        // Calls of tools whose approval depends on the input (T7): which
        // waited, which ran unasked (both sides of the predicate).
        let mut when_calls: BTreeSet<&str> = BTreeSet::new();
        let mut asked: BTreeSet<&str> = BTreeSet::new();
        // Each thread's run that waits now, from its `wait` to its next lease.
        let mut waits: BTreeMap<&str, &str> = BTreeMap::new();
        let mut answers = 0;
        for e in events {
            let thread = e.thread_id.as_str();
            match &e.kind {
                EventKind::BeforeToolCall { tool, call_id, .. } => {
                    if let Some(k) = kind(tool) {
                        self.hit(k);
                        if k == "tool.kind.approval_when" {
                            when_calls.insert(call_id);
                        }
                    }
                }
                EventKind::Waiting { calls, .. } => {
                    waits.insert(thread, &e.run_id);
                    for c in calls.iter().filter(|c| when_calls.contains(c.as_str())) {
                        if asked.insert(c) {
                            self.hit("tool.approval_when.waited");
                        }
                    }
                }
                EventKind::ToolStart { call_id, .. }
                    if when_calls.contains(call_id.as_str())
                        && !asked.contains(call_id.as_str()) =>
                {
                    self.hit("tool.approval_when.ran_unasked");
                }
                EventKind::LeaseAcquired { .. } | EventKind::Ended { .. }
                    if waits.get(thread) == Some(&e.run_id.as_str()) =>
                {
                    waits.remove(thread);
                }
                EventKind::Admitted { .. } if waits.contains_key(thread) => {
                    self.hit("queue.behind_waiting");
                }
                EventKind::Answered {
                    answer, call_id, ..
                } => {
                    asked.insert(call_id);
                    answers += 1;
                    self.hit(match answer.as_str() {
                        "approved" => "answer.approved",
                        "denied" => "answer.denied",
                        _ => "answer.submitted",
                    });
                }
                EventKind::PrepareRun { resumed: true, .. } => self.hit("run.resumed"),
                EventKind::Cancelled {
                    phase: RunStage::Resume,
                } => self.hit("cancel.waiting"),
                EventKind::OnOutput { changed, .. } => {
                    self.hit("on_output.ran");
                    self.hit_if(*changed, "on_output.wrote");
                }
                EventKind::RunMetadata { version } => {
                    self.hit("metadata.written");
                    self.hit_if(version.is_none(), "metadata.staged");
                }
                EventKind::CommitToolResults { metadata: true, .. } => {
                    self.hit("metadata.with_results")
                }
                EventKind::ContextMessage { .. } => self.hit("context_message.stored"),
                _ => {}
            }
        }
        // An answer the runtime refused (no such call, not waiting, answered
        // already, the wrong kind, an output of the wrong shape) changes
        // nothing, so it leaves no `answer` event behind (T9).
        let asked = spec
            .timeline
            .iter()
            .filter(|t| t.approve.is_some() || t.deny.is_some() || t.submit_result.is_some());
        for _ in answers..asked.count() {
            self.hit("answer.refused");
        }
    }

    /// Runs started by a steer their own run could not take.
    fn steer_runs(&mut self, events: &[Event]) {
        let steers: Vec<&str> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Steered { message } => Some(message.as_str()),
                _ => None,
            })
            .collect();
        for e in events {
            if let EventKind::Admitted { trigger } = &e.kind
                && steers.contains(&trigger.as_str())
            {
                self.hit("steer.new_run");
            }
        }
    }

    /// What a case among workers reached: how many workers it had, each
    /// fault carried out (by name), and whether a run's lease went to
    /// another worker than the one that held it before (K3).
    pub fn cluster(&mut self, workers: usize, faults: &[&'static str], events: &[Event]) {
        self.hit_if(workers > 0, "workers.case");
        self.hit_if(workers >= 3, "workers.three_or_more");
        for name in faults {
            match KEYS.iter().find(|k| k.strip_prefix("fault.") == Some(name)) {
                Some(key) => self.hit(key),
                None => debug_assert!(false, "a fault with no counter: {name}"),
            }
        }
        let mut holder: BTreeMap<&str, &str> = BTreeMap::new();
        let mut taken_over = false;
        for e in events {
            let (EventKind::LeaseAcquired { .. }, Some(w)) = (&e.kind, &e.worker) else {
                continue;
            };
            if let Some(before) = holder.insert(e.run_id.as_str(), w.as_str()) {
                taken_over |= before != w.as_str();
            }
        }
        self.hit_if(taken_over, "lease.takeover");
    }

    /// Counts whether a case with runtime faults was judged against its
    /// fault-free twin (`judged`), or why not.
    pub(super) fn twin(&mut self, counter: Option<&str>) {
        let Some(counter) = counter else { return };
        let key = KEYS.iter().find(|k| {
            k.strip_prefix("twin.") == Some(counter)
                || k.strip_prefix("twin.not_judged.") == Some(counter)
        });
        match key {
            Some(key) => self.hit(key),
            None => debug_assert!(false, "a twin counter with no key: {counter}"),
        }
    }

    /// Counts a case with a timeline entry placed after a moment of a run.
    pub(super) fn placed_after(&mut self, spec: &ScenarioSpec) {
        self.hit_if(
            spec.timeline.iter().any(|e| e.after.is_some()),
            "timeline.after",
        );
    }

    /// Counts a case in which a fault placed at a store request fired
    /// (issue 25: the instants timed faults rarely land on).
    pub fn fault_at_request(&mut self, fired: bool) {
        self.hit_if(fired, "cross.fault_at_request");
    }

    /// Counts a case in which a fault placed at a worker's renewal fired
    /// just before its tools would start (issue 25, K3).
    pub fn renew_before_tools(&mut self, hit: bool) {
        self.hit_if(hit, "cross.renew_before_tools");
    }

    /// Counts the taker crossings a case reached (`taker::reached`).
    pub(super) fn taker(&mut self, reached: &std::collections::BTreeSet<&'static str>) {
        for key in super::taker::KEYS {
            self.hit_if(reached.contains(key), key);
        }
    }

    /// Counts a case in which, among workers, a fault hit a worker around
    /// its run's compaction on a thread deleted meanwhile (issue 38).
    pub fn fault_near_a_deleted_compaction(&mut self, hit: bool) {
        self.hit_if(hit, "cross.fault_near_a_deleted_compaction");
    }

    /// Counts a case in which a watcher among workers heard, through the
    /// store's change feed, the commit of a worker's claim (issue 25).
    pub fn watch_among_workers(&mut self, heard: bool) {
        self.hit_if(heard, "cross.watch_among_workers");
    }

    /// Adds another coverage (another shard or worker).
    pub fn merge(&mut self, other: &Coverage) {
        for (k, n) in &other.0 {
            *self.0.entry(k).or_default() += n;
        }
    }

    /// How many times the cases reached behaviour `key` (one of
    /// [`COVERAGE_KEYS`](super::COVERAGE_KEYS)); 0 for a key never reached or
    /// unknown.
    pub fn count(&self, key: &str) -> u64 {
        self.0.get(key).copied().unwrap_or(0)
    }

    /// The behaviours no case reached.
    pub fn blind_spots(&self) -> Vec<&'static str> {
        KEYS.iter()
            .copied()
            .filter(|k| self.count(k) == 0)
            .collect()
    }
}

/// A failure the provider caused, not a hook.
fn provider_failure(message: &str) -> bool {
    [
        "provider error",
        "model attempt",
        "the run was stopped",
        "model ",
    ]
    .iter()
    .any(|p| message.starts_with(p))
}

fn phase(kind: &EventKind) -> Option<&'static str> {
    Some(match kind {
        EventKind::PrepareRun { .. } | EventKind::Respond { .. } => "phase.prepare_run",
        EventKind::ResolveModelContext { .. } => "phase.resolve_model_context",
        EventKind::PrepareModelStep { .. } => "phase.prepare_model_step",
        EventKind::ModelCall { .. } => "phase.around_model_call",
        EventKind::Hook(n) if n.phase == pai_runtime::hook::Phase::TransformStepStream => {
            "phase.transform_step_stream"
        }
        EventKind::BeforeToolCall { .. } => "phase.before_tool_call",
        EventKind::AfterToolResult { .. } => "phase.after_tool_result",
        EventKind::AfterStep { .. } => "phase.after_step",
        _ => return None,
    })
}

fn tool(source: ResultSource) -> &'static str {
    match source {
        ResultSource::Tool => "tool.output",
        ResultSource::Fail => "tool.fail",
        ResultSource::Throw => "tool.throw",
        ResultSource::Rejected => "tool.rejected",
        ResultSource::InvalidInput => "tool.invalid_input",
        ResultSource::UnknownTool => "tool.unknown_tool",
        ResultSource::Cancelled => "tool.cancelled",
        ResultSource::Denied => "tool.denied",
        ResultSource::Client => "tool.client",
    }
}

fn transition_key(t: &Transition) -> &'static str {
    match t {
        Transition::NextStep => "transition.next_step",
        Transition::Steer => "transition.steer",
        Transition::Wait => "transition.wait",
        Transition::Aborted { .. } => "transition.aborted",
        Transition::Refused { .. } => "transition.refused",
        Transition::Complete { reason: None } => "transition.complete",
        Transition::Complete { reason: Some(_) } => "transition.max_steps",
    }
}

/// A later attempt of a step whose earlier attempt did not fail before its
/// stream: a hook read that stream and answered it (`fallback` with
/// `stream_errors` or `refusals`).
fn stream_answered(events: &[Event]) -> bool {
    let mut failed: BTreeSet<(&str, u32, u32)> = BTreeSet::new();
    for e in events {
        let run = e.run_id.as_str();
        match &e.kind {
            EventKind::AttemptFailed { step, attempt, .. } => {
                failed.insert((run, *step, *attempt));
            }
            EventKind::ModelCall { step, attempt, .. }
                if *attempt > 1 && !failed.contains(&(run, *step, attempt - 1)) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use pai_runtime::store::FencingToken;

    fn acquired(run: &str, worker: &str, episode: u32) -> Event {
        Event {
            at: 0,
            thread_id: "t".into(),
            run_id: run.into(),
            worker: Some(worker.into()),
            kind: EventKind::LeaseAcquired {
                episode,
                token: FencingToken::from(u64::from(episode)),
                version: u64::from(episode),
            },
        }
    }

    /// A run's lease passing to another worker is a takeover; the same
    /// worker again (a restart, a resume) is not; each fault is counted
    /// under its own name.
    #[test]
    fn cluster_counts_workers_faults_and_takeovers() {
        let mut c = Coverage::default();
        let same = [acquired("r1", "w1", 1), acquired("r1", "w1", 2)];
        c.cluster(2, &["crash", "restart"], &same);
        assert_eq!(c.count("workers.case"), 1);
        assert_eq!(c.count("workers.three_or_more"), 0);
        assert_eq!((c.count("fault.crash"), c.count("fault.restart")), (1, 1));
        assert_eq!(c.count("lease.takeover"), 0);
        let other = [
            acquired("r1", "w1", 1),
            acquired("r2", "w2", 1),
            acquired("r1", "w2", 2),
        ];
        c.cluster(3, &["pause", "resume", "pause"], &other);
        assert_eq!(c.count("lease.takeover"), 1);
        assert_eq!(c.count("workers.three_or_more"), 1);
        assert_eq!(c.count("fault.pause"), 2);
        c.cluster(0, &[], &[]);
        assert_eq!(c.count("workers.case"), 2);
    }
}
