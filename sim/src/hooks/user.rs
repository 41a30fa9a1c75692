//! Hooks registered by name in a [`crate::Registry`]: the [`UserHook`]
//! trait a configuration type implements (an agent author's, through a
//! [`crate::Harness`], and each kind of the built-in library alike), the
//! factory that reads an entry into it, and a registered hook of one
//! scenario, checked at load.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use pai_runtime::hook::{Phase, Phases};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use pai_runtime::Lifecycle;

use super::build_context::BuildContext;
use super::in_context::in_sim;
use super::shared::{SimContext, SimHook, SimMetadata};
use super::spec::HookSpec;
use crate::configured::ConfigError;

/// A configuration that builds a hook: the type a scenario's
/// `[[lifecycle]] use = "..."` entry is read into (its fields are the
/// entry's other fields), and whose [`build`](UserHook::build) makes the
/// hook.
///
/// `C` and `M` say in types what the hook may assume: it runs with the
/// application context `C` and reads and writes the run metadata `M`
/// (`cx.run_metadata::<M>()`). By default they are the simulator's own,
/// [`SimContext`] and the JSON map [`SimMetadata`]: write such a hook
/// generic over the context (`impl<C: Send + Sync + 'static> Lifecycle<C>
/// for ...`) or for `SimContext`. A hook of the author's own agent
/// implements `UserHook<AgentContext, AgentMetadata>` and is registered
/// with a `Harness<AgentContext, AgentMetadata>`
/// ([`Harness::with_context`](crate::Harness::with_context)), which runs
/// every scenario's agent with that metadata type and a context of that
/// type; a harness of other types refuses it at compile time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a hook for context `{C}` and run metadata `{M}`",
    label = "this hook is registered with a harness of other types",
    note = "a `Harness<C, M>` registers hooks that implement `UserHook<C, M>`: the context and run metadata types of the hook and the harness must be the same"
)]
pub trait UserHook<C = SimContext, M = SimMetadata>:
    DeserializeOwned + JsonSchema + Send + Sync + 'static
{
    /// The hook this configuration describes, named `name` in the event
    /// log (return it from `Lifecycle::name`, so a failing oracle names it).
    fn build(&self, name: &str) -> Box<dyn Lifecycle<C>>;

    /// [`build`](UserHook::build) in a run of the simulator, with what the
    /// world lends its hooks (the log where a summary model records what it
    /// is sent). By default the hook needs none of it.
    fn build_in(&self, name: &str, context: &BuildContext) -> Box<dyn Lifecycle<C>> {
        let _ = context;
        self.build(name)
    }

    /// What the oracles foresee of the hook: the built-in library's kinds
    /// return themselves as a [`HookSpec`], whose decisions the oracles
    /// model. The default, `None`, is an author's hook: the oracles know
    /// only the phases it handles and judge its effects.
    fn foreseen(&self) -> Option<HookSpec> {
        None
    }
}

/// Makes a registered kind's hooks from an entry's configuration.
pub(crate) trait Factory: Send + Sync {
    /// The configuration read, as a maker of hooks and what the oracles
    /// foresee of them; or why it is refused.
    fn check(&self, config: &Map<String, Value>) -> Result<(Maker, Option<HookSpec>), ConfigError>;
    /// The configuration's schema.
    fn schema(&self, generator: &mut SchemaGenerator) -> Schema;
}

/// Builds one scenario's hook (under the name the log shows), in a run's
/// context.
pub(crate) type Maker = Arc<dyn Fn(&str, &BuildContext) -> SimHook + Send + Sync>;

/// The factory of the configuration type `H`, a hook for the context `C`
/// and the run metadata `M`.
pub(crate) struct Typed<H, C = SimContext, M = SimMetadata>(pub(crate) PhantomData<Types<H, C, M>>);

/// The types a [`Typed`] factory stands for, owned by none.
type Types<H, C, M> = fn() -> (H, C, M);

impl<H, C, M> Factory for Typed<H, C, M>
where
    H: UserHook<C, M>,
    C: Send + Sync + 'static,
    M: 'static,
{
    fn check(&self, config: &Map<String, Value>) -> Result<(Maker, Option<HookSpec>), ConfigError> {
        let typed: H = crate::configured::read(config)?;
        let foreseen = typed.foreseen();
        let make: Maker =
            Arc::new(move |name: &str, cx: &BuildContext| in_sim(typed.build_in(name, cx)));
        Ok((make, foreseen))
    }

    fn schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<H>()
    }
}

/// A registered hook of one scenario, checked: the name it was registered
/// under, its configuration as written, and the phases it handles.
#[derive(Clone)]
pub struct UserHookDef {
    /// The name the hook was registered under (`use = "..."`).
    pub use_name: String,
    /// The entry's configuration, as the scenario wrote it.
    pub config: Map<String, Value>,
    /// The phases the built hook handles (the oracles know no more of it).
    pub phases: Phases,
    pub(crate) make: Maker,
}

impl UserHookDef {
    /// The hook, named `name` in the event log (in a context of its own).
    pub fn build(&self, name: &str) -> SimHook {
        (self.make)(name, &BuildContext::default())
    }

    /// Whether the hook handles `phase`.
    pub fn handles(&self, phase: Phase) -> bool {
        self.phases.contains(phase)
    }
}

impl fmt::Debug for UserHookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserHookDef")
            .field("use_name", &self.use_name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PartialEq for UserHookDef {
    fn eq(&self, other: &UserHookDef) -> bool {
        (&self.use_name, &self.config) == (&other.use_name, &other.config)
    }
}
