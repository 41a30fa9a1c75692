//! The built-in hook library: each scenario `[[lifecycle]]` entry becomes one hook.

use pai_runtime::{
    AfterStepDecision, AfterStepInput, HookCx, HookError, HookFuture, HookResult, Lifecycle, Part,
    Patch, Phase, Phases, Response, RoutePatch, RunDecision, RunInput, StepDecision, StepInput,
    ToolCallDecision, ToolCallInput, ToolResultDecision, ToolResultInput,
};

use pai_runtime::{ModelContent, ModelMessage, Role};

use crate::scenario::{AfterStepSpec, HookLevel, HookSpec, MessageRole, PhaseName};

/// The runtime context scenarios run with.
#[derive(Debug, Clone, Default)]
pub struct SimContext {}

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
        HookSpec::RejectTool { .. } => "reject_tool",
        HookSpec::ReplaceToolInput { .. } => "replace_tool_input",
        HookSpec::ReplaceToolOutput { .. } => "replace_tool_output",
        HookSpec::AfterStep { .. } => "after_step",
        HookSpec::Guardrail { .. } => "guardrail",
        HookSpec::Fail { .. } => "fail",
    }
}

fn level_phase(level: HookLevel) -> Phase {
    match level {
        HookLevel::Run => Phase::PrepareRun,
        HookLevel::Step => Phase::PrepareModelStep,
    }
}

fn phase_of(p: PhaseName) -> Phase {
    match p {
        PhaseName::PrepareRun => Phase::PrepareRun,
        PhaseName::PrepareModelStep => Phase::PrepareModelStep,
        PhaseName::BeforeToolCall => Phase::BeforeToolCall,
        PhaseName::AfterToolResult => Phase::AfterToolResult,
        PhaseName::AfterStep => Phase::AfterStep,
    }
}

impl SimHook {
    fn new(index: usize, spec: HookSpec) -> SimHook {
        let given = match &spec {
            HookSpec::SystemMessage { name, .. }
            | HookSpec::Route { name, .. }
            | HookSpec::ReplaceMessages { name, .. }
            | HookSpec::RejectTool { name, .. }
            | HookSpec::ReplaceToolInput { name, .. }
            | HookSpec::ReplaceToolOutput { name, .. }
            | HookSpec::AfterStep { name, .. }
            | HookSpec::Guardrail { name, .. }
            | HookSpec::Fail { name, .. } => name.clone(),
        };
        let phase = match &spec {
            HookSpec::SystemMessage { at, .. }
            | HookSpec::Route { at, .. }
            | HookSpec::ReplaceMessages { at, .. } => level_phase(*at),
            HookSpec::RejectTool { .. } | HookSpec::ReplaceToolInput { .. } => {
                Phase::BeforeToolCall
            }
            HookSpec::ReplaceToolOutput { .. } => Phase::AfterToolResult,
            HookSpec::AfterStep { .. } => Phase::AfterStep,
            HookSpec::Guardrail { .. } => Phase::PrepareRun,
            HookSpec::Fail { phase, .. } => phase_of(*phase),
        };
        SimHook {
            name: given.unwrap_or_else(|| format!("{}#{index}", kind(&spec))),
            spec,
            phases: Phases::only(phase),
        }
    }

    /// The patch a message or route hook contributes.
    fn patch(&self) -> Option<Patch> {
        match &self.spec {
            HookSpec::SystemMessage { text, .. } => Some(Patch::append_system(text.clone())),
            HookSpec::Route {
                model,
                settings,
                provider_options,
                provider_tools,
                tool_choice,
                tools,
                ..
            } => Some(Patch::route(RoutePatch {
                model: model.clone(),
                settings: settings.clone(),
                provider_options: provider_options.clone(),
                provider_tools: provider_tools.clone(),
                tool_choice: tool_choice.clone(),
                tools: tools.clone(),
            })),
            HookSpec::ReplaceMessages { messages, .. } => Some(Patch {
                replace_model_messages: Some(
                    messages
                        .iter()
                        .map(|m| ModelMessage {
                            role: match m.role {
                                MessageRole::System => Role::System,
                                MessageRole::User => Role::User,
                                MessageRole::Assistant => Role::Assistant,
                            },
                            content: vec![ModelContent::Text {
                                text: m.text.clone(),
                            }],
                        })
                        .collect(),
                ),
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

    /// A `fail` hook's error for this phase and step, if it fires. Panics when
    /// configured to.
    fn fail(&self, phase: Phase, step: Option<u32>) -> HookResult<()> {
        if let HookSpec::Fail {
            phase: p,
            message,
            panic,
            step: only,
            ..
        } = &self.spec
            && phase_of(*p) == phase
            && (only.is_none() || *only == step)
        {
            if *panic {
                panic!("{PLANTED_PANIC} {message}");
            }
            return Err(HookError::new(message.clone()));
        }
        Ok(())
    }
}

fn step_matches(only: Option<u32>, step: u32) -> bool {
    only.is_none_or(|s| s == step)
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
        HookFuture::ready(Ok(RunDecision::Continue(self.patch().unwrap_or_default())))
    }

    fn prepare_model_step<'a>(
        &'a self,
        _cx: &'a HookCx<'_, SimContext>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        if let Err(e) = self.fail(Phase::PrepareModelStep, Some(input.step)) {
            return HookFuture::ready(Err(e));
        }
        let only = match &self.spec {
            HookSpec::SystemMessage { step, .. }
            | HookSpec::Route { step, .. }
            | HookSpec::ReplaceMessages { step, .. } => *step,
            _ => None,
        };
        if !step_matches(only, input.step) || !self.model_matches(&input.route.model) {
            return HookFuture::ready(Ok(StepDecision::default()));
        }
        HookFuture::ready(Ok(StepDecision::Continue(self.patch().unwrap_or_default())))
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
            HookSpec::AfterStep { decision, step, .. } if step_matches(*step, input.step) => {
                match decision {
                    AfterStepSpec::Natural => AfterStepDecision::Natural,
                    AfterStepSpec::NextStep => AfterStepDecision::NextStep,
                    AfterStepSpec::Complete => AfterStepDecision::Complete,
                }
            }
            _ => AfterStepDecision::Natural,
        };
        HookFuture::ready(Ok(decision))
    }
}
