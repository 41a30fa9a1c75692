//! The transcript: a plain-text story of one run with a stable layout, made to
//! be read in a snapshot diff.

use std::fmt::Write as _;

use pai_runtime::{
    Event, EventKind, Message, ModelContent, ModelMessage, NoteDecision, Part, Patch, Route,
    RoutePatch, RunDecision, StepDecision, StoredThread, ToolCallDecision, ToolResult,
    ToolResultDecision, ToolStatus, Transition,
};
use pai_runtime::{LiveEvent, StreamPart};
use serde_json::Value;

use crate::oracle::Violation;
use crate::scenario::Scenario;
use crate::world::ModelCallRecord;

/// Everything a transcript is made from.
#[derive(Debug)]
pub struct Parts<'a> {
    pub scenario: &'a Scenario,
    pub seed: u64,
    pub events: &'a [Event],
    pub calls: &'a [ModelCallRecord],
    pub threads: &'a [StoredThread],
    pub violations: &'a [Violation],
    pub notes: &'a [String],
    /// What each watcher received, in order.
    pub live: &'a [(String, LiveEvent)],
}

fn json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "<unprintable>".into())
}

fn quoted(s: &str) -> String {
    json(&Value::String(s.to_string()))
}

/// `model=small temperature=0.2 openai={...} tool_choice=required tools=[a,b]`
pub fn route(r: &Route) -> String {
    let mut out = format!("model={}", r.model);
    settings(
        &mut out,
        &serde_json::to_value(&r.settings).unwrap_or(Value::Null),
    );
    for (provider, options) in &r.provider_options {
        let _ = write!(out, " {provider}={}", json(&Value::Object(options.clone())));
    }
    if let Some(t) = &r.provider_tools {
        let _ = write!(out, " provider_tools={}", json(&Value::Array(t.clone())));
    }
    if let Some(c) = &r.tool_choice {
        let _ = write!(
            out,
            " tool_choice={}",
            json(&serde_json::to_value(c).unwrap_or_default())
        );
    }
    if let Some(t) = &r.tools {
        let _ = write!(out, " tools=[{}]", t.join(","));
    }
    out
}

fn settings(out: &mut String, v: &Value) {
    if let Value::Object(m) = v {
        for (k, v) in m {
            let _ = write!(out, " {k}={}", json(v));
        }
    }
}

fn route_patch(p: &RoutePatch) -> String {
    let mut parts = Vec::new();
    if let Some(m) = &p.model {
        parts.push(format!("model={m} (fresh route)"));
    }
    let mut s = String::new();
    settings(
        &mut s,
        &serde_json::to_value(&p.settings).unwrap_or(Value::Null),
    );
    if !s.is_empty() {
        parts.push(s.trim_start().to_string());
    }
    for (provider, options) in &p.provider_options {
        parts.push(format!(
            "{provider}={}",
            json(&Value::Object(options.clone()))
        ));
    }
    if let Some(t) = &p.provider_tools {
        parts.push(format!("provider_tools={}", json(&Value::Array(t.clone()))));
    }
    if let Some(c) = &p.tool_choice {
        parts.push(format!(
            "tool_choice={}",
            json(&serde_json::to_value(c).unwrap_or_default())
        ));
    }
    if let Some(t) = &p.tools {
        parts.push(format!("tools=[{}]", t.join(",")));
    }
    parts.join(" ")
}

fn patch(p: &Patch) -> String {
    let mut parts = Vec::new();
    if !p.route.is_empty() {
        parts.push(format!("route {{{}}}", route_patch(&p.route)));
    }
    if let Some(r) = &p.replace_model_messages {
        parts.push(format!("replace_messages[{}]", r.len()));
    }
    for m in &p.append_model_messages {
        parts.push(format!("append {}", model_message(m)));
    }
    if parts.is_empty() {
        "continue".into()
    } else {
        format!("continue {}", parts.join(", "))
    }
}

fn role(r: pai_runtime::Role) -> &'static str {
    match r {
        pai_runtime::Role::System => "system",
        pai_runtime::Role::User => "user",
        pai_runtime::Role::Assistant => "assistant",
        pai_runtime::Role::Tool => "tool",
    }
}

/// `user: "hi"`, `assistant: "x" call(c1 search {...})`
pub fn model_message(m: &ModelMessage) -> String {
    let mut out = format!("{}:", role(m.role));
    for c in &m.content {
        match c {
            ModelContent::Text { text } => {
                let _ = write!(out, " {}", quoted(text));
            }
            ModelContent::ToolCall {
                call_id,
                tool,
                input,
            } => {
                let _ = write!(out, " call({call_id} {tool} {})", json(input));
            }
            ModelContent::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                let kind = if *is_error { "error" } else { "result" };
                let _ = write!(out, " {kind}({call_id} {})", json(output));
            }
        }
    }
    out
}

