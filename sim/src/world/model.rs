//! Scripted models: each model name answers its calls with its own turns
//! (or the default script's), or hands them to the model a harness
//! registered for it (`use = "..."`); every call is recorded as it came.
//! Which turn a call gets is the world's [`AnswerBook`]'s: turns in the
//! order of first calls, and a call made again (the same run, step and
//! attempt, after a takeover) answered with the turn it got before.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use pai_runtime::{
    Clock, HookFuture, IdKind, IdSource, LanguageModel, ModelError, ModelRequest, StreamPart,
    model::{BoxStream, FinishReason, ModelProvider, PartStream},
};

use super::calls::{Answer, Calls, ScriptName};
use super::clock::VirtualClock;
use super::lock::lock;
use super::replay::ReplayStream;
use super::seeded::SimIds;
use crate::book::AnswerBook;
use crate::scenario::{ModelSpec, Recording, RecordingKind, Replay, Scenario, TurnSpec};

/// Every model call of a run, in order, across scripts.
pub type CallLog = Arc<Mutex<Calls>>;

/// One answer of a script: a scripted turn or a recording.
enum Turn {
    Scripted(Box<TurnSpec>),
    Recorded(Arc<Recording>),
}

/// A scripted model: its turns (or recordings) answer its calls, as the
/// world's answer book deals them; or the registered model it wraps
/// answers them.
pub struct ScriptedModel {
    script: ScriptName,
    /// The model a harness registered for this script, built for the run.
    registered: Option<Arc<dyn LanguageModel>>,
    /// The turns, the first answering answer 1.
    turns: Vec<Turn>,
    book: Arc<AnswerBook>,
    /// With recordings: their pacing.
    replay: Option<Arc<Replay>>,
    unavailable: bool,
    ids: Arc<SimIds>,
    clock: Arc<VirtualClock>,
    log: CallLog,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("script", &self.script)
            .finish_non_exhaustive()
    }
}

impl ScriptedModel {
    fn new(
        script: ScriptName,
        spec: &ModelSpec,
        (replay, registered): (Option<&Arc<Replay>>, Option<Arc<dyn LanguageModel>>),
        (ids, clock, book): (Arc<SimIds>, Arc<VirtualClock>, Arc<AnswerBook>),
        log: CallLog,
    ) -> ScriptedModel {
        let turns: Vec<Turn> = match replay {
            Some(r) => r.recordings.iter().cloned().map(Turn::Recorded).collect(),
            None => spec
                .turns
                .iter()
                .map(|t| Turn::Scripted(Box::new(t.clone())))
                .collect(),
        };
        ScriptedModel {
            script,
            registered,
            turns,
            book,
            replay: replay.cloned(),
            unavailable: spec.unavailable,
            ids,
            clock,
            log,
        }
    }

    /// Scripted turns the run never used.
    pub fn unused_turns(&self) -> usize {
        let used = self.book.used(&self.source()).len();
        self.turns.len().saturating_sub(used)
    }

    /// The script's name in the answer book.
    fn source(&self) -> String {
        self.script.to_string()
    }

    pub fn script(&self) -> &ScriptName {
        &self.script
    }

    fn record(&self, request: &ModelRequest, answer: Answer, recording: Option<Arc<Recording>>) {
        let at = self.clock.now();
        lock(&self.log).push((at, request), self.script.clone(), answer, recording);
    }

    /// The stream of one recording, after the script's latency; an error
    /// body fails the attempt before any stream exists (P7).
    async fn replay(&self, recording: Arc<Recording>) -> Result<BoxStream, ModelError> {
        let (latency_ms, delta_ms, chunk) = self
            .replay
            .as_deref()
            .map_or((0, 0, None), |r| (r.latency_ms, r.delta_ms, r.chunk));
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        if let RecordingKind::ErrorBody { message, status } = &recording.kind {
            return Err(match status {
                Some(status) => ModelError::http(*status, message.clone()),
                None => ModelError::Http {
                    status: None,
                    retryable: false,
                    message: message.clone(),
                },
            });
        }
        Ok(Box::new(ReplayStream::new(
            recording,
            chunk,
            delta_ms,
            self.ids.clone(),
        )) as BoxStream)
    }

