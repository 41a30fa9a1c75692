//! The innermost links of the two onions: the runtime's default context leaf
//! and the provider attempt, with its timeout on the runtime's clock.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

use crate::clock::{Clock, Millis};
use crate::context::cache::ContextCache;
use crate::context::{ContextLink, History};
use crate::error::HookResult;
use crate::event::EventKind;
use crate::future::{HookFuture, guarded};
use crate::message::ModelMessage;
use crate::model::{
    BoxStream, ModelError, ModelProvider, ModelRequest, PartSink, PartStream, StreamPart,
};
use crate::model_call::{AttemptPatch, ModelLink};
use crate::stop::StopSignal;

/// Where the innermost links report what they did.
pub(crate) trait AttemptEvents: Send + Sync {
    fn event(&self, kind: Box<dyn FnOnce() -> EventKind + '_>);
}

/// The runtime's default context: the anchored, context-visible history (M1),
/// or the base an outer resolver supplied (M2).
pub(crate) struct DefaultLeaf<'a> {
    pub(crate) step: u32,
    pub(crate) history: &'a History<'a>,
    /// The run's context so far, extended to the anchor on a read.
    pub(crate) cache: &'a ContextCache,
    /// Report each leaf read (only when some hook resolves context).
    pub(crate) events: Option<&'a dyn AttemptEvents>,
}

impl ContextLink for DefaultLeaf<'_> {
    fn resolve(
        &self,
        base: Option<Vec<ModelMessage>>,
    ) -> HookFuture<'_, HookResult<Vec<ModelMessage>>> {
        match base {
            Some(b) => HookFuture::ready(Ok(self.report(true, b))),
            None => HookFuture::new(async move {
                self.cache.refresh(self.history).await?;
                Ok(self.report(false, self.cache.context()))
            }),
        }
    }
}

impl DefaultLeaf<'_> {
    /// Reports a leaf read to the event log, if anyone listens.
    fn report(&self, is_base: bool, messages: Vec<ModelMessage>) -> Vec<ModelMessage> {
        if let Some(ev) = self.events {
            let (step, count) = (self.step, messages.len());
            ev.event(Box::new(move || EventKind::ContextLeaf {
                step,
                base: is_base,
                messages: count,
            }));
        }
        messages
    }
}

/// How many of a request's messages came from the resolver.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentCounts {
    pub(crate) context: usize,
}

/// The provider attempt at the heart of `around_model_call`.
pub(crate) struct ProviderAttempt<'a> {
    pub(crate) step: u32,
    pub(crate) counts: SentCounts,
    pub(crate) models: &'a dyn ModelProvider,
    pub(crate) clock: &'a dyn Clock,
    pub(crate) events: &'a dyn AttemptEvents,
    pub(crate) stop: &'a StopSignal,
    pub(crate) attempts: AtomicU32,
    /// The route of the newest attempt whose stream exists: tool calls of the
    /// step are checked against it (P6).
    pub(crate) answered: std::sync::Mutex<Option<crate::patch::Route>>,
}

impl ModelLink for ProviderAttempt<'_> {
    fn attempt<'s>(
        &'s self,
        request: &'s ModelRequest,
        patch: AttemptPatch,
    ) -> HookFuture<'s, Result<BoxStream, ModelError>> {
        HookFuture::new(async move {
            if self.stop.is_set() {
                // A stopped run (cancelled, deleted, its lease lost) starts
                // no new attempt, whatever a hook asks (H5, K3).
                return Err(ModelError::Stopped);
            }
            let attempt = self.attempts.fetch_add(1, Ordering::Relaxed) + 1;
            let mut req = patch.applied(request);
            if req.attempt != attempt {
                // Only a second attempt copies the request (P6: the hook's
                // own request stays read-only).
                req.to_mut().attempt = attempt;
            }
            let step = self.step;
            self.events.event(Box::new(|| EventKind::ModelCall {
                step,
                attempt,
                route: req.route.clone(),
                context: self.counts.context,
                overlay: req.messages.len().saturating_sub(self.counts.context),
                messages: req.messages.len(),
                tools: req.tools.iter().map(|t| t.name.clone()).collect(),
                timeout_ms: req.timeout_ms,
            }));
            let result = self.start(&req).await;
            if result.is_ok() {
                *self.answered.lock().unwrap_or_else(|e| e.into_inner()) = Some(req.route.clone());
            }
            if let Err(e) = &result {
                self.events.event(Box::new(|| EventKind::AttemptFailed {
                    step,
                    attempt,
                    error: e.to_string(),
                }));
            }
            result
        })
    }
}

