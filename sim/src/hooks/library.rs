//! The built-in library as registered hooks: each kind's configuration is a
//! [`UserHook`] like an author's, registered under its `hook` name by the
//! same function a harness uses, and foreseen by the oracles through its
//! [`HookSpec`].

use super::build_context::BuildContext;
use super::shared::SimHook;
use super::spec::HookSpec;
use super::user::UserHook;
use crate::hooks::{
    AfterStep, BaseContext, CompactionSpec, ContextMessage, Delay, Fail, Fallback, Guardrail,
    HideMessage, HistoryProbe, MetadataOverlay, MutateThread, PatchMetadata, Rag, RecentWindow,
    Redact, RejectTool, ReplaceMessages, ReplaceToolInput, ReplaceToolOutput, ResolveTwice,
    RewriteListener, RewritePatchSpec, Route, SetMetadata, SlowResolver, StreamGuard,
    SystemMessage, Timeout, Uppercase,
};

/// Where the library registers its kinds (a [`crate::Registry`]).
pub(crate) trait Kinds {
    /// Registers the configuration type `C` under `name`.
    fn kind<C: UserHook>(&mut self, name: &str);
}

/// The build of a kind: from its name alone, or (`context`) with what the
/// world lends its hooks.
macro_rules! build {
    () => {
        fn build(&self, name: &str) -> SimHook {
            self.hook(name)
        }
    };
    (context) => {
        fn build(&self, name: &str) -> SimHook {
            self.hook(name, &BuildContext::default())
        }

        fn build_in(&self, name: &str, context: &BuildContext) -> SimHook {
            self.hook(name, context)
        }
    };
}

/// Each kind as `"<hook name>" => <HookSpec variant>(<configuration>)`:
/// its `UserHook`, and the registration of every kind in this order.
macro_rules! library {
    ($($kind:literal => $variant:ident($config:ty $(, $context:ident)?)),* $(,)?) => {
        $(impl UserHook for $config {
            build!($($context)?);

            fn foreseen(&self) -> Option<HookSpec> {
                Some(HookSpec::$variant(self.clone()))
            }
        })*

        /// Registers every kind of the library in `kinds`, under the name
        /// `hook = "..."` gives it.
        pub(crate) fn register(kinds: &mut impl Kinds) {
            $(kinds.kind::<$config>($kind);)*
        }
    };
}

library! {
    "system_message" => SystemMessage(SystemMessage),
    "route" => Route(Route),
    "replace_messages" => ReplaceMessages(ReplaceMessages),
    "rag" => Rag(Rag),
    "recent_window" => RecentWindow(RecentWindow),
    "slow_resolver" => SlowResolver(SlowResolver),
    "resolve_twice" => ResolveTwice(ResolveTwice),
    "base_context" => BaseContext(BaseContext),
    "history_probe" => HistoryProbe(HistoryProbe),
    "fallback" => Fallback(Fallback),
    "timeout" => Timeout(Timeout),
    "redact" => Redact(Redact),
    "uppercase" => Uppercase(Uppercase),
    "stream_guard" => StreamGuard(StreamGuard),
    "reject_tool" => RejectTool(RejectTool),
    "replace_tool_input" => ReplaceToolInput(ReplaceToolInput),
    "replace_tool_output" => ReplaceToolOutput(ReplaceToolOutput),
    "after_step" => AfterStep(AfterStep),
    "guardrail" => Guardrail(Guardrail),
    "fail" => Fail(Fail),
    "delay" => Delay(Delay),
    "set_metadata" => SetMetadata(SetMetadata),
    "patch_metadata" => PatchMetadata(PatchMetadata),
    "metadata_overlay" => MetadataOverlay(MetadataOverlay),
    "context_message" => ContextMessage(ContextMessage),
    "compaction" => Compaction(CompactionSpec, context),
    "rewrite_patch" => RewritePatch(RewritePatchSpec),
    "rewrite_listener" => RewriteListener(RewriteListener),
    "hide_message" => HideMessage(HideMessage),
    "mutate_thread" => MutateThread(MutateThread),
}
