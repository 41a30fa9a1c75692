//! The observation API: what an oracle a harness registers
//! ([`crate::Harness::oracle`]) sees of one run, and how it reports. It is
//! a read-only view of what the built-in oracles judge (the event log, each
//! model call as the model received it, the stored threads, what watchers
//! heard), in the runtime's own types, so a user's oracle reads what the
//! built-in ones read and is reported beside them.
//!
//! ```
//! use pai_sim::observe::Observation;
//!
//! /// No model call is sent an e-mail address.
//! fn no_email_in_model_calls(obs: &Observation<'_>) -> Result<(), String> {
//!     for call in obs.model_calls() {
//!         if call.text().contains('@') {
//!             return Err(format!("model call {} was sent an e-mail address", call.index()));
//!         }
//!     }
//!     Ok(())
//! }
//! ```

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use pai_runtime::event::LiveEvent;
use pai_runtime::id::RunId;
use pai_runtime::message::ModelMessage;
use pai_runtime::store::StoredThread;
use pai_runtime::tool::ToolSpec;
use pai_runtime::{Event, Millis, ModelRequest};
use serde_json::{Map, Value};

/// What the simulator shows a user's oracle of one run. The oracles'
/// own view implements it (`oracle::Observed`); this module imports
/// nothing of the simulator, so a checked scenario can carry its
/// harness's oracles without the scenario reaching the oracles.
pub(crate) trait View {
    fn scenario(&self) -> &str;
    fn seed(&self) -> u64;
    fn events(&self) -> &[Event];
    fn threads(&self) -> &[StoredThread];
    fn live(&self) -> &[(String, LiveEvent)];
    fn cut_short(&self) -> bool;
    /// How many hooks the composition has.
    fn hook_count(&self) -> usize;
    /// Hook `index` of the composition.
    fn hook(&self, index: usize) -> HookInfo<'_>;
    /// Each registered tool of the agent: the name its calls use, the name
    /// it was registered under, its configuration.
    fn registered_tools(&self) -> Vec<(&str, &str, &Map<String, Value>)>;
    /// How many model calls the run made.
    fn calls(&self) -> usize;
    /// Model call `index`: when, the request (its messages left out), and
    /// the messages it was sent.
    fn call(&self, index: usize) -> (Millis, &ModelRequest, &[ModelMessage]);
}

/// One run as a user's oracle sees it (the run of one scenario, or of one
/// fuzz case, under one seed). Everything is as the run left it; nothing
/// here can change the run.
#[derive(Clone, Copy)]
pub struct Observation<'a> {
    view: &'a dyn View,
}

impl fmt::Debug for Observation<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observation")
            .field("scenario", &self.scenario())
            .field("seed", &self.seed())
            .finish_non_exhaustive()
    }
}

impl<'a> Observation<'a> {
    /// The scenario's name (a fuzz case's is `fuzz case <seed>`).
    pub fn scenario(&self) -> &'a str {
        self.view.scenario()
    }

    /// The seed the run used.
    pub fn seed(&self) -> u64 {
        self.view.seed()
    }

    /// Every event of the run, in the order the runtime recorded them
    /// (with several workers: the events of the workers that held the
    /// lease, as the transcript shows them).
    pub fn events(&self) -> &'a [Event] {
        self.view.events()
    }

    /// Every model call, in the order the models received them, with the
    /// request each was sent (the context, the instructions, the tools).
    pub fn model_calls(&self) -> impl Iterator<Item = ModelCall<'a>> + 'a {
        let view = self.view;
        (0..view.calls()).map(move |index| {
            let (at, request, messages) = view.call(index);
            ModelCall {
                index,
                at,
                request,
                messages,
            }
        })
    }

    /// The scenario's lifecycle, in composition order: each hook's name in
    /// the event log and, for one a harness registered, the name it was
    /// registered under and its configuration (an oracle about one hook
    /// judges only the runs whose composition holds it).
    pub fn hooks(&self) -> impl Iterator<Item = HookInfo<'a>> + 'a {
        let view = self.view;
        (0..view.hook_count()).map(move |i| view.hook(i))
    }

    /// The configuration of each hook registered as `use_name` in the
    /// composition, in order (none: the hook is not in this run).
    pub fn configs(&self, use_name: &'a str) -> impl Iterator<Item = &'a Map<String, Value>> + 'a {
        let hooks = self.hooks();
        hooks
            .filter(move |h| h.registered_as == Some(use_name))
            .filter_map(|h| h.config)
    }

    /// Each tool of the agent registered as `use_name` (none: the tool is
    /// not in this run), in order: the name its calls use, and its
    /// configuration as the scenario wrote it.
    pub fn tool_configs(
        &self,
        use_name: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a Map<String, Value>)> + 'a {
        let tools = self.view.registered_tools().into_iter();
        tools
            .filter(move |(_, registered, _)| *registered == use_name)
            .map(|(name, _, config)| (name, config))
    }

    /// Every thread as the store holds it at the end: its messages, public
    /// and private metadata, runs and lease.
    pub fn threads(&self) -> &'a [StoredThread] {
        self.view.threads()
    }

    /// What each watcher received, in order: the watcher's name (its
    /// thread's owner) and the live event.
    pub fn live(&self) -> &'a [(String, LiveEvent)] {
        self.view.live()
    }

    /// Whether the virtual-time limit stopped the scenario before it was
    /// idle (runs still going then never ended).
    pub fn cut_short(&self) -> bool {
        self.view.cut_short()
    }
}

