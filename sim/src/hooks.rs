//! The built-in hook library: each scenario `[[lifecycle]]` entry becomes one hook.

use std::collections::BTreeMap;

use pai_runtime::{
    AfterStepDecision, AfterStepInput, AttemptPatch, BoxStream, ContextInput, ContextNext, HookCx,
    HookError, HookFuture, HookResult, Lifecycle, ModelContent, ModelMessage, ModelNext,
    ModelRequest, Part, Patch, Phase, Phases, Response, Role, RoutePatch, RunDecision, RunInput,
    StepDecision, StepInput, ToolCallDecision, ToolCallInput, ToolResultDecision, ToolResultInput,
};

use pai_runtime::{
    Abort, Emit, StreamInput, StreamPart, StreamTransform, Verdict, guard_text,
    inspect_text_deltas, redact_text_deltas,
};

use crate::scenario::{
    AfterStepSpec, HookLevel, HookSpec, MessageRole, MessageSpec, PhaseName, TransformSpec,
};

/// The runtime context scenarios run with.
#[derive(Debug, Clone, Default)]
pub struct SimContext {
    /// The scenario's `[docs]`: keyword → text, for the `rag` hook.
    pub docs: BTreeMap<String, String>,
}

/// Marker in planted panic messages, so the binary's panic hook can keep them quiet.
pub const PLANTED_PANIC: &str = "[planted panic]";

/// Installs a panic hook that keeps planted panics (scenario hooks and tools
/// built to panic) out of the output; any other panic is reported as before.
pub fn quiet_planted_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if !text.starts_with(PLANTED_PANIC) {
            previous(info);
        }
    }));
}

/// Builds the hooks of a scenario's lifecycle, in order.
pub fn build(specs: &[HookSpec]) -> Vec<Box<dyn Lifecycle<SimContext>>> {
    specs
        .iter()
        .enumerate()
        .map(|(i, spec)| Box::new(SimHook::new(i, spec.clone())) as Box<dyn Lifecycle<SimContext>>)
        .collect()
}

/// One configured hook.
#[derive(Debug)]
struct SimHook {
    name: String,
    spec: HookSpec,
    phases: Phases,
}

fn kind(spec: &HookSpec) -> &'static str {
    match spec {
        HookSpec::SystemMessage { .. } => "system_message",
        HookSpec::Route { .. } => "route",
        HookSpec::ReplaceMessages { .. } => "replace_messages",
        HookSpec::Rag { .. } => "rag",
        HookSpec::RecentWindow { .. } => "recent_window",
        HookSpec::ResolveTwice { .. } => "resolve_twice",
        HookSpec::SlowResolver { .. } => "slow_resolver",
        HookSpec::BaseContext { .. } => "base_context",
        HookSpec::HistoryProbe { .. } => "history_probe",
        HookSpec::Fallback { .. } => "fallback",
        HookSpec::Timeout { .. } => "timeout",
        HookSpec::Redact { .. } => "redact",
        HookSpec::Uppercase { .. } => "uppercase",
        HookSpec::StreamGuard { .. } => "stream_guard",
        HookSpec::RejectTool { .. } => "reject_tool",
        HookSpec::ReplaceToolInput { .. } => "replace_tool_input",
        HookSpec::ReplaceToolOutput { .. } => "replace_tool_output",
        HookSpec::AfterStep { .. } => "after_step",
        HookSpec::Guardrail { .. } => "guardrail",
        HookSpec::Fail { .. } => "fail",
    }
}

fn given_name(spec: &HookSpec) -> Option<&String> {
    match spec {
        HookSpec::SystemMessage { name, .. }
        | HookSpec::Route { name, .. }
        | HookSpec::ReplaceMessages { name, .. }
        | HookSpec::Rag { name }
        | HookSpec::RecentWindow { name, .. }
        | HookSpec::ResolveTwice { name }
        | HookSpec::SlowResolver { name, .. }
        | HookSpec::BaseContext { name, .. }
        | HookSpec::HistoryProbe { name, .. }
        | HookSpec::Fallback { name, .. }
        | HookSpec::Timeout { name, .. }
        | HookSpec::Redact { name, .. }
        | HookSpec::Uppercase { name }
        | HookSpec::StreamGuard { name, .. }
        | HookSpec::RejectTool { name, .. }
        | HookSpec::ReplaceToolInput { name, .. }
        | HookSpec::ReplaceToolOutput { name, .. }
        | HookSpec::AfterStep { name, .. }
        | HookSpec::Guardrail { name, .. }
        | HookSpec::Fail { name, .. } => name.as_ref(),
    }
}