impl ProviderAttempt<'_> {
    async fn start(&self, req: &ModelRequest) -> Result<BoxStream, ModelError> {
        if self.stop.is_set() {
            return Err(ModelError::Stopped);
        }
        let model = self
            .models
            .model(&req.route.model)
            .ok_or_else(|| ModelError::UnknownModel(req.route.model.clone()))?;
        // The run's stop always wins; the attempt's deadline covers creating
        // the stream and consuming it.
        let mut stop = self.stop.wait();
        let mut timer = req.timeout_ms.map(|ms| (self.clock.sleep(ms), ms));
        let mut created = pin!(guarded(|| model.stream(req)));
        let won = std::future::poll_fn(|cx| {
            if Pin::new(&mut stop).poll(cx).is_ready() {
                return Poll::Ready(Err(ModelError::Stopped));
            }
            if let Poll::Ready(r) = created.as_mut().poll(cx) {
                return Poll::Ready(Ok(r));
            }
            if let Some((t, ms)) = &mut timer
                && Pin::new(t).poll(cx).is_ready()
            {
                return Poll::Ready(Err(ModelError::Timeout(*ms)));
            }
            Poll::Pending
        })
        .await?;
        flatten(won).map(|inner| Box::new(Guarded { inner, stop, timer }) as BoxStream)
    }
}

fn flatten(r: Result<Result<BoxStream, ModelError>, String>) -> Result<BoxStream, ModelError> {
    match r {
        Ok(r) => r,
        Err(panic) => Err(ModelError::Provider(format!("model panicked: {panic}"))),
    }
}

/// A provider stream that ends with an error when the run stops or the
/// attempt's deadline passes. The inner stream is polled first, so a stream
/// that has a part ready pays nothing else per part.
struct Guarded {
    inner: BoxStream,
    stop: HookFuture<'static, ()>,
    timer: Option<(HookFuture<'static, ()>, Millis)>,
}

impl Guarded {
    /// The inner stream has nothing ready: the error part if the run
    /// stopped or the deadline passed.
    fn interrupted(&mut self, cx: &mut Context<'_>) -> Option<StreamPart> {
        if Pin::new(&mut self.stop).poll(cx).is_ready() {
            return Some(StreamPart::error(ModelError::Stopped.to_string()));
        }
        if let Some((t, ms)) = &mut self.timer
            && Pin::new(t).poll(cx).is_ready()
        {
            let ms = *ms;
            self.timer = None;
            return Some(StreamPart::error(ModelError::Timeout(ms).to_string()));
        }
        None
    }
}

impl PartStream for Guarded {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<StreamPart>> {
        if let Poll::Ready(part) = self.inner.poll_next(cx) {
            return Poll::Ready(part);
        }
        match self.interrupted(cx) {
            Some(error) => Poll::Ready(Some(error)),
            None => Poll::Pending,
        }
    }

    /// As `poll_next` part by part: the inner stream's ready parts first,
    /// then, when it has none, the stop and the deadline.
    fn poll_ready_parts(&mut self, cx: &mut Context<'_>, sink: &mut dyn PartSink) -> Poll<bool> {
        loop {
            let ready = self.inner.poll_ready_parts(cx, sink);
            if ready.is_ready() {
                return ready;
            }
            let Some(error) = self.interrupted(cx) else {
                return Poll::Pending;
            };
            if !sink.part(error) {
                return Poll::Ready(false);
            }
        }
    }
}