fn stream_part(p: &StreamPart) -> String {
    match p {
        StreamPart::TextDelta(t) => format!("text {}", quoted(t)),
        StreamPart::ToolCall {
            call_id,
            tool,
            input,
        } => format!("tool_call {call_id} {tool} {}", json(input)),
        StreamPart::Finish(r) => format!("finish {}", r.as_str()),
        StreamPart::Error(e) => format!("error {}", quoted(e)),
    }
}

fn tool_call_decision(d: &ToolCallDecision) -> String {
    match d {
        ToolCallDecision::Continue => "continue".into(),
        ToolCallDecision::ReplaceInput(v) => format!("replace_input {}", json(v)),
        ToolCallDecision::Reject { message } => format!("reject {}", quoted(message)),
    }
}

fn tool_result_decision(d: &ToolResultDecision) -> String {
    match d {
        ToolResultDecision::Continue => "continue".into(),
        ToolResultDecision::ReplaceOutput(v) => format!("replace_output {}", json(v)),
    }
}

fn result(r: &ToolResult) -> String {
    match r.status {
        ToolStatus::Output => format!("output {}", json(&r.output)),
        ToolStatus::Error => format!("error({}) {}", r.source.as_str(), json(&r.output)),
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("-")
}

/// One event as one line (without time and run).
pub fn event(kind: &EventKind) -> String {
    match kind {
        EventKind::Admitted { trigger } => format!("admit trigger={trigger}"),
        EventKind::Steered { message } => format!("steered by {message} (taken at the next step)"),
        EventKind::ContextLeaf { base, messages, .. } => format!(
            "  · context leaf: {} ({messages} messages)",
            if *base {
                "base from next(base)"
            } else {
                "stored history"
            }
        ),
        EventKind::AttemptFailed { attempt, error, .. } => {
            format!("attempt_failed attempt={attempt} error={}", quoted(error))
        }
        EventKind::LeaseAcquired { episode, token } => {
            format!("lease_acquired episode={episode} token={token}")
        }
        EventKind::Hook(note) => {
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
                NoteDecision::ModelCall { error: None } => "stream".into(),
                NoteDecision::Transform { installed: true } => "stage".into(),
                NoteDecision::Transform { installed: false } => "none".into(),
                NoteDecision::ModelCall { error: Some(e) } => format!("error {}", quoted(e)),
            };
            format!("  · {} {} -> {d}", note.phase.as_str(), note.hook)
        }
        EventKind::PrepareRun { route: r, overlay } => {
            format!("prepare_run route {{{}}} overlay=+{overlay}", route(r))
        }
        EventKind::Respond {
            outcome,
            reason,
            message,
            version,
        } => format!(
            "respond outcome={} reason={} commit {message} v{version}",
            outcome.as_str(),
            opt(reason)
        ),
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
        } => {
            let mut s = format!(
                "around_model_call step={step} attempt={attempt} route {{{}}} context={context} overlay={overlay} sent={messages} tools=[{}]",
                route(r),
                tools.join(",")
            );
            if let Some(t) = timeout_ms {
                let _ = write!(s, " timeout={t}ms");
            }
            s
        }
        EventKind::Stream {
            step,
            deltas,
            chars,
            tool_calls,
            finish,
            error,
            aborted,
        } => {
            let mut s =
                format!("stream step={step} deltas={deltas} chars={chars} tool_calls={tool_calls}");
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
        EventKind::CommitStep {
            step,
            message,
            version,
        } => format!("commit_step step={step} commit {message} v{version}"),
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
                let _ = write!(s, " detail={}", quoted(d));
            }
            s
        }
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
        } => format!("commit_tool_results step={step} commit {message} v{version}"),
        EventKind::AfterStep {
            step,
            decision,
            transition,
        } => {
            let t = match transition {
                Transition::NextStep => "next_step".to_string(),
                Transition::Steer => "steer (new episode)".to_string(),
                Transition::Aborted { outcome, reason } => {
                    format!("end: aborted outcome={} reason={reason}", outcome.as_str())
                }
                Transition::Complete { reason: None } => "complete".to_string(),
                Transition::Complete { reason: Some(r) } => format!("complete ({r})"),
            };
            format!(
                "after_step step={step} decision={} -> {t}",
                decision.as_str()
            )
        }
        EventKind::Failed { phase, message } => {
            format!("failed in {phase}: {}", quoted(message))
        }
        EventKind::Cancelled { phase } => format!("cancelled in {phase}"),
        EventKind::LeaseReleased { episode } => format!("lease_released episode={episode}"),
        EventKind::Ended {
            status,
            outcome,
            reason,
        } => format!(
            "end status={} outcome={} reason={}",
            status.as_str(),
            outcome.as_str(),
            opt(reason)
        ),
    }
}