    /// The stream of one turn, after its latency.
    async fn play(&self, turn: TurnSpec) -> Result<BoxStream, ModelError> {
        if turn.latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(turn.latency_ms)).await;
        }
        if let Some(e) = turn.error {
            return Err(ModelError::Provider(e));
        }
        let mut parts: VecDeque<StreamPart> = turn
            .text
            .into_iter()
            .map(|t| StreamPart::TextDelta(t.into()))
            .collect();
        if let Some(e) = turn.stream_error {
            parts.push_back(StreamPart::error(e));
        } else {
            let has_calls = !turn.tool_calls.is_empty();
            for call in turn.tool_calls {
                parts.push_back(StreamPart::tool_call(
                    self.ids.next_id(IdKind::ToolCall),
                    call.tool,
                    call.input,
                ));
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
    }
}

impl LanguageModel for ScriptedModel {
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        if let Some(model) = &self.registered {
            self.record(request, Answer::Registered, None);
            return model.stream(request);
        }
        if self.unavailable {
            self.record(request, Answer::Unavailable, None);
            let model = &request.route.model;
            return HookFuture::ready(Err(ModelError::Provider(format!(
                "model {model} is unavailable"
            ))));
        }
        let call = (request.run_id.as_str(), request.step, request.attempt);
        let given = self.book.answer(&self.source(), call, self.turns.len());
        let Some((n, turn)) = given.map(|g| (g.n, &self.turns[g.n - 1])) else {
            self.record(request, Answer::Exhausted, None);
            return HookFuture::ready(Err(ModelError::Provider(format!(
                "script {} exhausted: the model was called more often than the scenario scripts",
                self.script
            ))));
        };
        match turn {
            Turn::Scripted(turn) => {
                self.record(request, Answer::Turn(n), None);
                HookFuture::new(self.play((**turn).clone()))
            }
            Turn::Recorded(recording) => {
                self.record(request, Answer::Turn(n), Some(recording.clone()));
                HookFuture::new(self.replay(recording.clone()))
            }
        }
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

/// Serves each model name its own script, or the default script, and keeps
/// the log of every call.
#[derive(Debug)]
pub struct ScriptedProvider {
    default: ScriptedModel,
    by_name: BTreeMap<String, ScriptedModel>,
    log: CallLog,
}

impl ScriptedProvider {
    /// The scenario's scripts: `[model]` and each `[models.NAME]`, replaying
    /// their recordings where they have some, each registered model built
    /// afresh (for this run, or this worker).
    pub fn new(
        s: &Scenario,
        ids: &Arc<SimIds>,
        clock: &Arc<VirtualClock>,
        book: &Arc<AnswerBook>,
    ) -> ScriptedProvider {
        let log = CallLog::default();
        let script = |name: ScriptName, spec| {
            let key = match &name {
                ScriptName::Default => None,
                ScriptName::Model(n) => Some(n.clone()),
            };
            let replay = s.replays.get(&key);
            let built = s.registered.get(&key).map(|d| d.build(&name.to_string()));
            let answers = (replay, built);
            let world = (ids.clone(), clock.clone(), book.clone());
            ScriptedModel::new(name, spec, answers, world, log.clone())
        };
        ScriptedProvider {
            default: script(ScriptName::Default, &s.model),
            by_name: s
                .models
                .iter()
                .map(|(name, spec)| (name.clone(), script(ScriptName::Model(name.clone()), spec)))
                .collect(),
            log,
        }
    }

    /// Every script, default first.
    pub fn scripts(&self) -> impl Iterator<Item = &ScriptedModel> {
        std::iter::once(&self.default).chain(self.by_name.values())
    }

    /// Every call so far, in order; the log is left empty.
    pub fn take_calls(&self) -> Calls {
        std::mem::take(&mut *lock(&self.log))
    }
}

impl ModelProvider for ScriptedProvider {
    fn model(&self, name: &str) -> Option<&dyn LanguageModel> {
        Some(self.by_name.get(name).unwrap_or(&self.default))
    }
}

/// The provider handed to the runtime; the simulator keeps its own handle to
/// read the scripts afterwards.
#[derive(Debug)]
pub struct SharedProvider(pub Arc<ScriptedProvider>);

impl ModelProvider for SharedProvider {
    fn model(&self, name: &str) -> Option<&dyn LanguageModel> {
        self.0.model(name)
    }
}
