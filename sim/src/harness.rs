//! Library mode: an agent author's own hooks, tools and models under the
//! simulator, from their own `cargo test`. A [`Harness`] knows hooks,
//! tools and models by name; scenario files name them with
//! `[[lifecycle]] use = "..."`, `[[agent.tools]] use = "..."` and
//! `[model] use = "..."`, their configuration inline; [`Harness::run_dir`] runs a folder of them with
//! every oracle, twice (D4), and compares each transcript with its
//! snapshot in the author's crate. [`Harness::new`] runs hooks with the
//! simulator's context and JSON-map run metadata;
//! [`Harness::with_context`] makes a harness of the agent's own context
//! and typed run metadata, whose hooks implement `UserHook<C, M>` (a hook
//! of other types does not compile where it is registered).
//!
//! ```no_run
//! use pai_runtime::{HookFuture, hook, hook::RunDecision};
//! use pai_sim::{Harness, hooks::{SimHook, UserHook}};
//!
//! /// A policy that answers every run with one fixed line.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Closed {
//!     reply: String,
//! }
//!
//! impl UserHook for Closed {
//!     fn build(&self, name: &str) -> SimHook {
//!         let reply = self.reply.clone();
//!         Box::new(hook::prepare_run(name, move |_, _| {
//!             let _ = &reply;
//!             HookFuture::ready(Ok(RunDecision::default()))
//!         }))
//!     }
//! }
//!
//! let mut harness = Harness::new();
//! harness.hook::<Closed>("closed");
//! harness.run_dir("tests/scenarios");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use pai_runtime::hook::RunMetadata;

use crate::fuzz::Campaign;
pub use crate::harness_dir::DirOutcome;
use crate::harness_dir::write_page;
use crate::harness_fuzz::FuzzOutcome;
use crate::hooks::{SimContext, SimMetadata, UserHook};
use crate::observe::{Finding, Observation, UserOracle};
use crate::registry::Registry;
use crate::scenario::{Scenario, ScenarioError};
use crate::suite::{self, SnapshotMode};
use crate::user_model::UserModel;
use crate::user_tool::UserTool;
use crate::world::StoreKind;

/// The simulator with an author's hooks and oracles registered.
///
/// `C` and `M` are the agent's context and run metadata types: by
/// default the simulator's own ([`SimContext`], and [`SimMetadata`], a
/// JSON map); [`Harness::with_context`] makes a harness of the author's
/// own, whose hooks are written against them.
pub struct Harness<C = SimContext, M = SimMetadata> {
    registry: Registry,
    /// Where [`Harness::fuzz`] writes its finds (default `tests/fuzz-finds`).
    finds: Option<PathBuf>,
    types: PhantomData<fn() -> (C, M)>,
}

impl Default for Harness {
    fn default() -> Harness {
        Harness::new()
    }
}

impl<C, M> Clone for Harness<C, M> {
    fn clone(&self) -> Self {
        Harness {
            registry: self.registry.clone(),
            finds: self.finds.clone(),
            types: PhantomData,
        }
    }
}

impl<C, M> fmt::Debug for Harness<C, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness")
            .field("registry", &self.registry)
            .field("finds", &self.finds)
            .field("types", &self.registry.types())
            .finish()
    }
}

/// One scenario run by [`Harness::show`]: stable API.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Shown {
    /// The seed it ran under.
    pub seed: u64,
    /// The transcript (the text a snapshot holds).
    pub transcript: String,
    /// The timeline page: one self-contained HTML file.
    pub html: String,
    /// Whether the run showed what the scenario expects (`Err`: why not).
    pub verdict: Result<(), String>,
}

