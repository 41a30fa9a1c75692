//! The two onions of a composition (SPEC L6): the resolver chain and the
//! model-call chain. `a` is outermost; the innermost `next` is whatever the
//! composition itself was given, so compositions nest.

use std::pin::Pin;

use super::decision::{HookNote, NoteDecision};
use super::hook::Lifecycle;
use super::input::HookCx;
use super::phase::Phase;
use crate::context::{ContextInput, ContextLink, ContextNext};
use crate::error::{FailureCell, HookError, HookResult};
use crate::future::{HookFuture, guarded};
use crate::message::ModelMessage;
use crate::model::{BoxStream, ModelError, ModelRequest};
use crate::model_call::{AttemptPatch, ModelLink, ModelNext};

/// Runs one inner hook call, turning a panic into a hook error that names
/// the hook. No `async fn`: a ready answer is moved out once, with no state
/// machine around it.
pub(super) fn call<'a, C: 'static, T>(
    hook: &'a dyn Lifecycle<C>,
    make: impl FnOnce() -> HookFuture<'a, HookResult<T>>,
) -> impl Future<Output = HookResult<T>> {
    let mut guarded = guarded(make);
    std::future::poll_fn(move |cx| {
        Pin::new(&mut guarded).poll(cx).map(|r| match r {
            Ok(r) => r,
            Err(panic) => Err(HookError::new(format!(
                "hook {} panicked: {panic}",
                hook.name()
            ))),
        })
    })
}

/// Reports one inner hook's decision to the event log.
pub(super) fn note<C>(
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
                Ok(messages) => note(self.cx, Phase::ResolveModelContext, hook.name(), || {
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
                note(self.cx, Phase::AroundModelCall, caller, || {
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
            note(self.cx, Phase::AroundModelCall, hook.name(), || {
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
