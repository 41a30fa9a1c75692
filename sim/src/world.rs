//! The simulated world the runtime runs in: one seeded rng, the virtual clock,
//! ids from both, the scripted model and tools, and the event recorder.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use pai_runtime::{
    BoxStream, Clock, Event, EventSink, FinishReason, HookFuture, IdKind, IdSource, LanguageModel,
    Millis, ModelError, ModelProvider, ModelRequest, PartStream, StreamPart, Tool, ToolCx,
    ToolOutcome, ToolSpec as RtToolSpec,
};
use serde_json::Value;

use crate::hooks::PLANTED_PANIC;
use crate::scenario::{ModelSpec, ToolSpec, TurnSpec};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// SplitMix64: small, fast, and stable across versions and platforms, which is
/// what a recorded seed needs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The virtual clock: Tokio's paused time, measured from the scenario start.
#[derive(Debug)]
pub struct VirtualClock {
    start: tokio::time::Instant,
}

impl VirtualClock {
    /// Must be created inside the paused runtime.
    pub fn new() -> VirtualClock {
        VirtualClock {
            start: tokio::time::Instant::now(),
        }
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn sleep(&self, ms: Millis) -> HookFuture<'static, ()> {
        HookFuture::new(tokio::time::sleep(Duration::from_millis(ms)))
    }
}

/// Ids from the seeded rng: `{kind}{n}_{4 hex digits}`, unique by the counter,
/// different per seed by the suffix.
#[derive(Debug)]
pub struct SimIds {
    rng: Arc<Mutex<Rng>>,
    counters: Mutex<[u32; 4]>,
}

impl SimIds {
    pub fn new(rng: Arc<Mutex<Rng>>) -> SimIds {
        SimIds {
            rng,
            counters: Mutex::new([0; 4]),
        }
    }
}

impl IdSource for SimIds {
    fn next_id(&self, kind: IdKind) -> String {
        let slot = match kind {
            IdKind::Run => 0,
            IdKind::Message => 1,
            IdKind::Thread => 2,
            IdKind::ToolCall => 3,
        };
        let n = {
            let mut c = lock(&self.counters);
            c[slot] += 1;
            c[slot]
        };
        let suffix = lock(&self.rng).below(0x1_0000);
        format!("{}{n}_{suffix:04x}", kind.prefix())
    }
}

/// Records every runtime event in order.
#[derive(Debug, Default)]
pub struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *lock(&self.events))
    }
}

impl EventSink for Recorder {
    fn record(&self, event: Event) {
        lock(&self.events).push(event);
    }
}

/// One model call as a scripted model received it.
#[derive(Debug, Clone)]
pub struct ModelCallRecord {
    pub at: Millis,
    pub request: ModelRequest,
    /// Which script answered: a model name, or `default`.
    pub script: String,
    /// What the script did: `turn N`, `unavailable`, `exhausted`.
    pub outcome: String,
    /// Mismatches with the turn's `expect`, if any.
    pub mismatch: Option<String>,
}

/// Every model call of a run, in order, across scripts.
pub type CallLog = Arc<Mutex<Vec<ModelCallRecord>>>;

/// A scripted model: its turns answer its calls in order.
pub struct ScriptedModel {
    script: String,
    turns: Mutex<VecDeque<(usize, TurnSpec)>>,
    unavailable: bool,
    ids: Arc<SimIds>,
    clock: Arc<VirtualClock>,
    log: CallLog,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("script", &self.script)
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    pub fn new(
        script: &str,
        spec: &ModelSpec,
        ids: Arc<SimIds>,
        clock: Arc<VirtualClock>,
        log: CallLog,
    ) -> ScriptedModel {
        ScriptedModel {
            script: script.to_string(),
            turns: Mutex::new(
                spec.turns
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(i, t)| (i + 1, t))
                    .collect(),
            ),
            unavailable: spec.unavailable,
            ids,
            clock,
            log,
        }
    }

    /// Scripted turns the run never used.
    pub fn unused_turns(&self) -> usize {
        lock(&self.turns).len()
    }

    pub fn script(&self) -> &str {
        &self.script
    }

    fn record(&self, request: &ModelRequest, outcome: String, mismatch: Option<String>) {
        lock(&self.log).push(ModelCallRecord {
            at: self.clock.now(),
            request: request.clone(),
            script: self.script.clone(),
            outcome,
            mismatch,
        });
    }
}