fn level_phase(level: HookLevel) -> Phase {
    match level {
        HookLevel::Run => Phase::PrepareRun,
        HookLevel::Step => Phase::PrepareModelStep,
        HookLevel::Attempt => Phase::AroundModelCall,
    }
}

fn phase_of(p: PhaseName) -> Phase {
    match p {
        PhaseName::PrepareRun => Phase::PrepareRun,
        PhaseName::ResolveModelContext => Phase::ResolveModelContext,
        PhaseName::PrepareModelStep => Phase::PrepareModelStep,
        PhaseName::AroundModelCall => Phase::AroundModelCall,
        PhaseName::BeforeToolCall => Phase::BeforeToolCall,
        PhaseName::AfterToolResult => Phase::AfterToolResult,
        PhaseName::AfterStep => Phase::AfterStep,
    }
}

/// A scenario message as the model sees it.
pub(crate) fn model_message(m: &MessageSpec) -> ModelMessage {
    ModelMessage {
        role: match m.role {
            MessageRole::System => Role::System,
            MessageRole::User => Role::User,
            MessageRole::Assistant => Role::Assistant,
        },
        content: vec![ModelContent::Text {
            text: m.text.clone(),
        }],
    }
}

/// A redaction stage; patterns were checked when the scenario loaded.
pub(crate) fn redactor(patterns: &[String], replacement: &str) -> Box<dyn StreamTransform> {
    let patterns = pai_runtime::text::patterns(patterns).unwrap_or_default();
    redact_text_deltas(patterns, replacement)
}

/// A live or canonical stage that upper-cases text.
pub(crate) struct Uppercase;

impl StreamTransform for Uppercase {
    fn push(&mut self, part: StreamPart, out: &mut Emit) {
        match part {
            StreamPart::TextDelta(t) => out.text(t.to_uppercase()),
            other => out.part(other),
        }
    }
}

/// A watcher's live stages.
pub(crate) fn live_stages(specs: &[TransformSpec]) -> Vec<Box<dyn StreamTransform>> {
    specs
        .iter()
        .map(|s| match s {
            TransformSpec::Redact {
                patterns,
                replacement,
            } => redactor(patterns, replacement),
            TransformSpec::Uppercase => Box::new(Uppercase) as Box<dyn StreamTransform>,
        })
        .collect()
}

