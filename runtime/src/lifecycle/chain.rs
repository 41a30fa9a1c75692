//! The two onions of a composition (SPEC L6): the resolver chain and the
//! model-call chain. `a` is outermost; the innermost `next` is whatever the
//! composition itself was given, so compositions nest.

use std::pin::Pin;
use std::task::{Context, Poll};

use super::decision::{HookNote, NoteDecision};
use super::hook::Lifecycle;
use super::input::HookCx;
use super::phase::Phase;
use crate::context::{ContextInput, ContextLink, ContextNext};
use crate::error::{FailureCell, HookError, HookResult};
use crate::future::{Guarded, HookFuture, guarded};
use crate::message::ModelMessage;
use crate::model::{BoxStream, ModelError, ModelRequest};
use crate::model_call::{AttemptPatch, ModelLink, ModelNext};

/// Runs one inner hook call, turning a panic into a hook error that names
/// the hook (X2).
pub(super) fn call<'a, C: 'static, F, T>(hook: &'a dyn Lifecycle<C>, make: F) -> Call<'a, C, F, T>
where
    F: FnOnce() -> HookFuture<'a, HookResult<T>>,
{
    Call {
        hook,
        guarded: guarded(make),
    }
}

/// The future of [`call`]: no `async fn`, and inlined, so that a ready
/// answer is moved as few times as possible.
pub(super) struct Call<'a, C, F, T> {
    hook: &'a dyn Lifecycle<C>,
    guarded: Guarded<'a, F, HookResult<T>>,
}

impl<'a, C: 'static, F, T> Future for Call<'a, C, F, T>
where
    F: FnOnce() -> HookFuture<'a, HookResult<T>>,
{
    type Output = HookResult<T>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<HookResult<T>> {
        let this = self.get_mut();
        match Pin::new(&mut this.guarded).poll(cx) {
            Poll::Ready(Ok(r)) => Poll::Ready(r),
            Poll::Ready(Err(panic)) => Poll::Ready(Err(HookError::new(format!(
                "hook {} panicked: {panic}",
                this.hook.name()
            )))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Reports one inner hook's decision to the event log; the hook's name is
/// asked only when someone listens.
#[inline]
pub(super) fn note<C: 'static>(
    cx: &HookCx<'_, C>,
    phase: Phase,
    hook: &dyn Lifecycle<C>,
    decision: impl FnOnce() -> NoteDecision,
) {
    cx.note(|| HookNote {
        phase,
        hook: hook.name().to_string(),
        decision: decision(),
    });
}

/// [`note`] for a hook known by its name.
#[inline]
fn note_named<C>(
    cx: &HookCx<'_, C>,
    phase: Phase,
    hook: &str,
    decision: impl FnOnce() -> NoteDecision,
) {
    cx.note(|| HookNote {
        phase,
        hook: hook.to_string(),
        decision: decision(),
    });
}

/// The resolver onion of one composition: the hooks in `order`, then `then`.
pub(super) struct ContextChain<'a, C> {
    pub(super) hooks: &'a [Box<dyn Lifecycle<C>>],
    pub(super) order: &'a [usize],
    pub(super) cx: &'a HookCx<'a, C>,
    pub(super) input: &'a ContextInput<'a>,
    pub(super) then: &'a dyn ContextLink,
    pub(super) failure: &'a FailureCell,
}

impl<C> Clone for ContextChain<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for ContextChain<'_, C> {}

impl<C: Send + Sync + 'static> ContextLink for ContextChain<'_, C> {
    fn resolve(
        &self,
        base: Option<Vec<ModelMessage>>,
    ) -> HookFuture<'_, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            let Some((&i, rest)) = self.order.split_first() else {
                return self.then.resolve(base).await;
            };
            let hook = &*self.hooks[i];
            let inner = ContextChain {
                order: rest,
                ..*self
            };
            let next = ContextNext::new(&inner, base, self.failure);
            let out = call(hook, || {
                hook.resolve_model_context(self.cx, self.input, next)
            })
            .await;
            match &out {
                Ok(messages) => note(self.cx, Phase::ResolveModelContext, hook, || {
                    NoteDecision::Context {
                        messages: messages.len(),
                    }
                }),
                Err(e) => self.failure.record(e),
            }
            out
        })
    }
}

/// The model-call onion of one composition: the hooks in `order`, then `then`.
pub(super) struct ModelChain<'a, C> {
    pub(super) hooks: &'a [Box<dyn Lifecycle<C>>],
    pub(super) order: &'a [usize],
    pub(super) cx: &'a HookCx<'a, C>,
    pub(super) then: &'a dyn ModelLink,
    pub(super) failure: &'a FailureCell,
    /// The hook whose `next` this chain is (`None` for the whole onion).
    pub(super) caller: Option<&'a str>,
}

impl<C> Clone for ModelChain<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C> Copy for ModelChain<'_, C> {}

impl<C: Send + Sync + 'static> ModelLink for ModelChain<'_, C> {
    fn attempt<'s>(
        &'s self,
        request: &'s ModelRequest,
        patch: AttemptPatch,
    ) -> HookFuture<'s, Result<BoxStream, ModelError>> {
        HookFuture::new(async move {
            if let Some(caller) = self.caller {
                note_named(self.cx, Phase::AroundModelCall, caller, || {
                    NoteDecision::Next {
                        patch: patch.clone(),
                    }
                });
            }
            let Some((&i, rest)) = self.order.split_first() else {
                return self.then.attempt(request, patch).await;
            };
            let hook = &*self.hooks[i];
            let effective = patch.applied(request);
            let inner = ModelChain {
                order: rest,
                caller: Some(hook.name()),
                ..*self
            };
            let next = ModelNext::new(&inner, &effective, self.failure);
            let out = call(hook, || hook.around_model_call(self.cx, &effective, next)).await;
            note(self.cx, Phase::AroundModelCall, hook, || {
                NoteDecision::ModelCall {
                    error: out.as_ref().err().map(|e| e.message.clone()),
                }
            });
            // A provider error passes through; a hook's own failure is
            // recorded, so the run fails even if an outer hook recovers (L4).
            out.map_err(|e| {
                e.into_model_error().unwrap_or_else(|own| {
                    self.failure.record(&own);
                    ModelError::Hook(own.message)
                })
            })
        })
    }
}
