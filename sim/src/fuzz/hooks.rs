//! Generated hooks: any hook of the library, with a random configuration
//! (SPEC D8). A new hook joins `hook` in the same change that adds it.

use pai_runtime::{ModelSettings, Outcome, ToolChoice};
use serde_json::json;

use super::draw::{Gen, MODELS, PATTERNS, WORDS};
use crate::hooks::{
    AfterStep, AfterStepSpec, BaseContext, Delay, Fail, Fallback, Guardrail, HistoryProbe,
    HookSpec, MessageLevel, MessageRole, MessageSpec, PhaseName, Rag, RecentWindow, Redact,
    RedactPattern, RejectTool, ReplaceMessages, ReplaceToolInput, ReplaceToolOutput, ResolveTwice,
    Route, RouteLevel, SlowResolver, StreamGuard, SystemMessage, Timeout, Uppercase,
};

/// How many kinds of hook `hook` draws from.
const KINDS: usize = 21;

/// One hook of any kind; `tools` names the agent's tools.
pub(super) fn hook(g: &mut Gen, tools: &[String]) -> HookSpec {
    match g.index(KINDS) {
        0 => HookSpec::SystemMessage(system_message(g)),
        1 => HookSpec::Route(route(g, tools)),
        2 => HookSpec::ReplaceMessages(ReplaceMessages {
            name: None,
            at: level(g),
            messages: messages(g),
            step: g.step(),
        }),
        3 => HookSpec::Rag(Rag { name: None }),
        4 => HookSpec::RecentWindow(RecentWindow {
            name: None,
            last: g.range(1, 6) as usize,
        }),
        5 => HookSpec::SlowResolver(SlowResolver {
            name: None,
            ms: g.range(0, 40),
        }),
        6 => HookSpec::ResolveTwice(ResolveTwice { name: None }),
        7 => HookSpec::BaseContext(BaseContext {
            name: None,
            messages: messages(g),
        }),
        8 => HookSpec::HistoryProbe(HistoryProbe {
            name: None,
            page: g.range(1, 3) as usize,
            wait_ms: g.range(0, 30),
        }),
        9 => HookSpec::Fallback(Fallback {
            name: None,
            to: g.pick(MODELS).to_string(),
        }),
        10 => HookSpec::Timeout(Timeout {
            name: None,
            ms: g.range(5, 80),
        }),
        11 => HookSpec::Redact(redact(g)),
        12 => HookSpec::Uppercase(Uppercase { name: None }),
        13 => HookSpec::StreamGuard(stream_guard(g)),
        14 => HookSpec::RejectTool(RejectTool {
            name: None,
            tool: tool_name(g, tools),
            message: "not allowed here".into(),
        }),
        15 => HookSpec::ReplaceToolInput(ReplaceToolInput {
            name: None,
            tool: tool_name(g, tools),
            input: json!({ "q": g.pick(WORDS).to_string() }),
            merge: g.chance(50),
        }),
        16 => HookSpec::ReplaceToolOutput(replace_output(g, tools)),
        17 => HookSpec::AfterStep(AfterStep {
            name: None,
            decision: *g.pick(&[
                AfterStepSpec::Natural,
                AfterStepSpec::NextStep,
                AfterStepSpec::Complete,
            ]),
            step: g.step(),
        }),
        18 => HookSpec::Guardrail(Guardrail {
            name: None,
            contains: g.pick(WORDS).to_string(),
            outcome: Outcome::Blocked,
            reason: g.maybe(70, |_| "policy".to_string()),
            text: "I cannot help with that.".into(),
        }),
        19 => HookSpec::Fail(Fail {
            name: None,
            phase: phase(g),
            message: "planted failure".into(),
            panic: g.chance(30),
            step: g.step(),
        }),
        _ => HookSpec::Delay(Delay {
            name: None,
            phase: phase(g),
            ms: g.range(1, 30),
            step: g.step(),
        }),
    }
}

