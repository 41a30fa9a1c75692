//! Single-phase hooks from closures, in the spirit of [`crate::tool_fn`]:
//! `hook::after_step("one_more", |_cx, input| HookFuture::ready(Ok(...)))`.
//! The hook handles exactly its one phase, so composition skips it elsewhere.

use std::fmt;
use std::marker::PhantomData;

use super::decision::{
    AfterStepDecision, RunDecision, StepDecision, ToolCallDecision, ToolResultDecision,
};
use super::hook::Lifecycle;
use super::input::{
    AfterStepInput, HookCx, RunInput, StepInput, StreamInput, ToolCallInput, ToolResultInput,
};
use super::phase::{Phase, Phases};
use crate::context::{ContextInput, ContextNext};
use crate::error::HookResult;
use crate::future::HookFuture;
use crate::message::ModelMessage;
use crate::model::{BoxStream, ModelRequest};
use crate::model_call::ModelNext;
use crate::stream::StreamTransform;

/// A hook for one phase `P`, made of a name and a closure.
pub struct FnHook<F, P> {
    name: String,
    f: F,
    phase: PhantomData<fn() -> P>,
}

impl<F, P> fmt::Debug for FnHook<F, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnHook").field("name", &self.name).finish()
    }
}

fn new<F, P>(name: &str, f: F) -> FnHook<F, P> {
    FnHook {
        name: name.to_string(),
        f,
        phase: PhantomData,
    }
}

/// Phase markers: which phase an [`FnHook`] handles.
pub mod on {
    /// `prepare_run`
    #[derive(Debug)]
    pub struct PrepareRun;
    /// `resolve_model_context`
    #[derive(Debug)]
    pub struct ResolveModelContext;
    /// `prepare_model_step`
    #[derive(Debug)]
    pub struct PrepareModelStep;
    /// `around_model_call`
    #[derive(Debug)]
    pub struct AroundModelCall;
    /// `transform_step_stream`
    #[derive(Debug)]
    pub struct TransformStepStream;
    /// `before_tool_call`
    #[derive(Debug)]
    pub struct BeforeToolCall;
    /// `after_tool_result`
    #[derive(Debug)]
    pub struct AfterToolResult;
    /// `after_step`
    #[derive(Debug)]
    pub struct AfterStep;
}

/// One constructor and one `Lifecycle` impl for a phase whose closure takes
/// the hook context and the phase input and returns a decision future.
macro_rules! decision_phase {
    ($(#[$doc:meta])* $ctor:ident, $marker:ident, $phase:ident, $input:ident, $decision:ty) => {
        $(#[$doc])*
        pub fn $ctor<C, F>(name: &str, f: F) -> FnHook<F, on::$marker>
        where
            F: for<'a> Fn(&'a HookCx<'a, C>, &'a $input<'a>) -> HookFuture<'a, HookResult<$decision>>
                + Send
                + Sync
                + 'static,
        {
            new(name, f)
        }

        impl<C, F> Lifecycle<C> for FnHook<F, on::$marker>
        where
            F: for<'a> Fn(&'a HookCx<'a, C>, &'a $input<'a>) -> HookFuture<'a, HookResult<$decision>>
                + Send
                + Sync
                + 'static,
        {
            fn name(&self) -> &str {
                &self.name
            }
            fn phases(&self) -> Phases {
                Phases::only(Phase::$marker)
            }
            fn $phase<'a>(
                &'a self,
                cx: &'a HookCx<'_, C>,
                input: &'a $input<'_>,
            ) -> HookFuture<'a, HookResult<$decision>> {
                (self.f)(cx, input)
            }
        }
    };
}

decision_phase!(
    /// A `prepare_run` hook (SPEC L1, L5, L12).
    prepare_run, PrepareRun, prepare_run, RunInput, RunDecision
);
decision_phase!(
    /// A `prepare_model_step` hook (SPEC L5, P5).
    prepare_model_step, PrepareModelStep, prepare_model_step, StepInput, StepDecision
);
decision_phase!(
    /// A `before_tool_call` hook (SPEC L8, T1, T3).
    before_tool_call, BeforeToolCall, before_tool_call, ToolCallInput, ToolCallDecision
);
decision_phase!(
    /// An `after_tool_result` hook (SPEC L9, T4, T5).
    after_tool_result, AfterToolResult, after_tool_result, ToolResultInput, ToolResultDecision
);
decision_phase!(
    /// An `after_step` hook (SPEC L10, A1).
    after_step, AfterStep, after_step, AfterStepInput, AfterStepDecision
);

/// A `resolve_model_context` hook: a layer of the resolver onion (SPEC L6, M2).
pub fn resolve_model_context<C, F>(name: &str, f: F) -> FnHook<F, on::ResolveModelContext>
where
    F: for<'a> Fn(
            &'a HookCx<'a, C>,
            &'a ContextInput<'a>,
            ContextNext<'a>,
        ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>>
        + Send
        + Sync
        + 'static,
{
    new(name, f)
}

impl<C, F> Lifecycle<C> for FnHook<F, on::ResolveModelContext>
where
    F: for<'a> Fn(
            &'a HookCx<'a, C>,
            &'a ContextInput<'a>,
            ContextNext<'a>,
        ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>>
        + Send
        + Sync
        + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn phases(&self) -> Phases {
        Phases::only(Phase::ResolveModelContext)
    }
    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        (self.f)(cx, input, next)
    }
}

/// An `around_model_call` hook: a layer of the model-call onion (SPEC L6, P6).
pub fn around_model_call<C, F>(name: &str, f: F) -> FnHook<F, on::AroundModelCall>
where
    F: for<'a> Fn(
            &'a HookCx<'a, C>,
            &'a ModelRequest,
            ModelNext<'a>,
        ) -> HookFuture<'a, HookResult<BoxStream>>
        + Send
        + Sync
        + 'static,
{
    new(name, f)
}

impl<C, F> Lifecycle<C> for FnHook<F, on::AroundModelCall>
where
    F: for<'a> Fn(
            &'a HookCx<'a, C>,
            &'a ModelRequest,
            ModelNext<'a>,
        ) -> HookFuture<'a, HookResult<BoxStream>>
        + Send
        + Sync
        + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn phases(&self) -> Phases {
        Phases::only(Phase::AroundModelCall)
    }
    fn around_model_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, C>,
        request: &'a ModelRequest,
        next: ModelNext<'a>,
    ) -> HookFuture<'a, HookResult<BoxStream>> {
        (self.f)(cx, request, next)
    }
}

/// A `transform_step_stream` hook: returns the canonical stage for a stream,
/// or `None` (SPEC L7, S1).
pub fn transform_step_stream<C, F>(name: &str, f: F) -> FnHook<F, on::TransformStepStream>
where
    F: Fn(&HookCx<'_, C>, &StreamInput) -> Option<Box<dyn StreamTransform>> + Send + Sync + 'static,
{
    new(name, f)
}

impl<C, F> Lifecycle<C> for FnHook<F, on::TransformStepStream>
where
    F: Fn(&HookCx<'_, C>, &StreamInput) -> Option<Box<dyn StreamTransform>> + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn phases(&self) -> Phases {
        Phases::only(Phase::TransformStepStream)
    }
    fn transform_step_stream(
        &self,
        cx: &HookCx<'_, C>,
        input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        (self.f)(cx, input)
    }
}