/// Why [`Harness::show`] could not run a scenario.
#[derive(Debug, thiserror::Error)]
pub enum ShowError {
    /// The file did not load (located, SPEC X1).
    #[error("{0}")]
    Load(#[from] ScenarioError),
    /// The run could not be set up.
    #[error("{0}")]
    Run(#[from] crate::SimError),
}

impl Harness {
    /// A harness that knows only the built-in library (its kinds
    /// registered in the harness's registry, by their `hook` names).
    pub fn new() -> Harness {
        Harness::of(Registry::default())
    }
}

impl<C, M> Harness<C, M>
where
    C: Send + Sync + 'static,
    M: RunMetadata,
{
    /// A harness of these types over `registry`.
    pub(crate) fn of(registry: Registry) -> Self {
        Harness {
            registry,
            finds: None,
            types: PhantomData,
        }
    }

    /// Registers the configuration type `H` under `name`: an entry
    /// `[[lifecycle]] use = "<name>"` is read into an `H` and builds its
    /// hook, written for this harness's context `C` and run metadata `M`
    /// (a hook of other types does not compile here: see
    /// [`Harness::with_context`]). Panics when `name` is registered already, by the built-in
    /// library (its kinds go by their `hook` names) or an earlier call (two
    /// hooks under one name is a mistake in the test's setup, not in a
    /// scenario).
    pub fn hook<H: UserHook<C, M>>(&mut self, name: &str) -> &mut Self {
        assert!(
            !self.registry.is_library(name),
            "a hook is registered as {name:?} already: it is a kind of the built-in library (`hook = {name:?}`)"
        );
        assert!(
            self.registry.typed_hook::<H, C, M>(name),
            "a hook is registered as {name:?} already"
        );
        self
    }

    /// Registers the tool configuration `T` under `name`: an entry
    /// `[[agent.tools]] use = "<name>"` is read into a `T` and builds the
    /// author's tool, which model tool calls name by the entry's `name`
    /// (default: `<name>`). The entry may also set `latency_ms` (virtual
    /// time before each call reaches the tool), `approval = true` (each
    /// call waits for a client's approval, SPEC T7) and `on_output`. The
    /// tool runs on the virtual clock: see [`UserTool`]. Panics when a tool
    /// is registered as `name` already.
    pub fn tool<T: UserTool>(&mut self, name: &str) -> &mut Self {
        assert!(
            self.registry.tool::<T>(name),
            "a tool is registered as {name:?} already"
        );
        self
    }

    /// Registers the model configuration `U` under `name`: a script
    /// `[model] use = "<name>"` (or `[models.<model>] use = "<name>"`) is
    /// read into a `U` (the script's other fields) and builds the author's
    /// model adapter, which answers every call of that script instead of
    /// scripted turns. Each call is still recorded (the transcript shows
    /// it as `registered`); the oracles that foresee scripted turns stand
    /// down for it. The model runs on the virtual clock: see
    /// [`UserModel`]. Panics when a model is registered as `name` already.
    pub fn model<U: UserModel>(&mut self, name: &str) -> &mut Self {
        assert!(
            self.registry.model::<U>(name),
            "a model is registered as {name:?} already"
        );
        self
    }

    /// [`Harness::hook`], and lets [`Harness::fuzz`] draw the hook into
    /// its cases, each with a configuration from the strategy `configs`
    /// makes (a function, so the strategy may be any proptest strategy).
    ///
    /// ```
    /// use proptest::prelude::*;
    /// # use pai_runtime::{HookFuture, hook, hook::RunDecision};
    /// # use pai_sim::hooks::{SimHook, UserHook};
    /// #[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Closed { reply: String }
    /// # impl UserHook for Closed {
    /// #     fn build(&self, name: &str) -> SimHook {
    /// #         Box::new(hook::prepare_run(name, |_, _| HookFuture::ready(Ok(RunDecision::default()))))
    /// #     }
    /// # }
    ///
    /// fn closed_configs() -> impl Strategy<Value = Closed> {
    ///     "[a-z ]{1,12}".prop_map(|reply| Closed { reply })
    /// }
    ///
    /// let mut harness = pai_sim::Harness::new();
    /// harness.hook_with("closed", closed_configs);
    /// ```
    pub fn hook_with<S, F>(&mut self, name: &str, configs: F) -> &mut Self
    where
        F: Fn() -> S + Send + Sync + 'static,
        S: proptest::strategy::Strategy,
        S::Value: UserHook<C, M> + serde::Serialize,
    {
        self.hook::<S::Value>(name);
        self.registry
            .drawn(name, crate::harness_fuzz::drawer(configs));
        self
    }

    /// [`Harness::hook_with`] with the configuration type's own strategy
    /// (`H: Arbitrary`, e.g. derived with `proptest-derive`).
    pub fn hook_arbitrary<H>(&mut self, name: &str) -> &mut Self
    where
        H: UserHook<C, M> + proptest::arbitrary::Arbitrary + serde::Serialize,
    {
        self.hook_with(name, proptest::arbitrary::any::<H>)
    }

    /// [`Harness::tool`], and lets [`Harness::fuzz`] draw the tool into
    /// its cases: each with a configuration from the strategy `configs`
    /// makes, and calls of it in the cases' model scripts with inputs from
    /// the strategy `inputs` makes (the tool's input type, or JSON). The
    /// fuzzer adds inputs of its own around them: the boundary of the
    /// tool's approval predicate (`Tool::needs_approval`, found by
    /// bisection between an input it holds on and one it does not: the
    /// last value that asks no approval, and the first that does), and
    /// the numbers in the case's configurations of the author's hooks and
    /// tools, one either side (a limit of 500 gives 499, 500 and 501).
    ///
    /// ```
    /// use proptest::prelude::*;
    /// # use std::sync::Arc;
    /// # use pai_runtime::{Tool, ToolError, tool::NeedsApproval, typed_tool};
    /// #[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Booking { limit: u64 }
    /// #[derive(Debug, serde::Serialize, serde::Deserialize)]
    /// struct Fare { fare: u64 }
    /// impl pai_sim::UserTool for Booking {
    ///     fn build(&self, name: &str) -> Arc<dyn Tool> {
    ///         let limit = self.limit;
    ///         let approval = NeedsApproval::when(move |f: &Fare| f.fare > limit);
    ///         typed_tool(name, "books a fare", approval, |_cx, f: Fare| async move {
    ///             Ok::<_, ToolError>(f.fare)
    ///         })
    ///         .tool()
    ///     }
    /// }
    ///
    /// let mut harness = pai_sim::Harness::new();
    /// harness.tool_with(
    ///     "book",
    ///     || Just(Booking { limit: 500 }),
    ///     || (0u64..2000).prop_map(|fare| Fare { fare }),
    /// );
    /// ```
    pub fn tool_with<S, F, I, G>(&mut self, name: &str, configs: F, inputs: G) -> &mut Self
    where
        F: Fn() -> S + Send + Sync + 'static,
        S: proptest::strategy::Strategy,
        S::Value: UserTool + serde::Serialize,
        G: Fn() -> I + Send + Sync + 'static,
        I: proptest::strategy::Strategy,
        I::Value: serde::Serialize,
    {
        self.tool::<S::Value>(name);
        let configs = crate::harness_fuzz::drawer(configs);
        let inputs = crate::harness_fuzz::value_drawer(inputs);
        self.registry.drawn_tool(name, configs, inputs);
        self
    }

    /// [`Harness::tool_with`] with the configuration's and the input's own
    /// strategies (`T: Arbitrary`, `In: Arbitrary`, e.g. derived with
    /// `proptest-derive`).
    pub fn tool_arbitrary<T, In>(&mut self, name: &str) -> &mut Self
    where
        T: UserTool + proptest::arbitrary::Arbitrary + serde::Serialize,
        In: proptest::arbitrary::Arbitrary + serde::Serialize + 'static,
    {
        self.tool_with(
            name,
            proptest::arbitrary::any::<T>,
            proptest::arbitrary::any::<In>,
        )
    }

    /// [`Harness::model`], and lets [`Harness::fuzz`] draw the model into
    /// some of its cases (in place of the case's default script), each
    /// with a configuration from the strategy `configs` makes.
    pub fn model_with<S, F>(&mut self, name: &str, configs: F) -> &mut Self
    where
        F: Fn() -> S + Send + Sync + 'static,
        S: proptest::strategy::Strategy,
        S::Value: UserModel + serde::Serialize,
    {
        self.model::<S::Value>(name);
        let configs = crate::harness_fuzz::drawer(configs);
        self.registry.drawn_model(name, configs);
        self
    }

    /// Texts of the author's domain (an account number, a phrase a policy
    /// reacts to, a word in another script) that [`Harness::fuzz`] weaves
    /// into a third of its users' messages and scripted model texts, at
    /// random places, the model's text then cut into stream deltas at
    /// random characters: the generated cases then say what the author's
    /// hooks are there to handle.
    pub fn fuzz_words<I, S>(&mut self, words: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.registry.add_words(words.into_iter().map(Into::into));
        self
    }

    /// Registers an oracle of the author's own: after every run of every
    /// scenario and fuzz case this harness loads, `judge` reads the run
    /// through the [`Observation`] API, and an `Err` is reported like a
    /// built-in oracle's violation, under `name` (`VIOLATION <name> run=…`
    /// in the transcript; a scenario expecting to pass fails). An oracle
    /// that panics is reported the same way. Panics when `name` is taken,
    /// by another registered oracle or a built-in one.
    ///
    /// ```
    /// let mut harness = pai_sim::Harness::new();
    /// harness.oracle("no_email_in_model_calls", |obs| {
    ///     match obs.model_calls().find(|c| c.text().contains('@')) {
    ///         Some(c) => Err(format!("model call {} was sent an e-mail address", c.index())),
    ///         None => Ok(()),
    ///     }
    /// });
    /// ```
    pub fn oracle<F, E>(&mut self, name: &str, judge: F) -> &mut Self
    where
        F: Fn(&Observation<'_>) -> Result<(), E> + Send + Sync + 'static,
        E: Into<Finding>,
    {
        let built_in = crate::scenario::OracleId::ALL
            .iter()
            .any(|o| o.as_str() == name);
        assert!(!built_in, "{name:?} names a built-in oracle");
        assert!(
            self.registry.oracle(UserOracle::new(name, judge)),
            "an oracle is registered as {name:?} already"
        );
        self
    }

    /// The scenario format's JSON Schema with the registered hooks, tools
    /// and models: each `use = "<name>"` entry (or script) checked against
    /// its configuration type, for
    /// an editor (`#:schema` in TOML, `$schema` in JSON). Write it with
    /// [`crate::schema_text`]. Panics when a configuration type's schema
    /// name is one of the format's own (rename the type).
    pub fn schema(&self) -> serde_json::Value {
        match crate::harness_schema::schema(&self.registry) {
            Ok(schema) => schema,
            Err(e) => panic!("{e}"),
        }
    }

    /// Where [`Harness::fuzz`] writes the scenario file of each find
    /// (default: `tests/fuzz-finds`, from the crate's folder, where `cargo
    /// test` runs).
    pub fn finds_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.finds = Some(dir.into());
        self
    }

    /// A fuzz campaign over the author's compositions: `cases` generated
    /// cases from `seed` (the library's hooks, tools, scripted models,
    /// timelines with waiting, steering, queueing, cancels, deletes,
    /// rewrites and compaction, and workers with faults), each with some
    /// of the hooks registered with [`Harness::hook_with`] mixed in at
    /// random places, every case judged twice by every oracle (the
    /// harness's own too). The campaign stops at the first failing case,
    /// which is shrunk and written as a scenario file into
    /// [`Harness::finds_dir`]. `PAI_SIM_FUZZ_CASES`
    /// and `PAI_SIM_FUZZ_SEED` override the arguments (a longer campaign,
    /// or a replay, from the same test).
    pub fn check_fuzz(&self, cases: u64, seed: u64) -> FuzzOutcome {
        quiet_planted_panics();
        let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
        let cases = env("PAI_SIM_FUZZ_CASES").unwrap_or(cases);
        let seed = env("PAI_SIM_FUZZ_SEED").unwrap_or(seed);
        let campaign = Campaign {
            seed,
            cases: Some(cases),
            shard: (1, 1),
            keep_going: false,
            shrink_budget: 200,
            store: StoreKind::Memory,
            differential: 0,
            swarm: true,
            registry: self.registry.clone(),
        };
        let summary = campaign.run(|_| true);
        let dir = self
            .finds
            .clone()
            .unwrap_or_else(|| "tests/fuzz-finds".into());
        let written = crate::harness_fuzz::write_finds(&dir, seed, &summary);
        FuzzOutcome {
            seed,
            summary,
            written,
        }
    }

    /// [`Harness::check_fuzz`], for a `#[test]`: prints the report, and
    /// panics with it when a case failed.
    pub fn fuzz(&self, cases: u64, seed: u64) {
        let outcome = self.check_fuzz(cases, seed);
        let report = outcome.report();
        assert!(outcome.passed(), "{report}");
        #[allow(clippy::print_stdout)]
        {
            println!("{report}");
        }
    }

    /// The transcript and the HTML timeline page of one scenario file,
    /// run once under `seed` (its own seed with `None`), passing or not:
    /// what `pai-sim show` and `pai-sim show --html` give for a scenario
    /// without the author's hooks, tools and models. The returned value's
    /// fields are stable API (issue 39, item 6): the transcript is the
    /// snapshot's text, the page a self-contained HTML file.
    ///
    /// ```no_run
    /// let harness = pai_sim::Harness::new();
    /// let shown = harness.show("tests/scenarios/refund.toml", None).unwrap();
    /// std::fs::write("refund.html", &shown.html).unwrap();
    /// print!("{}", shown.transcript);
    /// ```
    pub fn show(&self, path: impl AsRef<Path>, seed: Option<u64>) -> Result<Shown, ShowError> {
        quiet_planted_panics();
        let s = self.load(path)?;
        let seed = seed.unwrap_or(s.seed);
        let report = crate::simulate(&s, seed)?;
        let html = crate::timeline_html(&s, seed, &report);
        let verdict = crate::verdict(&s, &report);
        Ok(Shown {
            seed,
            transcript: report.transcript,
            html,
            verdict,
        })
    }

    /// Loads and checks one scenario file, with the registered hooks.
    pub fn load(&self, path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path.as_ref(), &self.registry)
    }

    /// Parses and checks scenario text (`path` names it in errors, and
    /// its extension picks TOML or JSON).
    pub fn parse(&self, path: impl AsRef<Path>, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(path.as_ref(), text, &self.registry)
    }

    /// Runs every scenario file under `dir` (`.toml`, `.json`) with every
    /// oracle, twice, and compares each transcript with its snapshot in
    /// `snapshots/` beside the nearest `scenarios/` folder above the file
    /// (so `tests/scenarios/x.toml` has `tests/snapshots/x.snap`). A new or
    /// changed transcript is left as a `.snap.new` for `cargo insta review`
    /// (nothing is written when `CI` is set; `PAI_SIM_UPDATE=1` accepts
    /// every transcript). `PAI_SIM_FILTER` keeps the files whose path or
    /// name contains it; `PAI_SIM_SEED` runs every scenario under that seed
    /// (the oracles then judge, no snapshot is compared).
    pub fn check_dir(&self, dir: impl AsRef<Path>) -> DirOutcome {
        quiet_planted_panics();
        let filter = std::env::var("PAI_SIM_FILTER").ok();
        let show = std::env::var("PAI_SIM_SHOW").ok();
        let seed = std::env::var("PAI_SIM_SEED")
            .ok()
            .and_then(|s| s.parse().ok());
        let mode = snapshot_mode();
        let files = match suite::discover(&[dir.as_ref().to_path_buf()]) {
            Ok(files) => files,
            Err(e) => {
                let message = format!("cannot read the folder: {e}");
                return DirOutcome {
                    cases: Vec::new(),
                    load_errors: vec![ScenarioError::new(dir.as_ref(), message)],
                    seed,
                    pages: BTreeMap::new(),
                    warnings: BTreeMap::new(),
                };
            }
        };
        let mut outcome = DirOutcome {
            cases: Vec::new(),
            load_errors: Vec::new(),
            seed,
            pages: BTreeMap::new(),
            warnings: BTreeMap::new(),
        };
        for path in &files {
            let s = match self.load(path) {
                Ok(s) => s,
                Err(e) => {
                    outcome.load_errors.push(e);
                    continue;
                }
            };
            let wanted = |f: &str| path.display().to_string().contains(f) || s.name.contains(f);
            if filter.as_deref().is_none_or(wanted) {
                if !s.warnings.is_empty() {
                    outcome.warnings.insert(path.clone(), s.warnings.clone());
                }
                let on = (StoreKind::Memory, false);
                let (case, report) = suite::run_case_keeping_report(path, &s, seed, on, mode);
                let shown = show.as_deref().is_some_and(wanted);
                if let (true, Some(report)) = (case.failed() || shown, report)
                    && let Some(page) = write_page(&s, case.seed, &report)
                {
                    outcome.pages.insert(path.clone(), page);
                }
                outcome.cases.push(case);
            }
        }
        outcome
    }

    /// [`Harness::check_dir`], for a `#[test]`: prints the summary table,
    /// and panics with every failure (each with the command that replays
    /// it) when a scenario failed or a file did not load, or when `dir`
    /// holds no scenario at all.
    pub fn run_dir(&self, dir: impl AsRef<Path>) {
        let outcome = self.check_dir(&dir);
        let report = outcome.report();
        if outcome.cases.is_empty() && outcome.load_errors.is_empty() {
            panic!(
                "no scenario file under {} (PAI_SIM_FILTER may have left none)",
                dir.as_ref().display()
            );
        }
        assert!(outcome.passed(), "{report}");
        // For a #[test]: libtest captures it, and shows it with --nocapture.
        #[allow(clippy::print_stdout)]
        {
            println!("{report}");
        }
    }
}

/// Keeps the panics of hooks and tools built to panic (generated cases
/// plant some) out of the test's output, once per process; any other
/// panic is reported as before.
fn quiet_planted_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(crate::quiet_planted_panics);
}

/// Update with `PAI_SIM_UPDATE=1`, write nothing under `CI`, else leave
/// pending `.snap.new` files.
fn snapshot_mode() -> SnapshotMode {
    let set = |name: &str| {
        std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0" && v != "false")
    };
    match (set("CI"), set("PAI_SIM_UPDATE")) {
        (true, _) => SnapshotMode::CheckReadOnly,
        (false, true) => SnapshotMode::Update,
        (false, false) => SnapshotMode::Check,
    }
}
