//! What generated cases reached (issue: coverage), counted over the events of
//! each case: phases, decisions, transitions, tool outcomes, aborts,
//! fallbacks, queueing, steers and cancels. What no case reached is a blind
//! spot of the generator, or of the runtime's reachability.

use std::collections::BTreeMap;

use pai_runtime::{
    AfterStepDecision, Event, EventKind, NoteDecision, Part, ResultSource, RunDecision, RunStage,
    RunStatus, StoredThread, ToolCallDecision, ToolResultDecision, Transition,
};

/// Every behaviour counted, in the order the table lists them.
pub const KEYS: &[&str] = &[
    "phase.prepare_run",
    "phase.resolve_model_context",
    "phase.prepare_model_step",
    "phase.around_model_call",
    "phase.transform_step_stream",
    "phase.before_tool_call",
    "phase.after_tool_result",
    "phase.after_step",
    "decision.respond",
    "decision.run_patch",
    "decision.step_patch",
    "decision.replace_input",
    "decision.reject",
    "decision.replace_output",
    "decision.after_step.next_step",
    "decision.after_step.complete",
    "decision.next_with_patch",
    "transition.next_step",
    "transition.steer",
    "transition.aborted",
    "transition.complete",
    "transition.max_steps",
    "tool.output",
    "tool.fail",
    "tool.throw",
    "tool.rejected",
    "tool.invalid_input",
    "tool.unknown_tool",
    "tool.cancelled",
    "stream.abort",
    "stream.provider_error",
    "attempt.failed",
    "attempt.fallback",
    "queue.overlap",
    "steer.stored",
    "steer.new_run",
    "cancel.queued",
    "cancel.active",
    "run.completed",
    "run.failed",
    "run.cancelled",
    "run.hook_error",
];

/// How often each behaviour was reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage(BTreeMap<&'static str, u64>);

impl Coverage {
    fn hit(&mut self, key: &'static str) {
        *self.0.entry(key).or_default() += 1;
    }

    fn hit_if(&mut self, reached: bool, key: &'static str) {
        if reached {
            self.hit(key);
        }
    }

    /// Adds what one case reached: its events, and the tool results stored.
    pub fn add(&mut self, events: &[Event], threads: &[StoredThread]) {
        for m in threads.iter().flat_map(|t| &t.messages) {
            for p in &m.parts {
                if let Part::ToolResult { source, .. } = p {
                    self.hit(tool(*source));
                }
            }
        }
        let mut active: BTreeMap<&str, &str> = BTreeMap::new();
        let mut last_failed_attempt: Option<(&str, u32)> = None;
        for e in events {
            if let Some(k) = phase(&e.kind) {
                self.hit(k);
            }
            match &e.kind {
                EventKind::Hook(n) => self.note(&n.decision),
                EventKind::Admitted { .. } if active.contains_key(e.thread_id.as_str()) => {
                    self.hit("queue.overlap");
                }
                EventKind::LeaseAcquired { .. } => {
                    active.insert(&e.thread_id, &e.run_id);
                }
                EventKind::Steered { .. } => self.hit("steer.stored"),
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
        self.steer_runs(events);
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

    /// Adds another coverage (another shard or worker).
    pub fn merge(&mut self, other: &Coverage) {
        for (k, n) in &other.0 {
            *self.0.entry(k).or_default() += n;
        }
    }

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
        EventKind::Hook(n) if n.phase == pai_runtime::Phase::TransformStepStream => {
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
        Transition::Complete { reason: None } => "transition.complete",
        Transition::Complete { reason: Some(_) } => "transition.max_steps",
    }
}
