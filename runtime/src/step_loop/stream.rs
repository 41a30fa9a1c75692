//! The canonical stream of a step (SPEC S1, L7): the provider's parts through
//! the canonical stages, released to watchers and assembled into the parts
//! that are stored. Also the same stages over finished parts (a `respond` or
//! an abort's replacement, L12, S4).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Poll;

use super::exec::{Exec, Fail};
use crate::clock::Clock;
use crate::delta::Delta;
use crate::event::RunStage;
use crate::future::panic_message;
use crate::lifecycle::{Phase, StreamInput, StreamKind};
use crate::live::LiveStep;
use crate::message::Part;
use crate::model::{BoxStream, FinishReason, PartSink, StreamPart};
use crate::stream::Sink;
use crate::stream::{Abort, Assembler, NoAbort, Pipeline, StreamTransform, transform_parts};

/// Parts are handled synchronously inside one poll, as many as are ready (at
/// most this many, then the task yields), so a ready stream costs one poll,
/// one call into the stream and one panic guard per batch, not per part.
const BATCH: usize = 1024;

/// What consuming one provider stream gave.
#[derive(Debug, Default)]
pub(super) struct Consumed {
    /// The canonical parts, assembled.
    pub(super) parts: Vec<Part>,
    pub(super) deltas: usize,
    /// Characters of the deltas (counted only when events are recorded).
    pub(super) chars: usize,
    pub(super) finish: Option<FinishReason>,
    /// The provider's explanation of a refusal, its pieces joined (S6).
    pub(super) refusal: Option<String>,
    /// The provider failed mid-stream (or the stream panicked).
    pub(super) error: Option<String>,
    /// A canonical stage aborted the stream (S4).
    pub(super) abort: Option<Abort>,
    /// A canonical stage panicked.
    pub(super) stage_panic: Option<String>,
}

/// Mutable state of one consumption, shared by the poll loop and the finish.
struct Consuming<'s> {
    pipeline: Pipeline,
    live: &'s LiveStep<'s>,
    assembled: Assembler,
    out: Consumed,
    in_stage: bool,
    /// Characters are counted only for an event sink that will read them.
    count_chars: bool,
}

/// Where canonical parts go: the step's watchers, then the assembled parts.
struct Release<'a, 's> {
    live: &'a LiveStep<'s>,
    at: u64,
    assembled: &'a mut Assembler,
}

impl Sink for Release<'_, '_> {
    fn part(&mut self, part: StreamPart) {
        self.live.send(self.at, &part);
        self.assembled.push(part);
    }

    #[inline(always)]
    fn text(&mut self, text: Delta) {
        if self.live.watchers.is_empty() {
            self.assembled.push_text(text);
        } else {
            self.part(StreamPart::TextDelta(text));
        }
    }
}

impl<'s> Consuming<'s> {
    fn release(&mut self, at: u64) -> (&mut Pipeline, Release<'_, 's>) {
        let release = Release {
            live: self.live,
            at,
            assembled: &mut self.assembled,
        };
        (&mut self.pipeline, release)
    }

    /// One part through the canonical stages; `true` once a stage aborted.
    fn push(&mut self, part: StreamPart, at: u64) -> bool {
        if let StreamPart::TextDelta(d) = part {
            return self.push_text(d, at);
        }
        self.in_stage = true;
        let (pipeline, mut release) = self.release(at);
        let aborted = pipeline.push(part, &mut release);
        self.in_stage = false;
        self.aborted(aborted)
    }

    /// `push` of a text delta, moved as a `Delta` where it can be.
    #[inline(always)]
    fn push_text(&mut self, d: Delta, at: u64) -> bool {
        self.out.deltas += 1;
        if self.count_chars {
            self.out.chars += d.chars().count();
        }
        self.in_stage = true;
        let (pipeline, mut release) = self.release(at);
        let aborted = pipeline.push_text(d, &mut release);
        self.in_stage = false;
        self.aborted(aborted)
    }

    /// Keeps an abort; set only when one happened, so a part costs no drop
    /// of an old `None`.
    #[inline]
    fn aborted(&mut self, aborted: Option<Abort>) -> bool {
        match aborted {
            Some(a) => {
                self.out.abort = Some(a);
                true
            }
            None => false,
        }
    }

    /// The provider's stream ended: the stages flush what they held back.
    fn finish(&mut self, at: u64) {
        let (pipeline, mut release) = self.release(at);
        let flushed = catch_unwind(AssertUnwindSafe(|| pipeline.finish(&mut release)));
        match flushed {
            Ok(a) => self.out.abort = a,
            Err(p) => self.out.stage_panic = Some(panic_message(&*p)),
        }
    }
}

/// Takes the stream's ready parts, at most `left` of them in one poll (then
/// `full`); stops at an error, an abort or the batch's end.
struct Take<'a, 's> {
    c: &'a mut Consuming<'s>,
    clock: &'a dyn Clock,
    /// Whether the step has watchers: the time is read only for them, who
    /// are told it.
    watched: bool,
    left: usize,
    full: bool,
}

