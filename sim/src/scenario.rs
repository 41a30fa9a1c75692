//! The scenario format: serde types for TOML (written by people) and JSON (same model).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use pai_runtime::{ModelSettings, Outcome, ProviderOptions, ToolChoice};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A scenario file that could not be loaded (SPEC X1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), location.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct ScenarioError {
    pub path: PathBuf,
    /// 1-based line and column, where the parser can tell.
    pub location: Option<(usize, usize)>,
    pub message: String,
}

/// What a scenario run must show (SPEC D5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    /// Every oracle stays quiet.
    #[default]
    Pass,
    /// The oracle named by `oracle` reports a violation.
    Violation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// SPEC rule ids this scenario checks.
    pub rules: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default)]
    pub expect: Expect,
    /// With `expect = "violation"`: the oracle that must report it.
    #[serde(default)]
    pub oracle: Option<String>,
    #[serde(default)]
    pub agent: AgentSpec,
    #[serde(default)]
    pub lifecycle: Vec<HookSpec>,
    /// The default script: answers any model name without its own script.
    #[serde(default)]
    pub model: ModelSpec,
    /// Scripts per model name (so routing is visible).
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// Documents for the `rag` hook: keyword → text.
    #[serde(default)]
    pub docs: BTreeMap<String, String>,
    pub timeline: Vec<TimelineEntry>,
    /// Planted faults in the observed event stream (SPEC D5).
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
}

fn default_page() -> usize {
    2
}

fn default_seed() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    #[serde(default = "default_agent_name")]
    pub name: String,
    #[serde(default = "default_model")]
    pub model: String,
    #[serde(default)]
    pub instructions: String,
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
}

impl Default for AgentSpec {
    fn default() -> Self {
        AgentSpec {
            name: default_agent_name(),
            model: default_model(),
            instructions: String::new(),
            max_steps: default_max_steps(),
            tools: Vec::new(),
        }
    }
}

fn default_agent_name() -> String {
    "assistant".into()
}
fn default_model() -> String {
    "small".into()
}
fn default_max_steps() -> u32 {
    8
}

/// A scripted tool. Exactly one behaviour: `output`, `echo`, `fail`, `throw` or `panic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Virtual milliseconds the tool takes.
    #[serde(default)]
    pub latency_ms: u64,
    /// Input fields the tool requires; a call without them gets a typed invalid-input error (X2).
    #[serde(default)]
    pub requires: Vec<String>,
    #[serde(default)]
    pub output: Option<Value>,
    /// Return the call's input as the output.
    #[serde(default)]
    pub echo: bool,
    /// Fail deliberately with this value (SPEC T5 `fail`).
    #[serde(default)]
    pub fail: Option<Value>,
    /// Raise an error with this detail (SPEC T5 `throw`).
    #[serde(default)]
    pub throw: Option<String>,
    /// Panic with this message.
    #[serde(default)]
    pub panic: Option<String>,
}

/// Where a message or route hook applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookLevel {
    /// `prepare_run`: the episode's defaults.
    Run,
    /// `prepare_model_step`: one step.
    Step,
    /// `around_model_call`: one provider attempt (route hooks only, SPEC P6).
    Attempt,
}

/// A lifecycle phase, as named in scenario files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    PrepareRun,
    ResolveModelContext,
    PrepareModelStep,
    AroundModelCall,
    BeforeToolCall,
    AfterToolResult,
    AfterStep,
}

/// What an `after_step` hook decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AfterStepSpec {
    Natural,
    NextStep,
    Complete,
}

