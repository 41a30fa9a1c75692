//! One runtime event as one line of text: the hover text of its mark or
//! span. One exhaustive match (in two halves), so a new event kind cannot
//! go unshown.

use pai_runtime::{
    EventKind, FinishReason, HookNote, NoteDecision, RunDecision, StepDecision, Transition,
};

use crate::format::{
    attempt_patch, json, opt, patch, quoted, result, route, tool_call_decision,
    tool_result_decision,
};

/// The event as the transcript would say it, without time and run.
pub(super) fn describe(kind: &EventKind) -> String {
    match kind {
        EventKind::Admitted { trigger } => format!("admit trigger={trigger}"),
        EventKind::Steered { message } => format!("steered by {message} (taken at the next step)"),
        EventKind::LeaseAcquired {
            episode,
            token,
            version,
        } => format!("lease_acquired episode={episode} token={token} v{version}"),
        EventKind::Hook(n) => note(n),
        EventKind::PrepareRun {
            route: r,
            overlay,
            latest_user,
            resumed,
        } => format!(
            "prepare_run route {{{}}} overlay=+{overlay} latest_user={}{}",
            route(r),
            opt(latest_user),
            if *resumed { " (resumed)" } else { "" }
        ),
        EventKind::OnOutput { .. }
        | EventKind::RunMetadata { .. }
        | EventKind::ContextMessage { .. }
        | EventKind::Waiting { .. }
        | EventKind::Awaiting { .. }
        | EventKind::CancelRequested { .. }
        | EventKind::Answered { .. } => crate::format::waiting_event(kind),
        EventKind::Respond {
            outcome,
            reason,
            message,
            version,
            ..
        } => format!(
            "respond outcome={} reason={} commit {message} v{version}",
            outcome.as_str(),
            opt(reason)
        ),
        EventKind::Failed { phase, message } => format!("failed in {phase}: {}", quoted(message)),
        EventKind::Cancelled { phase } => format!("cancelled in {phase}"),
        EventKind::LeaseReleased { episode } => format!("lease_released episode={episode}"),
        EventKind::LeaseRenewed { .. }
        | EventKind::LeaseLost { .. }
        | EventKind::DeleteLearned { .. }
        | EventKind::TakenOver { .. } => lease(kind),
        EventKind::Ended {
            status,
            outcome,
            reason,
            version,
        } => format!(
            "end status={} outcome={} reason={}{}",
            status.as_str(),
            outcome.as_str(),
            opt(reason),
            version.map(|v| format!(" v{v}")).unwrap_or_default()
        ),
        _ => step_event(kind),
    }
}

/// A lease's renewal, loss or takeover (SPEC K3).
fn lease(kind: &EventKind) -> String {
    match kind {
        EventKind::LeaseRenewed { token, version } => {
            format!("lease_renewed token={token} v{version}")
        }
        EventKind::LeaseLost { token, reason } => {
            format!("lease_lost token={token} reason={}", quoted(reason))
        }
        EventKind::DeleteLearned {
            request,
            incarnation,
        } => format!("{request} refused: thread deleted (incarnation {incarnation})"),
        EventKind::TakenOver {
            from,
            stale_token,
            expired_at,
            next_step,
        } => format!(
            "taken_over from={} stale_token={stale_token} expired_at={expired_at}ms \
             next_step={next_step}",
            opt(from)
        ),
        other => other.name().to_string(),
    }
}

/// The events inside a step.
fn step_event(kind: &EventKind) -> String {
    match kind {
        EventKind::ContextLeaf {
            step,
            base,
            messages,
        } => {
            let leaf = if *base { "base" } else { "stored history" };
            format!("context_leaf step={step} {leaf} ({messages} messages)")
        }
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
        EventKind::ModelCall { .. } => model_call(kind),
        EventKind::AttemptFailed {
            step,
            attempt,
            error,
        } => format!(
            "attempt_failed step={step} attempt={attempt} error={}",
            quoted(error)
        ),
        EventKind::Stream { .. } => stream(kind),
        EventKind::CommitStep { .. } | EventKind::CommitToolResults { .. } => commit(kind),
        EventKind::BeforeToolCall { .. }
        | EventKind::ToolStart { .. }
        | EventKind::ToolEnd { .. }
        | EventKind::AfterToolResult { .. } => tool(kind),
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

fn model_call(kind: &EventKind) -> String {
    let EventKind::ModelCall {
        step,
        attempt,
        route: r,
        context,
        overlay,
        messages,
        tools,
        timeout_ms,
    } = kind
    else {
        return kind.name().to_string();
    };
    let mut s = format!(
        "around_model_call step={step} attempt={attempt} route {{{}}} context={context} overlay={overlay} sent={messages} tools=[{}]",
        route(r),
        tools.join(",")
    );
    if let Some(t) = timeout_ms {
        s.push_str(&format!(" timeout={t}ms"));
    }
    s
}

fn stream(kind: &EventKind) -> String {
    let EventKind::Stream {
        step,
        deltas,
        chars,
        tool_calls,
        finish,
        error,
        aborted,
    } = kind
    else {
        return kind.name().to_string();
    };
    let mut s = format!("stream step={step} deltas={deltas} chars={chars} tool_calls={tool_calls}");
    if let Some(f) = finish.map(FinishReason::as_str) {
        s.push_str(&format!(" finish={f}"));
    }
    if let Some(e) = error {
        s.push_str(&format!(" error={}", quoted(e)));
    }
    if let Some(a) = aborted {
        s.push_str(&format!(" aborted={}", quoted(a)));
    }
    s
}

fn commit(kind: &EventKind) -> String {
    match kind {
        EventKind::CommitStep {
            step,
            message,
            version,
        }
        | EventKind::CommitToolResults {
            step,
            message,
            version,
        } => format!("{} step={step} commit {message} v{version}", kind.name()),
        other => other.name().to_string(),
    }
}

fn tool(kind: &EventKind) -> String {
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
        } => {
            let mut s = format!("tool_end {} {} {}", r.call_id, r.tool, result(r));
            if let Some(d) = detail {
                s.push_str(&format!(" detail={}", quoted(d)));
            }
            s
        }
        EventKind::AfterToolResult {
            call_id, decision, ..
        } => format!(
            "after_tool_result {call_id} -> {}",
            tool_result_decision(decision)
        ),
        other => other.name().to_string(),
    }
}

/// One hook's decision inside a composition.
fn note(note: &HookNote) -> String {
    let d = match &note.decision {
        NoteDecision::Run(RunDecision::Continue(p)) => patch(p),
        NoteDecision::Run(RunDecision::Respond(r)) => format!(
            "respond outcome={} reason={}",
            r.outcome.as_str(),
            opt(&r.reason)
        ),
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
    format!("hook {} in {} -> {d}", note.hook, note.phase.as_str())
}

/// How a step hands over, in a few words.
pub(super) fn transition(t: &Transition) -> String {
    match t {
        Transition::NextStep => "next_step".to_string(),
        Transition::Steer => "steer (new episode)".to_string(),
        Transition::Wait => "wait (episode ends)".to_string(),
        Transition::Aborted { outcome, reason } => {
            format!("aborted: {} ({reason})", outcome.as_str())
        }
        Transition::Complete { reason: None } => "complete".to_string(),
        Transition::Complete { reason: Some(r) } => format!("complete ({r})"),
    }
}
