//! A harness of the author's own agent types (issue 39, item 3): hooks
//! written against the agent's context and typed run metadata, checked
//! against them when they are registered (at compile time).

use pai_runtime::hook::RunMetadata;

use crate::Harness;
use crate::agent_types::AgentTypes;
use crate::registry::Registry;

impl<C, M> Harness<C, M>
where
    C: Send + Sync + 'static,
    M: RunMetadata,
{
    /// A harness whose scenarios' agents keep the run metadata `M` (the
    /// author's serde type, `M::default()` until a hook writes it) and
    /// whose registered hooks run with the context `C`, one made by
    /// `context` for each runtime (each worker of a scenario with
    /// `workers`, as each process of a deployment makes its own; keep it
    /// deterministic: no wall clock, no randomness of its own). The
    /// library's hooks run as in any scenario.
    ///
    /// What a hook may assume is said in its type: it implements
    /// [`UserHook<C, M>`](crate::hooks::UserHook), reads `cx.context` as a
    /// `C` and the run metadata as an `M` (`cx.run_metadata::<M>()`,
    /// `cx.update_run_metadata(|m: &mut M| ...)`). A hook of other types
    /// is refused when it is registered, by the compiler; a scenario entry
    /// that keeps the run metadata as the simulator's JSON map (the
    /// library's `set_metadata`, `patch_metadata`, `metadata_overlay`, a
    /// tool's `on_output`) is refused at load, at its line; fuzz cases
    /// leave those out.
    ///
    /// ```
    /// use pai_runtime::{HookFuture, Lifecycle, hook, hook::ToolResultDecision};
    /// use pai_sim::{Harness, hooks::UserHook};
    ///
    /// /// The agent's own context and run metadata.
    /// struct Shop { currency: &'static str }
    /// #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// struct Ledger { refunds: u32 }
    ///
    /// /// Counts refunds in the ledger.
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Count {}
    ///
    /// impl UserHook<Shop, Ledger> for Count {
    ///     fn build(&self, name: &str) -> Box<dyn Lifecycle<Shop>> {
    ///         Box::new(hook::after_tool_result::<Shop, _>(name, |cx, _| {
    ///             HookFuture::new(async move {
    ///                 let _: &str = cx.context.currency;
    ///                 cx.update_run_metadata(|l: &mut Ledger| l.refunds += 1).await?;
    ///                 Ok(ToolResultDecision::Continue)
    ///             })
    ///         }))
    ///     }
    /// }
    ///
    /// let mut harness = Harness::<Shop, Ledger>::with_context(|| Shop { currency: "EUR" });
    /// harness.hook::<Count>("count");
    /// ```
    ///
    /// and a hook of other types is refused where it is registered
    /// (E0277: "`Count` is not a hook for context `Shop` and run metadata
    /// `Budget`"):
    ///
    /// ```compile_fail,E0277
    /// # use pai_runtime::{HookFuture, Lifecycle, hook, hook::ToolResultDecision};
    /// # use pai_sim::{Harness, hooks::UserHook};
    /// # struct Shop;
    /// # #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// # struct Ledger { refunds: u32 }
    /// #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// struct Budget { spent: u32 }
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct Count {}
    /// # impl UserHook<Shop, Ledger> for Count {
    /// #     fn build(&self, name: &str) -> Box<dyn Lifecycle<Shop>> {
    /// #         Box::new(hook::after_tool_result::<Shop, _>(name, |_, _| {
    /// #             HookFuture::ready(Ok(ToolResultDecision::Continue))
    /// #         }))
    /// #     }
    /// # }
    ///
    /// let mut harness = Harness::<Shop, Budget>::with_context(|| Shop);
    /// harness.hook::<Count>("count");
    /// ```
    pub fn with_context(context: impl Fn() -> C + Send + Sync + 'static) -> Self {
        let mut registry = Registry::default();
        registry.set_types(AgentTypes::new::<C, M>(context));
        Harness::of(registry)
    }
}