/// One hook from the built-in library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "hook", rename_all = "snake_case", deny_unknown_fields)]
pub enum HookSpec {
    /// Append a model-only system message at run or step level.
    SystemMessage {
        #[serde(default)]
        name: Option<String>,
        at: HookLevel,
        text: String,
        /// Only at this step (step level only).
        #[serde(default)]
        step: Option<u32>,
        /// Only when the route this hook sees has this model: shows that a hook
        /// sees the earlier hooks' patches (SPEC L5).
        #[serde(default)]
        if_model: Option<String>,
        /// Append the latest user text to `text` (shows when an overlay was built).
        #[serde(default)]
        with_latest_user: bool,
    },
    /// Patch the route at run or step level.
    Route {
        #[serde(default)]
        name: Option<String>,
        at: HookLevel,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        settings: ModelSettings,
        #[serde(default)]
        provider_options: ProviderOptions,
        #[serde(default)]
        provider_tools: Option<Vec<Value>>,
        #[serde(default)]
        tool_choice: Option<ToolChoice>,
        #[serde(default)]
        tools: Option<Vec<String>>,
        #[serde(default)]
        step: Option<u32>,
    },
    /// Replace the messages the phase would send (SPEC P4), at run or step level.
    ReplaceMessages {
        #[serde(default)]
        name: Option<String>,
        at: HookLevel,
        messages: Vec<MessageSpec>,
        #[serde(default)]
        step: Option<u32>,
    },
    /// Inject the latest user text's documents (from `[docs]`) as a model-only
    /// system message at each step (the seed's RAG example).
    Rag {
        #[serde(default)]
        name: Option<String>,
    },
    /// Resolver: keep only the last `last` messages of the downstream context.
    RecentWindow {
        #[serde(default)]
        name: Option<String>,
        last: usize,
    },
    /// Resolver: wait `ms` virtual milliseconds (like a call to a search
    /// service), then read the downstream context. Messages stored while it
    /// waits are above the step's anchor and must stay out (SPEC M1).
    SlowResolver {
        #[serde(default)]
        name: Option<String>,
        ms: u64,
    },
    /// Resolver: call `next()` twice and return the second answer (SPEC M2).
    ResolveTwice {
        #[serde(default)]
        name: Option<String>,
    },
    /// Resolver: run the inner hooks over these messages instead of the
    /// stored history (`next(base)`, SPEC M2).
    BaseContext {
        #[serde(default)]
        name: Option<String>,
        messages: Vec<MessageSpec>,
    },
    /// Resolver: report what the history view reads (SPEC M3) as a system
    /// message: `collect`, `model_messages` and `before` pages.
    HistoryProbe {
        #[serde(default)]
        name: Option<String>,
        #[serde(default = "default_page")]
        page: usize,
    },
    /// Model call: when an attempt fails before its stream exists, try once
    /// more with model `to` (a fresh route).
    Fallback {
        #[serde(default)]
        name: Option<String>,
        to: String,
    },
    /// Model call: give each attempt `ms` virtual milliseconds.
    Timeout {
        #[serde(default)]
        name: Option<String>,
        ms: u64,
    },
    /// Canonical redaction of a stream (SPEC S1, S3): `patterns` (a literal
    /// prefix and an optional trailing `[class]+`) become `replacement`.
    Redact {
        #[serde(default)]
        name: Option<String>,
        patterns: Vec<String>,
        replacement: String,
    },
    /// Canonical stage that upper-cases text (shows that stage order matters, L7).
    Uppercase {
        #[serde(default)]
        name: Option<String>,
    },
    /// A stream guardrail: aborts the step with `replacement` when the text
    /// so far contains `contains` (case-insensitive). With `buffer = true` it
    /// releases nothing until it has judged the whole text (S5); otherwise it
    /// releases each delta at once (S4: released chunks stay released).
    StreamGuard {
        #[serde(default)]
        name: Option<String>,
        contains: String,
        #[serde(default)]
        buffer: bool,
        outcome: Outcome,
        reason: String,
        replacement: String,
    },
    /// Reject every call of a named tool.
    RejectTool {
        #[serde(default)]
        name: Option<String>,
        tool: String,
        message: String,
    },
    /// Replace a named tool's input before it runs. With `merge = true`, the
    /// fields of `input` are merged into the input this hook receives, which
    /// shows that each hook sees the previous hook's replacement (SPEC L8).
    ReplaceToolInput {
        #[serde(default)]
        name: Option<String>,
        tool: String,
        input: Value,
        #[serde(default)]
        merge: bool,
    },
    /// Replace a named tool's output before the model sees it: with `output`,
    /// or by removing `remove` fields from the output this hook receives.
    ReplaceToolOutput {
        #[serde(default)]
        name: Option<String>,
        tool: String,
        #[serde(default)]
        output: Option<Value>,
        #[serde(default)]
        remove: Vec<String>,
    },
    /// Decide the step transition.
    AfterStep {
        #[serde(default)]
        name: Option<String>,
        decision: AfterStepSpec,
        #[serde(default)]
        step: Option<u32>,
    },
    /// Respond instead of running when the latest user text contains `contains`
    /// (case-insensitive).
    Guardrail {
        #[serde(default)]
        name: Option<String>,
        contains: String,
        outcome: Outcome,
        #[serde(default)]
        reason: Option<String>,
        text: String,
    },
    /// Fail (or panic) in a phase.
    Fail {
        #[serde(default)]
        name: Option<String>,
        phase: PhaseName,
        message: String,
        #[serde(default)]
        panic: bool,
        #[serde(default)]
        step: Option<u32>,
    },
}

/// A model-facing message written in a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageSpec {
    pub role: MessageRole,
    pub text: String,
}

/// Roles a scenario may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    System,
    User,
    Assistant,
}

