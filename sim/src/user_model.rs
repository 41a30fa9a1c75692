//! Models an agent author registers with a [`crate::Harness`]: the
//! [`UserModel`] trait a configuration type implements, the factory that
//! reads a `[model] use = "..."` (or `[models.<name>] use = "..."`) script
//! into it, and a registered model of one scenario, checked at load. The
//! names live in the [`crate::Registry`].

use std::fmt;
use std::sync::Arc;

use pai_runtime::LanguageModel;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::configured::{Builds, ConfigError, Factory, Maker};

/// A configuration that builds a model: the type a scenario's
/// `[model] use = "..."` script is read into (its fields are the script's
/// other fields), and whose [`build`](UserModel::build) makes the author's
/// own model adapter (any [`LanguageModel`]).
///
/// The simulator still records every call of the model (the transcript
/// shows it as `registered`), but no oracle foresees what it answers: the
/// checks that compare a call with a scripted turn (`expect` tables, S1's
/// streamed text) stand down for its calls.
///
/// The model runs on the simulator's virtual clock, in one thread: it must
/// not read wall time or sleep on it (`std::time::Instant`,
/// `std::thread::sleep`), nor do real I/O. An adapter that talks HTTP to a
/// provider is for production; register a scripted or fake one (which
/// answers from its configuration and the request, and waits, if at all,
/// with `tokio::time::sleep`, which the simulator's clock drives). Each run
/// of a scenario builds its model afresh (the workers of one run share
/// it): keep any state in the model, not in a `static`, or the two runs D4
/// compares differ. Tool call ids are the model's own to make (unique on a
/// thread, the same in every run: from the request's run id and step, say).
///
/// The script's own field names (`turns`, `unavailable`, `replay`,
/// `format`, `latency_ms`, `delta_ms`, `chunk`) are not the configuration's:
/// beside `use` they are refused, so name a configuration's fields
/// otherwise.
///
/// ```
/// use std::sync::Arc;
/// use pai_runtime::model::{BoxStream, FinishReason, ReadyStream};
/// use pai_runtime::{HookFuture, LanguageModel, ModelError, ModelRequest, StreamPart};
/// use pai_sim::{Harness, UserModel};
///
/// /// Answers every call with `reply`.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Canned {
///     reply: String,
/// }
///
/// struct CannedModel(String);
///
/// impl LanguageModel for CannedModel {
///     fn stream<'a>(
///         &'a self,
///         _request: &'a ModelRequest,
///     ) -> HookFuture<'a, Result<BoxStream, ModelError>> {
///         let parts = vec![
///             StreamPart::text(self.0.clone()),
///             StreamPart::Finish(FinishReason::Stop),
///         ];
///         HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
///     }
/// }
///
/// impl UserModel for Canned {
///     fn build(&self, _name: &str) -> Arc<dyn LanguageModel> {
///         Arc::new(CannedModel(self.reply.clone()))
///     }
/// }
///
/// let mut harness = Harness::new();
/// harness.model::<Canned>("canned");
/// let text = r#"
/// name = "a registered model answers"
/// rules = ["A1"]
///
/// [model]
/// use = "canned"
/// reply = "Hello."
///
/// [[timeline]]
/// send = "Hi."
/// "#;
/// let scenario = harness.parse("canned.toml", text).unwrap();
/// assert_eq!(scenario.model.use_.as_deref(), Some("canned"));
/// ```
pub trait UserModel: DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The model this configuration describes; `name` is the name the
    /// script answers (`[models.<name>]`), or `default` for `[model]`.
    /// Called once at load (to try the configuration) and once per run:
    /// keep it free of side effects.
    fn build(&self, name: &str) -> Arc<dyn LanguageModel>;
}

impl<T: UserModel> Builds<Arc<dyn LanguageModel>> for T {
    fn make(&self, name: &str) -> Arc<dyn LanguageModel> {
        self.build(name)
    }
}

/// A registered model of one scenario, checked: the name it was registered
/// under and its configuration as written (the oracles know no more of it).
#[derive(Clone)]
pub struct UserModelDef {
    /// The name the model was registered under (`use = "..."`).
    pub use_name: String,
    /// The script's configuration, as the scenario wrote it.
    pub config: Map<String, Value>,
    make: Maker<Arc<dyn LanguageModel>>,
}

impl UserModelDef {
    /// Checks `config` with `factory` and builds the model once.
    pub(crate) fn check(
        use_name: &str,
        config: &Map<String, Value>,
        factory: &dyn Factory<Arc<dyn LanguageModel>>,
    ) -> Result<UserModelDef, ConfigError> {
        let make = factory.check(config)?;
        drop(make(use_name));
        Ok(UserModelDef {
            use_name: use_name.to_string(),
            config: config.clone(),
            make,
        })
    }

    /// The author's model, built for the script `name`.
    pub fn build(&self, name: &str) -> Arc<dyn LanguageModel> {
        (self.make)(name)
    }
}

impl fmt::Debug for UserModelDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserModelDef")
            .field("use_name", &self.use_name)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PartialEq for UserModelDef {
    fn eq(&self, other: &UserModelDef) -> bool {
        (&self.use_name, &self.config) == (&other.use_name, &other.config)
    }
}
