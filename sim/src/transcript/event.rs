//! One runtime event as one line of text: the transcript's line (without
//! its time and run) and the HTML timeline's hover text are this one
//! rendering. One exhaustive match sends each kind to its family's helper
//! (run, step, tool, lease), so a new event kind cannot go unrendered; in
//! the helper each arm is one line or one helper.

use std::fmt::Write as _;

use pai_runtime::{
    Event, Millis,
    event::{EventKind, Transition},
    hook::{HookNote, NoteDecision, RunDecision, StepDecision, ToolResult},
    model::{FinishReason, Route},
};

use crate::format::{
    attempt_patch, json, opt, patch, quoted, result, route, tool_call_decision,
    tool_result_decision,
};

/// The transcript line of `e`: its text, indented under its phase when it
/// happens inside one (a hook's decision, a context leaf), and for an event
/// that belongs to no run but names no thread itself, the thread (a
/// `rewrite_delivered`).
pub(super) fn event_line(e: &Event) -> String {
    let line = describe(&e.kind);
    match e.kind {
        EventKind::Hook(_) | EventKind::ContextLeaf { .. } => format!("  · {line}"),
        EventKind::RewriteDelivered { .. } => line.replacen(
            "rewrite_delivered ",
            &format!("rewrite_delivered thread={} ", e.thread_id),
            1,
        ),
        _ => line,
    }
}

/// The event as one line of text, without time, run or indentation: each
/// kind goes to the helper of its family, whose one arm renders it.
pub(crate) fn describe(kind: &EventKind) -> String {
    if let Some(line) = super::facade::facade_event(kind) {
        return line;
    }
    match kind {
        EventKind::Admitted { .. }
        | EventKind::Steered { .. }
        | EventKind::ContextLeaf { .. }
        | EventKind::Hook(_)
        | EventKind::PrepareRun { .. }
        | EventKind::Respond { .. }
        | EventKind::Failed { .. }
        | EventKind::Cancelled { .. }
        | EventKind::Ended { .. } => run_event(kind),
        EventKind::ResolveModelContext { .. }
        | EventKind::PrepareModelStep { .. }
        | EventKind::ModelCall { .. }
        | EventKind::Stream { .. }
        | EventKind::AttemptFailed { .. }
        | EventKind::CommitStep { .. }
        | EventKind::AfterStep { .. } => step_event(kind),
        EventKind::BeforeToolCall { .. }
        | EventKind::ToolStart { .. }
        | EventKind::ToolEnd { .. }
        | EventKind::AfterToolResult { .. }
        | EventKind::CommitToolResults { .. } => tool_event(kind),
        EventKind::LeaseAcquired { .. }
        | EventKind::LeaseRenewed { .. }
        | EventKind::LeaseLost { .. }
        | EventKind::LeaseReleased { .. }
        | EventKind::TakenOver { .. }
        | EventKind::DeleteLearned { .. }
        | EventKind::CancelLearned { .. } => lease_event(kind),
        EventKind::OnOutput { .. }
        | EventKind::RunMetadata { .. }
        | EventKind::ContextMessage { .. }
        | EventKind::Waiting { .. }
        | EventKind::Awaiting { .. }
        | EventKind::CancelRequested { .. }
        | EventKind::Answered { .. } => crate::format::waiting_event(kind),
        EventKind::Mutated { .. }
        | EventKind::MutationRefused { .. }
        | EventKind::HistoryRewritten { .. }
        | EventKind::RewriteDelivered { .. }
        | EventKind::ThreadRead { .. }
        | EventKind::ThreadDeleted { .. }
        | EventKind::ThreadCreated { .. }
        | EventKind::CompactionStarted { .. }
        | EventKind::Compacted { .. }
        | EventKind::CompactionSkipped { .. } => String::new(),
    }
}