fn message(out: &mut String, m: &Message) {
    let vis = match (m.visibility.transcript, m.visibility.context) {
        (true, true) => "transcript+context",
        (true, false) => "transcript only",
        (false, true) => "context only",
        (false, false) => "hidden",
    };
    let producer = serde_json::to_value(m.pai.producer).unwrap_or_default();
    let _ = write!(
        out,
        "#{} {} {} by {} [{vis}] t={}ms",
        m.seq,
        m.id,
        role(m.role),
        producer.as_str().unwrap_or("?"),
        m.pai.updated_at
    );
    if let Some(r) = &m.pai.run_id {
        let _ = write!(out, " run={r}");
    }
    if let Some(s) = m.pai.step {
        let _ = write!(out, " step={s}");
    }
    if let Some(o) = m.pai.outcome {
        let _ = write!(out, " outcome={}", o.as_str());
    }
    if let Some(r) = &m.pai.reason {
        let _ = write!(out, " reason={r}");
    }
    out.push('\n');
    for p in &m.parts {
        match p {
            Part::Text { text } => {
                let _ = writeln!(out, "    text {}", quoted(text));
            }
            Part::ToolCall {
                call_id,
                tool,
                input,
            } => {
                let _ = writeln!(out, "    tool_call {call_id} {tool} {}", json(input));
            }
            Part::ToolResult {
                call_id,
                tool,
                status,
                source,
                output,
            } => {
                let r = ToolResult {
                    call_id: call_id.clone(),
                    tool: tool.clone(),
                    status: *status,
                    source: *source,
                    output: output.clone(),
                };
                let _ = writeln!(out, "    tool_result {call_id} {tool} {}", result(&r));
            }
        }
    }
}

/// Renders the whole transcript.
pub fn render(p: &Parts<'_>) -> String {
    let mut out = String::new();
    let s = p.scenario;
    let _ = writeln!(out, "scenario: {}", s.name);
    let _ = writeln!(out, "rules: {}", s.rules.join(", "));
    let _ = writeln!(out, "seed: {}", p.seed);
    let _ = writeln!(out, "expect: {}", s.expect);

    out.push_str("\n== events ==\n");
    for e in p.events {
        let _ = writeln!(out, "{:>6}ms {} {}", e.at, e.run_id, event(&e.kind));
    }

    out.push_str("\n== model calls ==\n");
    if p.calls.is_empty() {
        out.push_str("(none)\n");
    }
    for (i, c) in p.calls.iter().enumerate() {
        let r = &c.request;
        let _ = writeln!(
            out,
            "call {} at {}ms run={} step={} script={} {} route {{{}}}",
            i + 1,
            c.at,
            r.run_id,
            r.step,
            c.script,
            c.outcome,
            route(&r.route)
        );
        if let Some(t) = r.timeout_ms {
            let _ = writeln!(out, "    timeout {t}ms");
        }
        if let Some(m) = &c.mismatch {
            let _ = writeln!(out, "    EXPECT MISMATCH {}", m.replace('\n', "\n    "));
        }
        let tools: Vec<&str> = r.tools.iter().map(|t| t.name.as_str()).collect();
        let _ = writeln!(out, "    tools [{}]", tools.join(","));
        if !r.instructions.is_empty() {
            let _ = writeln!(out, "    instructions {}", quoted(&r.instructions));
        }
        for m in &r.messages {
            let _ = writeln!(out, "    {}", model_message(m));
        }
    }

    for t in p.threads {
        let _ = writeln!(
            out,
            "\n== thread {} (agent {}, owner {}, incarnation {}, version {}) ==",
            t.id, t.agent, t.owner, t.incarnation, t.version
        );
        for m in &t.messages {
            message(&mut out, m);
        }
        out.push_str("runs:\n");
        for r in &t.runs {
            let _ = writeln!(
                out,
                "    {} {} outcome={} reason={} steps={}",
                r.id,
                r.status.as_str(),
                r.outcome.map_or("-", |o| o.as_str()),
                opt(&r.reason),
                r.steps
            );
        }
    }

    if !p.live.is_empty() {
        out.push_str("\n== live ==\n");
        for (name, e) in p.live {
            let line = match e {
                LiveEvent::Part {
                    at,
                    run_id,
                    step,
                    part,
                } => format!(
                    "{at:>6}ms {name} {run_id} step={step} {}",
                    stream_part(part)
                ),
                LiveEvent::Aborted {
                    at,
                    run_id,
                    step,
                    reason,
                } => format!(
                    "{at:>6}ms {name} {run_id} step={step} aborted {}",
                    quoted(reason)
                ),
                LiveEvent::Committed { at, version } => {
                    format!("{at:>6}ms {name} refresh: version {version}")
                }
                LiveEvent::RunEnded {
                    at,
                    run_id,
                    status,
                    outcome,
                    reason,
                } => format!(
                    "{at:>6}ms {name} {run_id} ended status={} outcome={} reason={}",
                    status.as_str(),
                    outcome.as_str(),
                    opt(reason)
                ),
            };
            let _ = writeln!(out, "{line}");
        }
    }

    out.push_str("\n== oracles ==\n");
    if p.violations.is_empty() {
        out.push_str("all quiet\n");
    }
    for v in p.violations {
        let _ = writeln!(
            out,
            "VIOLATION {} run={}: {}",
            v.oracle,
            v.run.as_deref().unwrap_or("-"),
            v.message
        );
    }
    for n in p.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