impl LanguageModel for ScriptedModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        if self.unavailable {
            self.record(request, "unavailable".into(), None);
            return HookFuture::ready(Err(ModelError::Provider(format!(
                "model {} is unavailable",
                request.route.model
            ))));
        }
        let Some((n, turn)) = lock(&self.turns).pop_front() else {
            self.record(request, "exhausted".into(), None);
            return HookFuture::ready(Err(ModelError::Provider(format!(
                "script {} exhausted: the model was called more often than the scenario scripts",
                self.script
            ))));
        };
        let mismatch = turn
            .expect
            .as_ref()
            .and_then(|e| crate::oracle::request_mismatch(e, request));
        self.record(request, format!("turn {n}"), mismatch);
        HookFuture::new(async move {
            if turn.latency_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.latency_ms)).await;
            }
            if let Some(e) = turn.error {
                return Err(ModelError::Provider(e));
            }
            let mut parts: VecDeque<StreamPart> =
                turn.text.into_iter().map(StreamPart::TextDelta).collect();
            if let Some(e) = turn.stream_error {
                parts.push_back(StreamPart::Error(e));
            } else {
                let has_calls = !turn.tool_calls.is_empty();
                for call in turn.tool_calls {
                    parts.push_back(StreamPart::ToolCall {
                        call_id: self.ids.next_id(IdKind::ToolCall),
                        tool: call.tool,
                        input: call.input,
                    });
                }
                parts.push_back(StreamPart::Finish(if has_calls {
                    FinishReason::ToolCalls
                } else {
                    FinishReason::Stop
                }));
            }
            Ok(Box::new(ScriptedStream {
                parts,
                delta_ms: turn.delta_ms,
                sleep: None,
            }) as BoxStream)
        })
    }
}

/// A scripted provider stream: text deltas may each wait `delta_ms`.
struct ScriptedStream {
    parts: VecDeque<StreamPart>,
    delta_ms: u64,
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl PartStream for ScriptedStream {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        if self.delta_ms > 0 && matches!(self.parts.front(), Some(StreamPart::TextDelta(_))) {
            let ms = self.delta_ms;
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(ms))));
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
        }
        Poll::Ready(self.parts.pop_front())
    }
}

/// Serves each model name its own script, or the default script.
#[derive(Debug)]
pub struct ScriptedProvider {
    pub default: Arc<ScriptedModel>,
    pub by_name: BTreeMap<String, Arc<ScriptedModel>>,
}

impl ScriptedProvider {
    /// Every script, default first.
    pub fn scripts(&self) -> impl Iterator<Item = &ScriptedModel> {
        std::iter::once(&*self.default).chain(self.by_name.values().map(|m| &**m))
    }
}

impl ModelProvider for ScriptedProvider {
    fn model(&self, name: &str) -> Option<&dyn LanguageModel> {
        Some(self.by_name.get(name).map_or(&*self.default, |m| &**m))
    }
}

/// A scripted tool.
#[derive(Debug)]
pub struct ScriptedTool {
    spec: RtToolSpec,
    script: ToolSpec,
}

impl ScriptedTool {
    pub fn new(script: ToolSpec) -> ScriptedTool {
        ScriptedTool {
            spec: RtToolSpec {
                name: script.name.clone(),
                description: script.description.clone(),
            },
            script,
        }
    }
}

impl Tool for ScriptedTool {
    fn spec(&self) -> &RtToolSpec {
        &self.spec
    }

    fn call(&self, _cx: ToolCx, input: Value) -> HookFuture<'_, ToolOutcome> {
        let missing: Vec<&str> = self
            .script
            .requires
            .iter()
            .filter(|k| input.get(k.as_str()).is_none())
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return HookFuture::ready(ToolOutcome::InvalidInput(format!(
                "missing field(s) {}",
                missing.join(", ")
            )));
        }
        HookFuture::new(async move {
            if self.script.latency_ms > 0 {
                tokio::time::sleep(Duration::from_millis(self.script.latency_ms)).await;
            }
            let s = &self.script;
            if let Some(msg) = &s.panic {
                panic!("{PLANTED_PANIC} {msg}");
            }
            if let Some(v) = &s.fail {
                return ToolOutcome::Fail(v.clone());
            }
            if let Some(m) = &s.throw {
                return ToolOutcome::Throw(m.clone());
            }
            if s.echo {
                return ToolOutcome::Output(input);
            }
            ToolOutcome::Output(s.output.clone().unwrap_or(Value::Null))
        })
    }
}