/// A run's own events: admission, steering, its context leaf, the
/// composed hooks' decisions, the run-level phases and its end.
/// Any other kind shows as its name.
fn run_event(kind: &EventKind) -> String {
    match kind {
        EventKind::Admitted { trigger } => format!("admit trigger={trigger}"),
        EventKind::Steered { message } => format!("steered by {message} (taken at the next step)"),
        EventKind::ContextLeaf { base, messages, .. } => {
            let leaf = if *base {
                "base from next(base)"
            } else {
                "stored history"
            };
            format!("context leaf: {leaf} ({messages} messages)")
        }
        EventKind::Hook(n) => note(n),
        EventKind::PrepareRun {
            route: r,
            overlay,
            latest_user,
            resumed,
        } => {
            let latest = opt(latest_user);
            let resumed = if *resumed { " (resumed)" } else { "" };
            format!(
                "prepare_run route {{{}}} overlay=+{overlay} latest_user={latest}{resumed}",
                route(r)
            )
        }
        EventKind::Respond {
            latest_user,
            outcome,
            reason,
            message,
            version,
        } => {
            let (o, r, u) = (outcome.as_str(), opt(reason), opt(latest_user));
            format!("respond to {u} outcome={o} reason={r} commit {message} v{version}")
        }
        EventKind::Failed { phase, message } => format!("failed in {phase}: {}", quoted(message)),
        EventKind::Cancelled { phase } => format!("cancelled in {phase}"),
        EventKind::Ended {
            status,
            outcome,
            reason,
            version,
        } => {
            let (s, o, r) = (status.as_str(), outcome.as_str(), opt(reason));
            let v = version.map(|v| format!(" v{v}")).unwrap_or_default();
            format!("end status={s} outcome={o} reason={r}{v}")
        }
        other => other.name().to_string(),
    }
}

/// A step's model side: its context, the provider attempts and their
/// streams, its commit and how it hands over.
/// Any other kind shows as its name.
fn step_event(kind: &EventKind) -> String {
    match kind {
        EventKind::ResolveModelContext {
            step,
            anchor,
            messages,
        } => format!("resolve_model_context step={step} anchor=#{anchor} messages={messages}"),
        EventKind::PrepareModelStep {
            step,
            route: r,
            messages,
        } => format!(
            "prepare_model_step step={step} route {{{}}} messages={messages}",
            route(r)
        ),
        EventKind::ModelCall {
            step,
            attempt,
            route: r,
            context,
            overlay,
            messages,
            tools,
            timeout_ms,
        } => model_call(
            *step,
            *attempt,
            r,
            (*context, *overlay, *messages),
            tools,
            *timeout_ms,
        ),
        EventKind::Stream {
            step,
            deltas,
            chars,
            tool_calls,
            finish,
            error,
            aborted,
        } => stream(
            *step,
            (*deltas, *chars, *tool_calls),
            *finish,
            error,
            aborted,
        ),
        EventKind::AttemptFailed { attempt, error, .. } => {
            format!("attempt_failed attempt={attempt} error={}", quoted(error))
        }
        EventKind::CommitStep {
            step,
            message,
            version,
        } => format!("commit_step step={step} commit {message} v{version}"),
        EventKind::AfterStep {
            step,
            decision,
            transition: t,
        } => format!(
            "after_step step={step} decision={} -> {}",
            decision.as_str(),
            transition(t)
        ),
        other => other.name().to_string(),
    }
}

/// A step's tool side: the hooks around each call, the call and the
/// commit of the results.
/// Any other kind shows as its name.
fn tool_event(kind: &EventKind) -> String {
    match kind {
        EventKind::BeforeToolCall {
            call_id,
            tool,
            decision,
            ..
        } => format!(
            "before_tool_call {call_id} {tool} -> {}",
            tool_call_decision(decision)
        ),
        EventKind::ToolStart {
            call_id,
            tool,
            input,
            ..
        } => format!("tool_start {call_id} {tool} {}", json(input)),
        EventKind::ToolEnd {
            result: r, detail, ..
        } => tool_end(r, detail),
        EventKind::AfterToolResult {
            call_id, decision, ..
        } => format!(
            "after_tool_result {call_id} -> {}",
            tool_result_decision(decision)
        ),
        EventKind::CommitToolResults {
            step,
            message,
            version,
            metadata,
        } => {
            let with = match metadata {
                true => " + run metadata",
                false => "",
            };
            format!("commit_tool_results step={step} commit {message} v{version}{with}")
        }
        other => other.name().to_string(),
    }
}

