//! Generated hooks: any hook of the library, with a random configuration
//! (SPEC D8). A new hook joins `hook` in the same change that adds it.

use pai_runtime::{
    message::Outcome,
    model::{ModelSettings, ToolChoice},
};
use serde_json::{Map, Value, json};

use super::draw::{Family, Gen, META_KEYS, MODELS, PATTERNS, WORDS};
use crate::hooks::{
    AfterStep, AfterStepSpec, BaseContext, ContextMessage, Delay, Fail, Fallback, Guardrail,
    HistoryProbe, HookSpec, MessageLevel, MessageRole, MessageSpec, MetadataOverlay, MetadataPhase,
    PatchMetadata, PhaseName, Rag, RecentWindow, Redact, RedactPattern, RejectTool,
    ReplaceMessages, ReplaceToolInput, ReplaceToolOutput, ResolveTwice, Route, RouteLevel,
    SetMetadata, SlowResolver, StreamGuard, SystemMessage, Timeout, Uppercase,
};

/// How many kinds of hook `hook` draws from.
const KINDS: usize = 30;

/// One hook of any kind; `tools` names the agent's tools.
pub(super) fn hook(g: &mut Gen, tools: &[String]) -> HookSpec {
    match g.kind(Family::Hook, &[1; KINDS]) {
        k @ 0..=10 => model_hook(g, k, tools),
        k @ 11..=20 => stream_or_tool_hook(g, k, tools),
        k @ 21..=24 => metadata_hook(g, k),
        k => facade_hook(g, k),
    }
}

/// The compaction helper, the history-rewrite hooks and a run that
/// rewrites visibility itself (SPEC C1, L11, R1, R2, R3, M1).
fn facade_hook(g: &mut Gen, kind: usize) -> HookSpec {
    match kind {
        25 => {
            let threshold = g.range(2, 8) as usize;
            HookSpec::Compaction(crate::hooks::CompactionSpec {
                name: None,
                threshold,
                keep: g.index(threshold),
                summaries: Vec::new(),
                fail_at: g
                    .maybe(20, |g| vec![g.range(1, 3) as usize])
                    .unwrap_or_default(),
                latency_ms: g.maybe(40, |g| g.range(1, 80)).unwrap_or(0),
            })
        }
        26 => HookSpec::RewritePatch(crate::hooks::RewritePatchSpec {
            name: None,
            set: values(g).into_iter().collect(),
            private: Default::default(),
            kind_key: g.maybe(50, |_| "last_rewrite".to_string()),
            fail: g.chance(10),
        }),
        27 => HookSpec::RewriteListener(crate::hooks::RewriteListener {
            name: None,
            delay_ms: g.range(0, 40),
            fail: g.chance(20),
        }),
        28 => HookSpec::HideMessage(crate::hooks::HideMessage {
            name: None,
            step: g.maybe(70, |g| g.range(0, 3) as u32),
            role: *g.pick(&[MessageRole::User, MessageRole::Assistant]),
            nth: g.range(1, 3) as usize,
            show: g.chance(25),
        }),
        _ => mutate_thread(g),
    }
}

/// A run that writes thread metadata with an expectation it read
/// `wait_ms` earlier (SPEC H3): a trusted writer's commit in that window
/// makes it conflict.
fn mutate_thread(g: &mut Gen) -> HookSpec {
    let mut h = crate::hooks::MutateThread {
        name: None,
        step: g.maybe(50, |g| g.range(0, 2) as u32),
        metadata: Default::default(),
        private: Default::default(),
        expect: *g.pick(&[
            crate::scenario::ExpectSpec::Nothing,
            crate::scenario::ExpectSpec::Version,
            crate::scenario::ExpectSpec::Private,
            crate::scenario::ExpectSpec::Private,
        ]),
        wait_ms: g.range(0, 80),
    };
    if g.chance(50) {
        h.metadata.insert("topic".into(), json!(g.range(0, 9)));
    } else {
        h.private.insert("cursor".into(), json!(g.range(0, 9)));
    }
    HookSpec::MutateThread(h)
}

/// Hooks of the run, the model context and the model call.
fn model_hook(g: &mut Gen, kind: usize, tools: &[String]) -> HookSpec {
    match kind {
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
            // Read whole now and then: cut and refused replays meet it (S6).
            stream_errors: g.chance(30),
            refusals: g.chance(30),
            retryable_only: g.chance(20),
        }),
        _ => HookSpec::Timeout(Timeout {
            name: None,
            ms: g.range(5, 80),
        }),
    }
}

/// Hooks of the stream, the tools, the step's end; failures and delays.
fn stream_or_tool_hook(g: &mut Gen, kind: usize, tools: &[String]) -> HookSpec {
    match kind {
        11 => HookSpec::Redact(redact(g)),
        12 => HookSpec::Uppercase(Uppercase { name: None }),
        13 => HookSpec::StreamGuard(stream_guard(g)),
        // A tool hook names one of the agent's tools (the loader refuses
        // any other); an agent without tools gets a stream hook instead.
        14..=16 if tools.is_empty() => HookSpec::Uppercase(Uppercase { name: None }),
        14 => HookSpec::RejectTool(RejectTool {
            name: None,
            tool: g.pick(tools).clone(),
            message: "not allowed here".into(),
        }),
        15 => HookSpec::ReplaceToolInput(ReplaceToolInput {
            name: None,
            tool: g.pick(tools).clone(),
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
            on_resume: false,
        }),
        _ => HookSpec::Delay(Delay {
            name: None,
            phase: phase(g),
            ms: g.range(1, 30),
            step: g.step(),
            on_resume: false,
        }),
    }
}

/// The run metadata hooks (seed: typed run metadata) and the hidden
/// lifecycle context message (SPEC L13).
fn metadata_hook(g: &mut Gen, kind: usize) -> HookSpec {
    match kind {
        21 => HookSpec::SetMetadata(SetMetadata {
            name: None,
            values: values(g),
        }),
        22 => {
            let count = g.maybe(60, |g| g.pick(META_KEYS).to_string());
            let set = match count.is_none() || g.chance(40) {
                true => values(g),
                false => Map::new(),
            };
            HookSpec::PatchMetadata(PatchMetadata {
                name: None,
                phase: *g.pick(&[
                    MetadataPhase::PrepareRun,
                    MetadataPhase::PrepareModelStep,
                    MetadataPhase::BeforeToolCall,
                    MetadataPhase::AfterToolResult,
                    MetadataPhase::AfterStep,
                ]),
                count,
                set,
            })
        }
        23 => HookSpec::MetadataOverlay(MetadataOverlay { name: None }),
        _ => HookSpec::ContextMessage(ContextMessage {
            name: None,
            text: g.text(4),
        }),
    }
}

/// One or two metadata keys with small values.
fn values(g: &mut Gen) -> Map<String, Value> {
    (0..g.range(1, 2))
        .map(|_| {
            let value = match g.index(3) {
                0 => json!(g.range(0, 9)),
                1 => json!(g.pick(WORDS).to_string()),
                _ => json!({ "step": g.range(0, 3) }),
            };
            (g.pick(META_KEYS).to_string(), value)
        })
        .collect()
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
        tool: g.pick(tools).clone(),
        remove: if output.is_none() {
            vec!["secret".into()]
        } else {
            vec![]
        },
        output,
    }
}