impl Take<'_, '_> {
    #[inline(always)]
    fn at(&self) -> u64 {
        if self.watched { self.clock.now() } else { 0 }
    }

    /// A part other than a text delta: out of the hot path.
    #[inline(never)]
    fn other(&mut self, part: StreamPart) -> bool {
        match part {
            StreamPart::Finish(r) => {
                self.c.out.finish = Some(r);
                true
            }
            StreamPart::Error(e) => {
                self.c.out.error = Some(e.into());
                false
            }
            StreamPart::Refusal(words) => {
                let refusal = self.c.out.refusal.get_or_insert_with(String::new);
                refusal.push_str(&words);
                true
            }
            part => {
                let at = self.at();
                !self.c.push(part, at)
            }
        }
    }
}

impl PartSink for Take<'_, '_> {
    #[inline]
    fn part(&mut self, part: StreamPart) -> bool {
        let go_on = match part {
            StreamPart::TextDelta(d) => {
                let at = self.at();
                !self.c.push_text(d, at)
            }
            part => self.other(part),
        };
        self.left -= 1;
        if go_on && self.left == 0 {
            self.full = true;
            return false;
        }
        go_on
    }
}

/// Consumes `stream` through `stages`, releasing each canonical part to the
/// step's watchers as it comes (S1, S2).
pub(super) async fn consume(
    mut stream: BoxStream,
    stages: Vec<Box<dyn StreamTransform>>,
    live: &LiveStep<'_>,
    clock: &dyn Clock,
    count_chars: bool,
) -> Consumed {
    let mut c = Consuming {
        pipeline: Pipeline::new(stages),
        live,
        assembled: Assembler::default(),
        out: Consumed::default(),
        in_stage: false,
        count_chars,
    };
    std::future::poll_fn(|cx| {
        let batch = catch_unwind(AssertUnwindSafe(|| {
            let mut take = Take {
                c: &mut c,
                clock,
                watched: !live.watchers.is_empty(),
                left: BATCH,
                full: false,
            };
            let polled = stream.poll_ready_parts(cx, &mut take);
            (polled, take.full)
        }));
        match batch {
            Ok((Poll::Pending, _)) => Poll::Pending,
            Ok((Poll::Ready(_), true)) => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Ok((Poll::Ready(_), false)) => Poll::Ready(()),
            Err(p) => {
                let msg = panic_message(&*p);
                if c.in_stage {
                    c.out.stage_panic = Some(msg);
                } else {
                    c.out.error = Some(format!("model stream panicked: {msg}"));
                }
                Poll::Ready(())
            }
        }
    })
    .await;
    drop(stream);
    if c.out.error.is_none() && c.out.abort.is_none() && c.out.stage_panic.is_none() {
        c.finish(clock.now());
    }
    live.end(clock.now(), c.out.abort.as_ref().map(|a| a.reason.as_str()));
    c.out.parts = c.assembled.into_parts();
    c.out
}

impl<C: Send + Sync + 'static> Exec<'_, C> {
    /// The canonical stages for one stream (L7): the lifecycle's stage, if
    /// any. Finished parts cannot be aborted away (`NoAbort`).
    pub(super) fn canonical(
        &self,
        kind: StreamKind,
        step: Option<u32>,
    ) -> Result<Vec<Box<dyn StreamTransform>>, Fail> {
        if !self.handles(Phase::TransformStepStream) {
            return Ok(Vec::new());
        }
        let cx = self.cx();
        let input = StreamInput { step, kind };
        let stage = catch_unwind(AssertUnwindSafe(|| {
            self.lifecycle().transform_step_stream(&cx, &input)
        }))
        .map_err(|p| {
            Fail::phase(
                Phase::TransformStepStream,
                format!("hook panicked: {}", panic_message(&*p)),
            )
        })?;
        Ok(stage
            .map(|t| match kind {
                StreamKind::Model => t,
                StreamKind::Respond
                | StreamKind::Replacement
                | StreamKind::Refusal
                | StreamKind::Summary => NoAbort::wrap(t),
            })
            .into_iter()
            .collect())
    }

    /// Finished parts (a response or a replacement) through fresh canonical
    /// stages; a panic there fails the run (X2).
    pub(super) fn finished(
        &self,
        kind: StreamKind,
        step: Option<u32>,
        parts: Vec<Part>,
    ) -> Result<Vec<Part>, Fail> {
        let stages = self.canonical(kind, step)?;
        catch_unwind(AssertUnwindSafe(|| transform_parts(stages, parts))).map_err(|p| {
            Fail::new(
                RunStage::Phase(Phase::TransformStepStream),
                format!("stream transform panicked: {}", panic_message(&*p)),
            )
        })
    }

    /// The thread's watchers for one step; empty when nobody watches.
    pub(super) async fn live_step(&self, step: u32) -> LiveStep<'_> {
        let watchers = self.sh.process.attach(self.thread).await.watchers.clone();
        LiveStep {
            watchers,
            run_id: self.run,
            step,
        }
    }
}
