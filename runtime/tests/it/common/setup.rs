//! [`setup`]: a runtime for one agent over a `MemoryStore` of the test's
//! own, with a scripted main model "m", a recording sink, time that never
//! passes and counting ids unless the test says otherwise.

use std::sync::Arc;

use pai_runtime::{
    Agent, Clock, LanguageModel, MemoryStore, Runtime, ThreadHandle, model::ModelMap,
};

use super::{CountingIds, RecordingSink, ScriptedModel, StillClock};

/// What a test drives and looks at.
pub struct Setup {
    pub rt: Runtime<()>,
    pub store: Arc<MemoryStore>,
    pub events: Arc<RecordingSink>,
    /// The main model, "m".
    pub model: Arc<ScriptedModel>,
}

impl Setup {
    /// Thread `id` of client "alice".
    pub fn thread(&self, id: &str) -> ThreadHandle<()> {
        self.rt.client("alice").thread(id)
    }
}

/// A runtime's parts before it is built.
pub struct SetupBuilder {
    agent: Agent<()>,
    model: Arc<ScriptedModel>,
    models: ModelMap,
    store: Arc<MemoryStore>,
    clock: Arc<dyn Clock>,
    rewrite_threads: Option<usize>,
}

/// A runtime for `agent`, whose model is "m": by default a model that
/// answers "ok", a fresh `MemoryStore`, [`StillClock`] and [`CountingIds`].
pub fn setup(agent: Agent<()>) -> SetupBuilder {
    SetupBuilder {
        agent,
        model: ScriptedModel::text("ok"),
        models: ModelMap::new(),
        store: Arc::new(MemoryStore::default()),
        clock: Arc::new(StillClock),
        rewrite_threads: None,
    }
}

impl SetupBuilder {
    /// The main model "m".
    pub fn model(mut self, model: Arc<ScriptedModel>) -> Self {
        self.model = model;
        self
    }

    /// Another model, by name.
    pub fn with_model(mut self, name: &str, model: Arc<dyn LanguageModel>) -> Self {
        self.models = self.models.with(name, model);
        self
    }

    pub fn store(mut self, store: Arc<MemoryStore>) -> Self {
        self.store = store;
        self
    }

    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// At most `threads` threads' `history_rewritten` hooks at once.
    pub fn rewrite_concurrency(mut self, threads: usize) -> Self {
        self.rewrite_threads = Some(threads);
        self
    }

    pub fn build(self) -> Setup {
        let events = Arc::new(RecordingSink::default());
        let models = self.models.with("m", self.model.clone());
        let mut builder = Runtime::builder(self.agent, ())
            .models(models)
            .clock(self.clock)
            .ids(Arc::new(CountingIds::default()))
            .events(events.clone())
            .store(self.store.clone());
        if let Some(threads) = self.rewrite_threads {
            builder = builder.rewrite_concurrency(threads);
        }
        Setup {
            rt: builder.build().expect("runtime"),
            store: self.store,
            events,
            model: self.model,
        }
    }
}