/// The scripted model: turns consumed in order, one per model call.
/// A scripted model: its turns answer its calls in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(default)]
    pub turns: Vec<TurnSpec>,
    /// Every call fails at once: the model is down.
    #[serde(default)]
    pub unavailable: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// Text deltas, in order.
    #[serde(default)]
    pub text: Vec<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCallSpec>,
    /// Virtual milliseconds before the stream exists.
    #[serde(default)]
    pub latency_ms: u64,
    /// The provider fails before the stream starts.
    #[serde(default)]
    pub error: Option<String>,
    /// Virtual milliseconds before each text delta.
    #[serde(default)]
    pub delta_ms: u64,
    /// The provider fails mid-stream, after this turn's text deltas.
    #[serde(default)]
    pub stream_error: Option<String>,
    /// What the request answered by this turn must contain; a mismatch is a
    /// violation of the `request` oracle that shows the difference.
    #[serde(default)]
    pub expect: Option<RequestExpect>,
}

/// Expected parts of a model request. Only the fields given are compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestExpect {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub settings: Option<ModelSettings>,
    #[serde(default)]
    pub provider_options: Option<ProviderOptions>,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Every message, as the transcript prints it: `user: "hi"`.
    #[serde(default)]
    pub messages: Option<Vec<String>>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    pub tool: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// One client action at a virtual time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineEntry {
    /// Virtual milliseconds from the start.
    #[serde(default)]
    pub at: u64,
    #[serde(default = "default_client")]
    pub client: String,
    #[serde(default = "default_thread")]
    pub thread: String,
    /// Send this text as a user message (a new run, queued behind an active one).
    #[serde(default)]
    pub send: Option<String>,
    /// Steer the active run with this text (SPEC A4); a `send` when none is active.
    #[serde(default)]
    pub steer: Option<String>,
    /// Cancel the thread's active run (SPEC T8).
    #[serde(default)]
    pub cancel: bool,
    /// Start watching the thread live under this name (SPEC S2).
    #[serde(default)]
    pub watch: Option<String>,
    /// With `watch`: the watcher's own live transforms, in order.
    #[serde(default)]
    pub live: Vec<TransformSpec>,
}

/// A live (presentation-only) transform of a watcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TransformSpec {
    Redact {
        patterns: Vec<String>,
        replacement: String,
    },
    Uppercase,
}

/// What a timeline entry does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action<'a> {
    Send(&'a str),
    Steer(&'a str),
    Cancel,
    Watch(&'a str, &'a [TransformSpec]),
}

impl TimelineEntry {
    pub fn action(&self) -> Action<'_> {
        match (&self.send, &self.steer, &self.watch) {
            (Some(t), _, _) => Action::Send(t),
            (None, Some(t), _) => Action::Steer(t),
            (None, None, Some(w)) => Action::Watch(w, &self.live),
            (None, None, None) => Action::Cancel,
        }
    }
}

fn default_client() -> String {
    "alice".into()
}
fn default_thread() -> String {
    "main".into()
}

/// A planted fault in the event stream the oracles observe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// Remove the first event with this name.
    Drop { event: String },
    /// Swap the first event with this name with the event before it.
    SwapWithPrevious { event: String },
}