/// The lease and the workers (SPEC K1–K5): acquiring, renewing, losing
/// and releasing it, a takeover, and a refusal learned from a deleted thread.
/// Any other kind shows as its name.
fn lease_event(kind: &EventKind) -> String {
    match kind {
        EventKind::LeaseAcquired {
            episode,
            token,
            version,
        } => format!("lease_acquired episode={episode} token={token} v{version}"),
        EventKind::LeaseRenewed { token, version } => {
            format!("lease_renewed token={token} v{version}")
        }
        EventKind::LeaseLost { token, reason } => {
            format!("lease_lost token={token} reason={}", quoted(reason))
        }
        EventKind::LeaseReleased { episode } => format!("lease_released episode={episode}"),
        EventKind::TakenOver {
            from,
            stale_token,
            expired_at,
            next_step,
        } => format!(
            "taken_over from={} stale_token={stale_token} expired_at={expired_at}ms next_step={next_step}",
            opt(from)
        ),
        EventKind::DeleteLearned {
            request,
            incarnation,
        } => match incarnation {
            Some(n) => format!("{request} refused: thread deleted (incarnation {n})"),
            None => format!("{request} refused: thread deleted"),
        },
        EventKind::CancelLearned { request } => {
            format!("cancel_learned at {request}: the run was cancelled")
        }
        other => other.name().to_string(),
    }
}

/// One hook's decision inside a composition.
fn note(note: &HookNote) -> String {
    let d = match &note.decision {
        NoteDecision::Run(RunDecision::Continue(p)) => patch(p),
        NoteDecision::Run(RunDecision::Respond(r)) => {
            format!(
                "respond outcome={} reason={}",
                r.outcome.as_str(),
                opt(&r.reason)
            )
        }
        NoteDecision::Step(StepDecision::Continue(p)) => patch(p),
        NoteDecision::ToolCall(d) => tool_call_decision(d),
        NoteDecision::ToolResult(d) => tool_result_decision(d),
        NoteDecision::AfterStep(d) => d.as_str().into(),
        NoteDecision::Context { messages } => format!("{messages} messages"),
        NoteDecision::Next { patch } => format!("next {{{}}}", attempt_patch(patch)),
        NoteDecision::ModelCall { error: None } => "stream".into(),
        NoteDecision::ModelCall { error: Some(e) } => format!("error {}", quoted(e)),
        NoteDecision::Transform { installed: true } => "stage".into(),
        NoteDecision::Transform { installed: false } => "none".into(),
    };
    format!("{} {} -> {d}", note.phase.as_str(), note.hook)
}

/// One provider attempt; `counts` are context, overlay and sent messages.
fn model_call(
    step: u32,
    attempt: u32,
    r: &Route,
    (context, overlay, sent): (usize, usize, usize),
    tools: &[String],
    timeout_ms: Option<Millis>,
) -> String {
    let mut s = format!(
        "around_model_call step={step} attempt={attempt} route {{{}}} context={context} overlay={overlay} sent={sent} tools=[{}]",
        route(r),
        tools.join(",")
    );
    if let Some(t) = timeout_ms {
        let _ = write!(s, " timeout={t}ms");
    }
    s
}

/// A consumed provider stream; `counts` are deltas, characters and tool calls.
fn stream(
    step: u32,
    (deltas, chars, tool_calls): (usize, usize, usize),
    finish: Option<FinishReason>,
    error: &Option<String>,
    aborted: &Option<String>,
) -> String {
    let mut s = format!("stream step={step} deltas={deltas} chars={chars} tool_calls={tool_calls}");
    if let Some(f) = finish {
        let _ = write!(s, " finish={}", f.as_str());
    }
    if let Some(e) = error {
        let _ = write!(s, " error={}", quoted(e));
    }
    if let Some(a) = aborted {
        let _ = write!(s, " aborted={}", quoted(a));
    }
    s
}

fn tool_end(r: &ToolResult, detail: &Option<String>) -> String {
    let mut s = format!("tool_end {} {} {}", r.call_id, r.tool, result(r));
    if let Some(d) = detail {
        let _ = write!(s, " detail={}", quoted(d));
    }
    s
}

/// How a step hands over, in a few words.
pub(crate) fn transition(t: &Transition) -> String {
    match t {
        Transition::NextStep => "next_step".to_string(),
        Transition::Steer => "steer (new episode)".to_string(),
        Transition::Wait => "wait (episode ends)".to_string(),
        Transition::Aborted { outcome, reason } => {
            format!("end: aborted outcome={} reason={reason}", outcome.as_str())
        }
        Transition::Refused { kind, explanation } => match explanation.is_empty() {
            true => format!("end: refused by the provider ({})", kind.as_str()),
            false => format!(
                "end: refused by the provider ({}) {}",
                kind.as_str(),
                crate::format::quoted(explanation)
            ),
        },
        Transition::Complete { reason: None } => "complete".to_string(),
        Transition::Complete { reason: Some(r) } => format!("complete ({r})"),
    }
}