/// One hook of the composition.
#[derive(Debug, Clone, Copy)]
pub struct HookInfo<'a> {
    /// Its name in the event log.
    pub name: &'a str,
    /// The name a harness registered it under (`use = "..."`); `None` for
    /// a hook of the built-in library.
    pub registered_as: Option<&'a str>,
    /// A registered hook's configuration, as the scenario wrote it.
    pub config: Option<&'a Map<String, Value>>,
}

/// One model call: what the model was sent.
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    index: usize,
    at: Millis,
    request: &'a ModelRequest,
    messages: &'a [ModelMessage],
}

impl<'a> ModelCall<'a> {
    /// Its place among the run's model calls, from 0 (the transcript's
    /// `call N` counts from 1).
    pub fn index(&self) -> usize {
        self.index
    }

    /// When it was made, in virtual milliseconds.
    pub fn at(&self) -> Millis {
        self.at
    }

    /// The run that made it (empty for a compaction summary's call).
    pub fn run(&self) -> &'a RunId {
        &self.request.run_id
    }

    /// The step of that run, from 1.
    pub fn step(&self) -> u32 {
        self.request.step
    }

    /// The model the route chose.
    pub fn model(&self) -> &'a str {
        &self.request.route.model
    }

    /// The instructions sent.
    pub fn instructions(&self) -> &'a str {
        &self.request.instructions
    }

    /// The context sent, in order.
    pub fn messages(&self) -> &'a [ModelMessage] {
        self.messages
    }

    /// The tools offered.
    pub fn tools(&self) -> &'a [ToolSpec] {
        &self.request.tools
    }

    /// Every text the model was sent, the instructions first, one per
    /// line: what a check for leaked text reads.
    pub fn text(&self) -> String {
        let mut out = self.instructions().to_string();
        for m in self.messages {
            out.push('\n');
            out.push_str(&m.text());
        }
        out
    }
}

/// What a user's oracle reports: a message, and the run it is about, if
/// one. A `String` or `&str` converts into one with no run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The run the finding is about (the transcript prints it).
    pub run: Option<String>,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl Finding {
    /// A finding about run `run`.
    pub fn in_run(run: impl fmt::Display, message: impl Into<String>) -> Finding {
        Finding {
            run: Some(run.to_string()),
            message: message.into(),
        }
    }
}

impl From<String> for Finding {
    fn from(message: String) -> Finding {
        Finding { run: None, message }
    }
}

impl From<&str> for Finding {
    fn from(message: &str) -> Finding {
        Finding::from(message.to_string())
    }
}

type Judge = dyn Fn(&Observation<'_>) -> Result<(), Finding> + Send + Sync;

/// An oracle a harness registered: its name and its judgement.
#[derive(Clone)]
pub(crate) struct UserOracle {
    name: Arc<str>,
    judge: Arc<Judge>,
}

impl UserOracle {
    pub(crate) fn new<F, E>(name: &str, judge: F) -> UserOracle
    where
        F: Fn(&Observation<'_>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<Finding>,
    {
        UserOracle {
            name: name.into(),
            judge: Arc::new(move |obs| judge(obs).map_err(Into::into)),
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// The oracles a harness registered, in the order it registered them; a
/// checked scenario carries them, so every run of it is judged by them.
#[derive(Clone, Default)]
pub struct UserOracles(Arc<[UserOracle]>);

impl UserOracles {
    pub(crate) fn new(oracles: Vec<UserOracle>) -> UserOracles {
        UserOracles(oracles.into())
    }

    /// The registered names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(UserOracle::name)
    }

    /// Each oracle's finding on one run, under its name; an oracle that
    /// panics reports the panic (and the others still judge the run).
    pub(crate) fn judge(&self, view: &dyn View) -> Vec<(Arc<str>, Finding)> {
        let obs = Observation { view };
        let mut out = Vec::new();
        for oracle in self.0.iter() {
            let verdict = catch_unwind(AssertUnwindSafe(|| (oracle.judge)(&obs)));
            let finding = match verdict {
                Ok(Ok(())) => continue,
                Ok(Err(finding)) => finding,
                Err(panic) => {
                    Finding::from(format!("the oracle panicked: {}", panic_text(&*panic)))
                }
            };
            out.push((oracle.name.clone(), finding));
        }
        out
    }
}

/// What a panic said, when it said it as text (empty otherwise).
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

impl fmt::Debug for UserOracles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for UserOracles {
    fn eq(&self, other: &UserOracles) -> bool {
        self.names().eq(other.names())
    }
}