fn level(g: &mut Gen) -> MessageLevel {
    *g.pick(&[MessageLevel::Run, MessageLevel::Step])
}

pub(super) fn phase(g: &mut Gen) -> PhaseName {
    *g.pick(&[
        PhaseName::PrepareRun,
        PhaseName::ResolveModelContext,
        PhaseName::PrepareModelStep,
        PhaseName::AroundModelCall,
        PhaseName::BeforeToolCall,
        PhaseName::AfterToolResult,
        PhaseName::AfterStep,
    ])
}

/// A tool of the agent, or now and then one it does not have.
fn tool_name(g: &mut Gen, tools: &[String]) -> String {
    match tools.is_empty() || g.chance(15) {
        true => "ghost".into(),
        false => g.pick(tools).clone(),
    }
}

fn messages(g: &mut Gen) -> Vec<MessageSpec> {
    (0..g.range(1, 2))
        .map(|_| MessageSpec {
            role: *g.pick(&[
                MessageRole::System,
                MessageRole::User,
                MessageRole::Assistant,
            ]),
            text: g.text(4),
        })
        .collect()
}

fn system_message(g: &mut Gen) -> SystemMessage {
    SystemMessage {
        name: None,
        at: level(g),
        text: g.text(3),
        step: g.step(),
        if_model: g.maybe(20, |g| g.pick(MODELS).to_string()),
        with_latest_user: g.chance(30),
    }
}

fn route(g: &mut Gen, tools: &[String]) -> Route {
    let settings = ModelSettings {
        temperature: g.maybe(40, |g| g.range(0, 10) as f64 / 10.0),
        max_output_tokens: g.maybe(30, |g| g.range(1, 4) as u32 * 500),
        ..ModelSettings::default()
    };
    let options = g.maybe(30, |g| {
        let mut o = serde_json::Map::new();
        o.insert("effort".into(), json!(g.pick(&["low", "high"]).to_string()));
        o
    });
    Route {
        name: None,
        at: *g.pick(&[RouteLevel::Run, RouteLevel::Step, RouteLevel::Attempt]),
        model: g.maybe(50, |g| g.pick(MODELS).to_string()),
        settings,
        provider_options: options
            .into_iter()
            .map(|o| ("openai".to_string(), o))
            .collect(),
        provider_tools: None,
        tool_choice: g.maybe(20, |g| {
            g.pick(&[ToolChoice::Auto, ToolChoice::Required]).clone()
        }),
        tools: g.maybe(30, |g| {
            tools.iter().filter(|_| g.chance(50)).cloned().collect()
        }),
        step: g.step(),
    }
}

fn redact(g: &mut Gen) -> Redact {
    let mut patterns: Vec<RedactPattern> = PATTERNS
        .iter()
        .filter(|_| g.chance(50))
        .filter_map(|p| RedactPattern::try_from(p.to_string()).ok())
        .collect();
    if patterns.is_empty() {
        patterns.extend(RedactPattern::try_from(PATTERNS[0].to_string()).ok());
    }
    Redact {
        name: None,
        patterns,
        replacement: "[REDACTED]".into(),
    }
}

fn stream_guard(g: &mut Gen) -> StreamGuard {
    StreamGuard {
        name: None,
        contains: g.pick(WORDS).to_string(),
        buffer: g.chance(50),
        outcome: Outcome::Blocked,
        reason: "unsafe_output".into(),
        replacement: "I cannot continue with that.".into(),
    }
}

fn replace_output(g: &mut Gen, tools: &[String]) -> ReplaceToolOutput {
    let output = g.maybe(50, |g| json!({ "summary": g.text(3) }));
    ReplaceToolOutput {
        name: None,
        tool: tool_name(g, tools),
        remove: if output.is_none() {
            vec!["secret".into()]
        } else {
            vec![]
        },
        output,
    }
}