/// The text of the newest user message among model messages.
fn latest_user_text(messages: &[ModelMessage]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| {
            m.content
                .iter()
                .filter_map(|c| match c {
                    ModelContent::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect()
        })
}

impl SimHook {
    fn new(index: usize, spec: HookSpec) -> SimHook {
        let phase = match &spec {
            HookSpec::SystemMessage { at, .. }
            | HookSpec::Route { at, .. }
            | HookSpec::ReplaceMessages { at, .. } => level_phase(*at),
            HookSpec::Rag { .. } => Phase::PrepareModelStep,
            HookSpec::RecentWindow { .. }
            | HookSpec::ResolveTwice { .. }
            | HookSpec::SlowResolver { .. }
            | HookSpec::BaseContext { .. }
            | HookSpec::HistoryProbe { .. } => Phase::ResolveModelContext,
            HookSpec::Fallback { .. } | HookSpec::Timeout { .. } => Phase::AroundModelCall,
            HookSpec::Redact { .. } | HookSpec::Uppercase { .. } | HookSpec::StreamGuard { .. } => {
                Phase::TransformStepStream
            }
            HookSpec::RejectTool { .. } | HookSpec::ReplaceToolInput { .. } => {
                Phase::BeforeToolCall
            }
            HookSpec::ReplaceToolOutput { .. } => Phase::AfterToolResult,
            HookSpec::AfterStep { .. } => Phase::AfterStep,
            HookSpec::Guardrail { .. } => Phase::PrepareRun,
            HookSpec::Fail { phase, .. } => phase_of(*phase),
        };
        SimHook {
            name: given_name(&spec)
                .cloned()
                .unwrap_or_else(|| format!("{}#{index}", kind(&spec))),
            spec,
            phases: Phases::only(phase),
        }
    }

    fn route_patch(&self) -> Option<RoutePatch> {
        match &self.spec {
            HookSpec::Route {
                model,
                settings,
                provider_options,
                provider_tools,
                tool_choice,
                tools,
                ..
            } => Some(RoutePatch {
                model: model.clone(),
                settings: settings.clone(),
                provider_options: provider_options.clone(),
                provider_tools: provider_tools.clone(),
                tool_choice: tool_choice.clone(),
                tools: tools.clone(),
            }),
            _ => None,
        }
    }

    /// The patch a message or route hook contributes at run or step level;
    /// `latest_user` is the newest user text the hook sees.
    fn patch(&self, latest_user: Option<&str>) -> Option<Patch> {
        match &self.spec {
            HookSpec::SystemMessage {
                text,
                with_latest_user,
                ..
            } => Some(Patch::append_system(
                match (with_latest_user, latest_user) {
                    (true, Some(u)) => format!("{text} {u}"),
                    _ => text.clone(),
                },
            )),
            HookSpec::Route { .. } => self.route_patch().map(Patch::route),
            HookSpec::ReplaceMessages { messages, .. } => Some(Patch {
                replace_model_messages: Some(messages.iter().map(model_message).collect()),
                ..Patch::default()
            }),
            _ => None,
        }
    }

    /// Whether an `if_model` condition holds for the route the hook sees.
    fn model_matches(&self, model: &str) -> bool {
        match &self.spec {
            HookSpec::SystemMessage {
                if_model: Some(m), ..
            } => m == model,
            _ => true,
        }
    }

    /// The step filter of a hook, if any.
    fn only_step(&self) -> Option<u32> {
        match &self.spec {
            HookSpec::SystemMessage { step, .. }
            | HookSpec::Route { step, .. }
            | HookSpec::ReplaceMessages { step, .. }
            | HookSpec::AfterStep { step, .. }
            | HookSpec::Fail { step, .. } => *step,
            _ => None,
        }
    }

    fn applies_at(&self, step: u32) -> bool {
        self.only_step().is_none_or(|s| s == step)
    }

    /// A `fail` hook's error for this phase and step, if it fires. Panics when
    /// configured to.
    fn fail(&self, phase: Phase, step: Option<u32>) -> HookResult<()> {
        if let HookSpec::Fail {
            phase: p,
            message,
            panic,
            ..
        } = &self.spec
            && phase_of(*p) == phase
            && step.is_none_or(|s| self.applies_at(s))
        {
            if *panic {
                panic!("{PLANTED_PANIC} {message}");
            }
            return Err(HookError::new(message.clone()));
        }
        Ok(())
    }

    /// The `history_probe` report: what each history read returns.
    fn probe(input: &ContextInput<'_>, page: usize) -> HookResult<ModelMessage> {
        let h = input.history;
        let anchor = h.anchor();
        let all = h.collect(1, u64::MAX)?;
        let seqs: Vec<String> = all.iter().map(|m| format!("#{}", m.seq)).collect();
        let tail = h.model_messages(anchor.saturating_sub(1).max(1), anchor)?;
        let mut pages = Vec::new();
        let mut cursor = None;
        for _ in 0..8 {
            let p = h.before(cursor, page)?;
            pages.push(format!(
                "[{}]",
                p.messages
                    .iter()
                    .map(|m| format!("#{}", m.seq))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            match p.next_cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        Ok(ModelMessage::system(format!(
            "history anchor=#{anchor} collect(1..)={} model_messages(last two)={} before(pages of {page})={}",
            seqs.join(" "),
            tail.len(),
            pages.join(" ")
        )))
    }
}

impl Lifecycle<SimContext> for SimHook {
    fn name(&self) -> &str {
        &self.name
    }

    fn phases(&self) -> Phases {
        self.phases
    }

    fn prepare_run<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        if let Err(e) = self.fail(Phase::PrepareRun, None) {
            return HookFuture::ready(Err(e));
        }
        if let HookSpec::Guardrail {
            contains,
            outcome,
            reason,
            text,
            ..
        } = &self.spec
        {
            let latest = input
                .latest_user_message
                .map(|m| m.text().to_lowercase())
                .unwrap_or_default();
            if latest.contains(&contains.to_lowercase()) {
                return HookFuture::ready(Ok(RunDecision::Respond(Response {
                    outcome: *outcome,
                    reason: reason.clone(),
                    parts: vec![Part::text(text.clone())],
                })));
            }
            return HookFuture::ready(Ok(RunDecision::default()));
        }
        if !self.model_matches(&input.route.model) {
            return HookFuture::ready(Ok(RunDecision::default()));
        }
        let latest = input.latest_user_message.map(|m| m.text());
        HookFuture::ready(Ok(RunDecision::Continue(
            self.patch(latest.as_deref()).unwrap_or_default(),
        )))
    }

    fn resolve_model_context<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            self.fail(Phase::ResolveModelContext, Some(input.step))?;
            match &self.spec {
                HookSpec::RecentWindow { last, .. } => {
                    let mut all = next.run().await?;
                    let keep = all.len().saturating_sub(*last);
                    Ok(all.split_off(keep))
                }
                HookSpec::ResolveTwice { .. } => {
                    let first = next.run().await?;
                    let second = next.run().await?;
                    if first != second {
                        return Err(HookError::new("next() gave two different answers"));
                    }
                    Ok(second)
                }
                HookSpec::SlowResolver { ms, .. } => {
                    tokio::time::sleep(std::time::Duration::from_millis(*ms)).await;
                    next.run().await
                }
                HookSpec::BaseContext { messages, .. } => {
                    next.with_base(messages.iter().map(model_message).collect())
                        .await
                }
                HookSpec::HistoryProbe { page, .. } => {
                    let mut out = next.run().await?;
                    out.push(Self::probe(input, *page)?);
                    Ok(out)
                }
                _ => next.run().await,
            }
        })
    }

    fn prepare_model_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        if let Err(e) = self.fail(Phase::PrepareModelStep, Some(input.step)) {
            return HookFuture::ready(Err(e));
        }
        if let HookSpec::Rag { .. } = &self.spec {
            let Some(query) = latest_user_text(input.messages) else {
                return HookFuture::ready(Ok(StepDecision::default()));
            };
            let query = query.to_lowercase();
            let docs: Vec<&str> = cx
                .context
                .docs
                .iter()
                .filter(|(k, _)| query.contains(&k.to_lowercase()))
                .map(|(_, v)| v.as_str())
                .collect();
            if docs.is_empty() {
                return HookFuture::ready(Ok(StepDecision::default()));
            }
            return HookFuture::ready(Ok(StepDecision::Continue(Patch::append_system(format!(
                "Relevant workspace context:\n{}",
                docs.join("\n\n")
            )))));
        }
        if !self.applies_at(input.step) || !self.model_matches(&input.route.model) {
            return HookFuture::ready(Ok(StepDecision::default()));
        }
        let latest = latest_user_text(input.messages);
        HookFuture::ready(Ok(StepDecision::Continue(
            self.patch(latest.as_deref()).unwrap_or_default(),
        )))
    }

    fn around_model_call<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        request: &'a ModelRequest,
        next: ModelNext<'a>,
    ) -> HookFuture<'a, HookResult<BoxStream>> {
        HookFuture::new(async move {
            self.fail(Phase::AroundModelCall, Some(request.step))?;
            match &self.spec {
                HookSpec::Route { .. } if self.applies_at(request.step) => {
                    let patch = AttemptPatch {
                        route: self.route_patch().unwrap_or_default(),
                        timeout_ms: None,
                    };
                    Ok(next.call(patch).await?)
                }
                HookSpec::Timeout { ms, .. } => Ok(next.call(AttemptPatch::timeout(*ms)).await?),
                HookSpec::Fallback { to, .. } => match next.call(AttemptPatch::default()).await {
                    Ok(stream) => Ok(stream),
                    // A hook failure inside is not the provider's: let it fail the run.
                    Err(pai_runtime::ModelError::Hook(m)) => Err(HookError::new(m)),
                    Err(_) => Ok(next.call(AttemptPatch::model(to.clone())).await?),
                },
                _ => Ok(next.call(AttemptPatch::default()).await?),
            }
        })
    }

    fn transform_step_stream(
        &self,
        _cx: &HookCx<'_, SimContext>,
        _input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        match &self.spec {
            HookSpec::Redact {
                patterns,
                replacement,
                ..
            } => Some(redactor(patterns, replacement)),
            HookSpec::Uppercase { .. } => Some(Box::new(Uppercase)),
            HookSpec::StreamGuard {
                contains,
                buffer,
                outcome,
                reason,
                replacement,
                ..
            } => {
                let needle = contains.to_lowercase();
                let abort = Abort {
                    reason: reason.clone(),
                    outcome: *outcome,
                    replacement: vec![Part::text(replacement.clone())],
                };
                Some(if *buffer {
                    guard_text(move |text, _done| {
                        if text.to_lowercase().contains(&needle) {
                            Verdict::Abort(abort.clone())
                        } else {
                            Verdict::Hold
                        }
                    })
                } else {
                    inspect_text_deltas(move |text| {
                        text.to_lowercase().contains(&needle).then(|| abort.clone())
                    })
                })
            }
            _ => None,
        }
    }

    fn before_tool_call<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        if let Err(e) = self.fail(Phase::BeforeToolCall, Some(input.step)) {
            return HookFuture::ready(Err(e));
        }
        let decision = match &self.spec {
            HookSpec::RejectTool { tool, message, .. } if tool == input.tool => {
                ToolCallDecision::Reject {
                    message: message.clone(),
                }
            }
            HookSpec::ReplaceToolInput {
                tool,
                input: v,
                merge,
                ..
            } if tool == input.tool => {
                let mut next = if *merge {
                    input.input.clone()
                } else {
                    v.clone()
                };
                if *merge && let (Some(into), Some(from)) = (next.as_object_mut(), v.as_object()) {
                    for (k, val) in from {
                        into.insert(k.clone(), val.clone());
                    }
                }
                ToolCallDecision::ReplaceInput(next)
            }
            _ => ToolCallDecision::Continue,
        };
        HookFuture::ready(Ok(decision))
    }

    fn after_tool_result<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        if let Err(e) = self.fail(Phase::AfterToolResult, Some(input.step)) {
            return HookFuture::ready(Err(e));
        }
        let decision = match &self.spec {
            HookSpec::ReplaceToolOutput {
                tool,
                output,
                remove,
                ..
            } if *tool == input.result.tool => {
                let mut next = output
                    .clone()
                    .unwrap_or_else(|| input.result.output.clone());
                if let Some(obj) = next.as_object_mut() {
                    for field in remove {
                        obj.remove(field);
                    }
                }
                ToolResultDecision::ReplaceOutput(next)
            }
            _ => ToolResultDecision::Continue,
        };
        HookFuture::ready(Ok(decision))
    }

    fn after_step<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        if let Err(e) = self.fail(Phase::AfterStep, Some(input.step)) {
            return HookFuture::ready(Err(e));
        }
        let decision = match &self.spec {
            HookSpec::AfterStep { decision, .. } if self.applies_at(input.step) => match decision {
                AfterStepSpec::Natural => AfterStepDecision::Natural,
                AfterStepSpec::NextStep => AfterStepDecision::NextStep,
                AfterStepSpec::Complete => AfterStepDecision::Complete,
            },
            _ => AfterStepDecision::Natural,
        };
        HookFuture::ready(Ok(decision))
    }
}