impl Scenario {
    /// Loads a `.toml` or `.json` scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            path: path.to_path_buf(),
            location: None,
            message: format!("cannot read: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parses scenario text; the format follows the file extension (JSON for `.json`).
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let err = |location, message: String| ScenarioError {
            path: path.to_path_buf(),
            location,
            message,
        };
        let scenario: Scenario = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(text).map_err(|e| {
                let loc = (e.line() > 0).then(|| (e.line(), e.column()));
                err(loc, strip_json_position(&e.to_string()))
            })?
        } else {
            toml::from_str(text).map_err(|e| {
                let loc = e
                    .span()
                    .map(|s| line_col(text, refine(text, s, e.message())));
                err(loc, e.message().trim().to_string())
            })?
        };
        scenario.validate().map_err(|m| err(None, m))?;
        Ok(scenario)
    }

    fn validate(&self) -> Result<(), String> {
        if self.timeline.is_empty() {
            return Err("expected at least one [[timeline]] entry".into());
        }
        match (self.expect, &self.oracle) {
            (Expect::Violation, None) => {
                return Err(
                    "expect = \"violation\" needs `oracle`, the oracle that must report it".into(),
                );
            }
            (Expect::Violation, Some(o)) if !crate::oracle::ORACLES.contains(&o.as_str()) => {
                return Err(format!(
                    "unknown oracle {o:?}, expected one of {:?}",
                    crate::oracle::ORACLES
                ));
            }
            _ => {}
        }
        for (i, t) in self.timeline.iter().enumerate() {
            let actions = usize::from(t.send.is_some())
                + usize::from(t.steer.is_some())
                + usize::from(t.cancel)
                + usize::from(t.watch.is_some());
            if actions != 1 {
                return Err(format!(
                    "timeline[{i}]: expected exactly one of send, steer, cancel, watch"
                ));
            }
            if t.watch.is_none() && !t.live.is_empty() {
                return Err(format!("timeline[{i}]: `live` goes with `watch`"));
            }
            for l in &t.live {
                if let TransformSpec::Redact { patterns, .. } = l {
                    pai_runtime::text::patterns(patterns)
                        .map_err(|e| format!("timeline[{i}].live: {e}"))?;
                }
            }
        }
        for (i, h) in self.lifecycle.iter().enumerate() {
            if let HookSpec::SystemMessage {
                at: HookLevel::Attempt,
                ..
            }
            | HookSpec::ReplaceMessages {
                at: HookLevel::Attempt,
                ..
            } = h
            {
                return Err(format!(
                    "lifecycle[{i}]: messages can be added at run or step level, not per attempt"
                ));
            }
        }
        for (i, h) in self.lifecycle.iter().enumerate() {
            if let HookSpec::Redact { patterns, .. } = h {
                pai_runtime::text::patterns(patterns)
                    .map_err(|e| format!("lifecycle[{i}]: {e}"))?;
            }
        }
        let mut seen = BTreeMap::new();
        for (i, t) in self.agent.tools.iter().enumerate() {
            if seen.insert(t.name.as_str(), i).is_some() {
                return Err(format!(
                    "agent.tools[{i}]: duplicate tool name {:?}",
                    t.name
                ));
            }
            let behaviours = usize::from(t.output.is_some())
                + usize::from(t.echo)
                + usize::from(t.fail.is_some())
                + usize::from(t.throw.is_some())
                + usize::from(t.panic.is_some());
            if behaviours != 1 {
                return Err(format!(
                    "agent.tools[{i}] ({}): expected exactly one of output, echo, fail, throw, panic",
                    t.name
                ));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expect::Pass => "pass",
            Expect::Violation => "violation",
        })
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Serde reports an unknown field inside a tagged table at the table itself;
/// point at the offending key when it can be found inside that span.
fn refine(text: &str, span: std::ops::Range<usize>, message: &str) -> usize {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return span.start;
    };
    let Some(field) = rest.split('`').next() else {
        return span.start;
    };
    // The span may cover only the table header: search the table's own lines.
    let mut offset = span.start;
    for (i, line) in text[span.start.min(text.len())..]
        .split_inclusive('\n')
        .enumerate()
    {
        let trimmed = line.trim_start();
        if i > 0 && offset >= span.end && trimmed.starts_with('[') {
            break;
        }
        if let Some(after) = trimmed.strip_prefix(field)
            && after.trim_start().starts_with('=')
        {
            return offset + (line.len() - trimmed.len());
        }
        offset += line.len();
    }
    span.start
}

fn strip_json_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
name = "x"
rules = ["L1"]
[[timeline]]
send = "hi"
"#;

    #[test]
    fn minimal_scenario_parses_with_defaults() {
        let s = Scenario::parse(Path::new("a.toml"), MINIMAL).unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.agent.model, "small");
        assert_eq!(s.timeline[0].thread, "main");
    }

    #[test]
    fn x1_unknown_field_names_line_and_column() {
        let text = MINIMAL.replace("send = \"hi\"", "send = \"hi\"\nsned = 3");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert_eq!(e.location, Some((6, 1)), "{e}");
        assert!(e.message.contains("unknown field `sned`"), "{e}");
        assert!(e.to_string().starts_with("a.toml:6:1: "), "{e}");
    }

    #[test]
    fn x1_wrong_type_names_line_and_column() {
        let text = MINIMAL.replace("rules = [\"L1\"]", "rules = [\"L1\"]\nseed = \"seven\"");
        let e = Scenario::parse(Path::new("a.toml"), &text).unwrap_err();
        assert_eq!(e.location.map(|l| l.0), Some(4), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn x1_json_errors_have_positions_too() {
        let e =
            Scenario::parse(Path::new("a.json"), "{\"name\": \"x\",\n \"rules\": 3}").unwrap_err();
        assert_eq!(e.location, Some((2, 11)), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
    }

    #[test]
    fn json_and_toml_share_one_model() {
        let t = Scenario::parse(Path::new("a.toml"), MINIMAL).unwrap();
        let j = serde_json::to_string(&t).unwrap();
        let back = Scenario::parse(Path::new("a.json"), &j).unwrap();
        assert_eq!(t, back);
    }
}
