//! An author's hook in the simulator's context: a hook written against
//! the author's own context type `C` runs where the simulator's runtime
//! calls hooks with a [`SimContext`], which carries the author's context
//! (made by the harness's context maker, one per runtime, as each worker
//! of a deployment makes its own). Every phase is handed on with the same
//! run, clock, trace and thread facade, only the context changed.

use std::any::Any;

use pai_runtime::ModelRequest;
use pai_runtime::context::{ContextInput, ContextNext};
use pai_runtime::hook::{
    AfterStepDecision, AfterStepInput, ModelNext, Phases, RewriteFact, RewriteInput, RewritePatch,
    RunDecision, RunInput, StepDecision, StepInput, StreamInput, ToolCallDecision, ToolCallInput,
    ToolResultDecision, ToolResultInput,
};
use pai_runtime::message::ModelMessage;
use pai_runtime::model::BoxStream;
use pai_runtime::stream::StreamTransform;
use pai_runtime::{HookCx, HookError, HookFuture, HookResult, Lifecycle};

use super::shared::{SimContext, SimHook};

/// `hook` as a hook of the simulator: itself when it is written for the
/// simulator's context, else run with the author's context the
/// [`SimContext`] carries.
pub(crate) fn in_sim<C: Send + Sync + 'static>(hook: Box<dyn Lifecycle<C>>) -> SimHook {
    let any: Box<dyn Any> = Box::new(hook);
    match any.downcast::<SimHook>() {
        Ok(same) => *same,
        Err(any) => match any.downcast::<Box<dyn Lifecycle<C>>>() {
            Ok(hook) => Box::new(InContext { hook: *hook }),
            Err(_) => unreachable!("the box holds the hook it was given"),
        },
    }
}

/// An author's hook, called with the author's context.
struct InContext<C> {
    hook: Box<dyn Lifecycle<C>>,
}

/// The author's context `sim` carries; an error when it carries none of
/// type `C` (a harness makes one of its own type for every runtime, so
/// only a hook built outside a harness meets it).
fn author<C: 'static>(sim: &SimContext) -> HookResult<&C> {
    sim.author
        .as_deref()
        .and_then(|a| a.downcast_ref::<C>())
        .ok_or_else(|| {
            HookError::new(format!(
                "the simulator's context carries no {} (register the hook with a Harness::with_context of that type)",
                std::any::type_name::<C>()
            ))
        })
}

impl<C: Send + Sync + 'static> Lifecycle<SimContext> for InContext<C> {
    fn name(&self) -> &str {
        self.hook.name()
    }

    fn phases(&self) -> Phases {
        self.hook.phases()
    }

    fn prepare_run<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a RunInput<'_>,
    ) -> HookFuture<'a, HookResult<RunDecision>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.prepare_run(&cx, input).await
        })
    }

    fn resolve_model_context<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a ContextInput<'_>,
        next: ContextNext<'a>,
    ) -> HookFuture<'a, HookResult<Vec<ModelMessage>>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.resolve_model_context(&cx, input, next).await
        })
    }

    fn prepare_model_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a StepInput<'_>,
    ) -> HookFuture<'a, HookResult<StepDecision>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.prepare_model_step(&cx, input).await
        })
    }

    fn around_model_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        request: &'a ModelRequest,
        next: ModelNext<'a>,
    ) -> HookFuture<'a, HookResult<BoxStream>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.around_model_call(&cx, request, next).await
        })
    }

    fn transform_step_stream(
        &self,
        cx: &HookCx<'_, SimContext>,
        input: &StreamInput,
    ) -> Option<Box<dyn StreamTransform>> {
        let context = author::<C>(cx.context).ok()?;
        self.hook
            .transform_step_stream(&cx.with_context(context), input)
    }

    fn before_tool_call<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a ToolCallInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolCallDecision>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.before_tool_call(&cx, input).await
        })
    }

    fn after_tool_result<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a ToolResultInput<'_>,
    ) -> HookFuture<'a, HookResult<ToolResultDecision>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.after_tool_result(&cx, input).await
        })
    }

    fn after_step<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a AfterStepInput<'_>,
    ) -> HookFuture<'a, HookResult<AfterStepDecision>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.after_step(&cx, input).await
        })
    }

    fn prepare_history_rewrite<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.prepare_history_rewrite(&cx, input).await
        })
    }

    fn history_rewritten<'a>(
        &'a self,
        cx: &'a HookCx<'_, SimContext>,
        facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        HookFuture::new(async move {
            let cx = cx.with_context(author::<C>(cx.context)?);
            self.hook.history_rewritten(&cx, facts).await
        })
    }
}
