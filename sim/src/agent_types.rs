//! The types of an author's agent a typed harness
//! ([`crate::Harness::with_context`]) names: the run metadata its
//! scenarios' agents keep, and the maker of the author's context their
//! hooks run with. A scenario checked with that harness carries them to
//! every runtime it builds; without one, the agent keeps the simulator's
//! JSON map ([`SimMetadata`]) and its hooks the simulator's context.

use std::any::{Any, TypeId, type_name};
use std::fmt;
use std::sync::Arc;

use pai_runtime::Agent;
use pai_runtime::hook::RunMetadata;

use crate::hooks::{SimContext, SimMetadata};

/// Makes one runtime's author context.
type ContextMaker = Arc<dyn Fn() -> Arc<dyn Any + Send + Sync> + Send + Sync>;

/// The run metadata and the context maker of a harness's agent.
#[derive(Clone)]
pub(crate) struct AgentTypes {
    metadata: TypeId,
    metadata_name: &'static str,
    declare: fn(Agent<SimContext>) -> Agent<SimContext>,
    context: Option<ContextMaker>,
}

fn declare<M: RunMetadata>(agent: Agent<SimContext>) -> Agent<SimContext> {
    agent.run_metadata::<M>()
}

impl Default for AgentTypes {
    /// The simulator's own: the JSON map, no author context.
    fn default() -> AgentTypes {
        AgentTypes {
            metadata: TypeId::of::<SimMetadata>(),
            metadata_name: type_name::<SimMetadata>(),
            declare: declare::<SimMetadata>,
            context: None,
        }
    }
}

impl AgentTypes {
    /// Run metadata `M`, and each runtime's context `C` from `make`.
    pub(crate) fn new<C, M>(make: impl Fn() -> C + Send + Sync + 'static) -> AgentTypes
    where
        C: Send + Sync + 'static,
        M: RunMetadata,
    {
        let context: ContextMaker = Arc::new(move || Arc::new(make()));
        AgentTypes {
            metadata: TypeId::of::<M>(),
            metadata_name: type_name::<M>(),
            declare: declare::<M>,
            context: Some(context),
        }
    }

    /// `agent` keeping this run metadata.
    pub(crate) fn declare(&self, agent: Agent<SimContext>) -> Agent<SimContext> {
        (self.declare)(agent)
    }

    /// A new author context for one runtime, if the harness has one.
    pub(crate) fn context(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.context.as_ref().map(|make| make())
    }

    /// Whether the agent keeps the simulator's JSON map as run metadata.
    pub(crate) fn json_metadata(&self) -> bool {
        self.metadata == TypeId::of::<SimMetadata>()
    }

    /// Why a scenario entry that reads and writes the run metadata as
    /// the simulator's JSON map (`what`) cannot run with this agent;
    /// `None` when the agent keeps that map.
    pub(crate) fn refuses_json_metadata(&self, what: &str) -> Option<String> {
        (!self.json_metadata()).then(|| {
            format!(
                "{what} reads and writes the run metadata as a JSON map, but this harness's agent keeps `{}` (Harness::with_context): keep the metadata with the harness's own hooks",
                self.metadata_name
            )
        })
    }
}

impl fmt::Debug for AgentTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTypes")
            .field("metadata", &self.metadata_name)
            .field("context", &self.context.is_some())
            .finish()
    }
}

impl PartialEq for AgentTypes {
    fn eq(&self, other: &AgentTypes) -> bool {
        self.metadata == other.metadata && self.context.is_some() == other.context.is_some()
    }
}
