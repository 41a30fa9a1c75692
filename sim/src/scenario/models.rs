//! Model scripts that name a model a harness registered (`use = "..."`):
//! nothing scripted beside the name, and a configuration the model's type
//! reads (SPEC X1: refused at load, located).

use std::collections::BTreeMap;

use super::field::{CheckError, Segment, fail};
use super::spec::ModelSpec;
use crate::registry::Registry;
use crate::user_model::UserModelDef;

/// The registered models of a scenario: `None` is the default `[model]`,
/// `Some(name)` a `[models.NAME]`.
pub type RegisteredModels = BTreeMap<Option<String>, UserModelDef>;

/// One script's own fields (at `at`) beside `use`: none may be given, the
/// registered model answers every call itself.
pub(super) fn alone(m: &ModelSpec, at: &[Segment]) -> Result<(), CheckError> {
    let Some(use_) = &m.use_ else {
        return Ok(());
    };
    let field = |key: &'static str| [at, &[Segment::Key(key)]].concat();
    if use_.trim().is_empty() {
        return fail(
            &field("use"),
            "must not be empty: the name a model was registered under",
        );
    }
    let scripted = [
        ("turns", !m.turns.is_empty()),
        ("unavailable", m.unavailable),
        ("replay", !m.replay.is_empty()),
        ("format", m.format.is_some()),
        ("latency_ms", m.latency_ms.is_some()),
        ("delta_ms", m.delta_ms.is_some()),
        ("chunk", m.chunk.is_some()),
    ];
    match scripted.iter().find(|(_, given)| *given) {
        Some((key, _)) => fail(
            &field(key),
            format!(
                "the model registered as {use_:?} answers every call itself: a script has `use` or `{key}`, not both"
            ),
        ),
        None => Ok(()),
    }
}

/// Every script with `use`, checked by `registry` (run after [`alone`]).
pub(super) fn registered(
    model: &ModelSpec,
    models: &BTreeMap<String, ModelSpec>,
    registry: &Registry,
) -> Result<RegisteredModels, CheckError> {
    let named = models.iter().map(|(n, m)| (Some(n), m));
    let mut out = RegisteredModels::new();
    for (name, m) in std::iter::once((None, model)).chain(named) {
        let Some(use_) = &m.use_ else {
            continue;
        };
        match registry.check_model(use_, &m.config) {
            Ok(def) => {
                out.insert(name.cloned(), def);
            }
            Err(e) => {
                let mut at = match name {
                    None => vec![Segment::Key("model")],
                    Some(n) => vec![Segment::Key("models"), Segment::Name(n.clone())],
                };
                at.push(match e.field {
                    Some(field) => Segment::Name(field),
                    None => Segment::Key("use"),
                });
                return fail(&at, e.message);
            }
        }
    }
    Ok(out)
}
