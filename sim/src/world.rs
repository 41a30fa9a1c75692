//! The simulated world the runtime runs in: one seeded rng, the virtual clock,
//! ids from both, the scripted model and tools, and the event recorder.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use pai_runtime::{
    BoxStream, Clock, Event, EventSink, FinishReason, HookFuture, IdKind, IdSource, LanguageModel,
    Millis, ModelError, ModelProvider, ModelRequest, ReadyStream, StreamPart, Tool, ToolCx,
    ToolOutcome, ToolSpec as RtToolSpec,
};
use serde_json::Value;

use crate::hooks::PLANTED_PANIC;
use crate::scenario::{ToolSpec, TurnSpec};

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

/// One model call as the scripted model received it.
#[derive(Debug, Clone)]
pub struct ModelCallRecord {
    pub at: Millis,
    pub request: ModelRequest,
}

/// The scripted model: answers every model name with the next scripted turn.
pub struct ScriptedModel {
    turns: Mutex<VecDeque<TurnSpec>>,
    ids: Arc<SimIds>,
    clock: Arc<VirtualClock>,
    calls: Mutex<Vec<ModelCallRecord>>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").finish_non_exhaustive()
    }
}

impl ScriptedModel {
    pub fn new(turns: Vec<TurnSpec>, ids: Arc<SimIds>, clock: Arc<VirtualClock>) -> ScriptedModel {
        ScriptedModel {
            turns: Mutex::new(turns.into()),
            ids,
            clock,
            calls: Mutex::new(Vec::new()),
        }
    }

    pub fn calls(&self) -> Vec<ModelCallRecord> {
        lock(&self.calls).clone()
    }

    /// Scripted turns the run never used.
    pub fn unused_turns(&self) -> usize {
        lock(&self.turns).len()
    }
}

impl LanguageModel for ScriptedModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream<'a>, ModelError>> {
        lock(&self.calls).push(ModelCallRecord {
            at: self.clock.now(),
            request: request.clone(),
        });
        let Some(turn) = lock(&self.turns).pop_front() else {
            return HookFuture::ready(Err(ModelError::Provider(
                "script exhausted: the model was called more often than the scenario scripts"
                    .into(),
            )));
        };
        HookFuture::new(async move {
            if turn.latency_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(turn.latency_ms)).await;
            }
            if let Some(e) = turn.error {
                return Err(ModelError::Provider(e));
            }
            let mut parts: Vec<StreamPart> =
                turn.text.into_iter().map(StreamPart::TextDelta).collect();
            let has_calls = !turn.tool_calls.is_empty();
            for call in turn.tool_calls {
                parts.push(StreamPart::ToolCall {
                    call_id: self.ids.next_id(IdKind::ToolCall),
                    tool: call.tool,
                    input: call.input,
                });
            }
            parts.push(StreamPart::Finish(if has_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            }));
            Ok(Box::new(ReadyStream::new(parts)) as BoxStream<'a>)
        })
    }
}

/// Serves the scripted model under every model name.
#[derive(Debug)]
pub struct ScriptedProvider(pub Arc<ScriptedModel>);

impl ModelProvider for ScriptedProvider {
    fn model(&self, _name: &str) -> Option<&dyn pai_runtime::LanguageModel> {
        Some(&*self.0)
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
                tokio::time::sleep(std::time::Duration::from_millis(self.script.latency_ms)).await;
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
