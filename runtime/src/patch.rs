//! Routes and sparse patches (SPEC P1–P5). Pure data and functions: no IO.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::ModelMessage;

/// Sampling settings. Every field is optional, so a patch names only what it
/// changes (SPEC P2: field by field, the later patch wins).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    /// The most tokens the model may produce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass to sample from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sample from the `top_k` likeliest tokens only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// The provider's sampling seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Sequences that stop the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
}

impl ModelSettings {
    /// Field-by-field merge: every field `other` sets wins (SPEC P2).
    pub fn merge(&mut self, other: &ModelSettings) {
        fn take<T: Clone>(slot: &mut Option<T>, v: &Option<T>) {
            if let Some(v) = v {
                *slot = Some(v.clone());
            }
        }
        take(&mut self.max_output_tokens, &other.max_output_tokens);
        take(&mut self.temperature, &other.temperature);
        take(&mut self.top_p, &other.top_p);
        take(&mut self.top_k, &other.top_k);
        take(&mut self.seed, &other.seed);
        take(&mut self.stop_sequences, &other.stop_sequences);
    }

    /// Whether no setting is set: merging it changes nothing.
    pub fn is_empty(&self) -> bool {
        let ModelSettings {
            max_output_tokens,
            temperature,
            top_p,
            top_k,
            seed,
            stop_sequences,
        } = self;
        max_output_tokens.is_none()
            && temperature.is_none()
            && top_p.is_none()
            && top_k.is_none()
            && seed.is_none()
            && stop_sequences.is_none()
    }
}

/// Provider key → that provider's options object.
pub type ProviderOptions = BTreeMap<String, Map<String, Value>>;

/// How the model may choose tools: `"auto"`, `"none"`, `"required"`, or
/// `{ tool = "name" }` for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool may be called.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// The effective configuration of one model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct Route {
    /// The model.
    pub model: String,
    /// Sampling settings.
    pub settings: ModelSettings,
    /// Provider key → that provider's options.
    pub provider_options: ProviderOptions,
    /// Provider-native tools (opaque JSON descriptions).
    pub provider_tools: Option<Vec<Value>>,
    /// How the model may choose tools.
    pub tool_choice: Option<ToolChoice>,
    /// Names of the registered tools offered; null offers every registered tool.
    pub tools: Option<Vec<String>>,
}

impl Route {
    /// A route with only a model: the agent's base route.
    pub fn new(model: impl Into<String>) -> Route {
        Route {
            model: model.into(),
            settings: ModelSettings::default(),
            provider_options: ProviderOptions::new(),
            provider_tools: None,
            tool_choice: None,
            tools: None,
        }
    }

    /// Applies the routing part of a patch (SPEC P1–P3).
    ///
    /// A patch that names a model starts a fresh route even for the same model:
    /// settings, provider options, provider tools and tool choice are cleared
    /// first; the registered tool selection survives unless the patch replaces it.
    pub fn apply(&mut self, patch: &RoutePatch) {
        if let Some(model) = &patch.model {
            self.model.clone_from(model);
            self.settings = ModelSettings::default();
            self.provider_options.clear();
            self.provider_tools = None;
            self.tool_choice = None;
        }
        self.settings.merge(&patch.settings);
        for (provider, options) in &patch.provider_options {
            self.provider_options
                .insert(provider.clone(), options.clone());
        }
        if let Some(t) = &patch.provider_tools {
            self.provider_tools = Some(t.clone());
        }
        if let Some(c) = &patch.tool_choice {
            self.tool_choice = Some(c.clone());
        }
        if let Some(t) = &patch.tools {
            self.tools = Some(t.clone());
        }
    }
}

/// A sparse route patch: only the fields given change the route (SPEC P1–P3).
// The routing half of a patch: what it does to a [`Route`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RoutePatch {
    /// A model: starts a fresh route (SPEC P1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Settings merged field by field.
    #[serde(default, skip_serializing_if = "ModelSettings::is_empty")]
    pub settings: ModelSettings,
    /// Provider options, replaced per provider.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provider_options: ProviderOptions,
    /// Provider-native tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_tools: Option<Vec<Value>>,
    /// How the model may choose tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// The registered tools offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
}

impl RoutePatch {
    /// Whether the patch changes nothing: field by field, no default built.
    pub fn is_empty(&self) -> bool {
        let RoutePatch {
            model,
            settings,
            provider_options,
            provider_tools,
            tool_choice,
            tools,
        } = self;
        model.is_none()
            && settings.is_empty()
            && provider_options.is_empty()
            && provider_tools.is_none()
            && tool_choice.is_none()
            && tools.is_none()
    }

    /// Folds `next` into `self`: applying the result equals applying `self`, then `next`.
    pub fn then(&mut self, next: &RoutePatch) {
        if next.model.is_some() {
            let tools = next.tools.clone().or_else(|| self.tools.take());
            *self = next.clone();
            self.tools = tools;
            return;
        }
        self.settings.merge(&next.settings);
        for (provider, options) in &next.provider_options {
            self.provider_options
                .insert(provider.clone(), options.clone());
        }
        if next.provider_tools.is_some() {
            self.provider_tools.clone_from(&next.provider_tools);
        }
        if next.tool_choice.is_some() {
            self.tool_choice.clone_from(&next.tool_choice);
        }
        if next.tools.is_some() {
            self.tools.clone_from(&next.tools);
        }
    }
}

/// A patch of `prepare_run` (the episode) or `prepare_model_step` (one step), SPEC P5.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(deny_unknown_fields))]
pub struct Patch {
    /// What the patch does to the route.
    pub route: RoutePatch,
    /// Model-only messages appended after whatever the phase would send (SPEC P4).
    pub append_model_messages: Vec<ModelMessage>,
    /// Replaces the messages the phase would send (SPEC P4).
    // Later appends apply on top.
    pub replace_model_messages: Option<Vec<ModelMessage>>,
}

impl Patch {
    /// Whether the patch changes nothing: no route change and no messages
    /// appended or replaced.
    pub fn is_empty(&self) -> bool {
        self.route.is_empty()
            && self.append_model_messages.is_empty()
            && self.replace_model_messages.is_none()
    }

    /// Folds `next` into `self`: applying the result (route and messages) equals
    /// applying `self`, then `next`.
    /// Moves `next`'s parts; nothing is cloned but an overridden route's.
    pub fn then(&mut self, next: Patch) {
        if self.route.is_empty() {
            // Folding into an empty route patch gives `next`'s own.
            self.route = next.route;
        } else if !next.route.is_empty() {
            self.route.then(&next.route);
        }
        if next.replace_model_messages.is_some() {
            self.replace_model_messages = next.replace_model_messages;
            self.append_model_messages = next.append_model_messages;
        } else if self.append_model_messages.is_empty() {
            self.append_model_messages = next.append_model_messages;
        } else {
            self.append_model_messages
                .extend(next.append_model_messages);
        }
    }

    /// A patch that only appends one system message.
    pub fn append_system(text: impl Into<String>) -> Patch {
        Patch {
            append_model_messages: vec![ModelMessage::system(text)],
            ..Patch::default()
        }
    }

    /// A patch that only changes the route.
    pub fn route(route: RoutePatch) -> Patch {
        Patch {
            route,
            ..Patch::default()
        }
    }

    /// Applies the message half of this patch to the messages a phase would send (P4).
    pub fn apply_messages(&self, messages: &mut Vec<ModelMessage>) {
        if let Some(replace) = &self.replace_model_messages {
            messages.clone_from(replace);
        }
        messages.extend(self.append_model_messages.iter().cloned());
    }

    /// [`Patch::apply_messages`] for an owned patch: its messages are moved
    /// into `messages`, not cloned.
    pub fn apply_messages_owned(self, messages: &mut Vec<ModelMessage>) {
        if let Some(replace) = self.replace_model_messages {
            *messages = replace;
        }
        let mut append = self.append_model_messages;
        let room = |v: &Vec<ModelMessage>| v.capacity() - v.len();
        if room(messages) < append.len() && room(&append) >= messages.len() {
            // `append` has room for `messages` in front of it, and `messages`
            // none for it behind: no allocation either way.
            append.splice(..0, messages.drain(..));
            *messages = append;
        } else {
            messages.append(&mut append);
        }
    }
}

/// The model-only overlay of one episode or step: patches' message operations
/// in the order they were returned. Never stored (SPEC P8).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overlay {
    ops: Vec<(Option<Vec<ModelMessage>>, Vec<ModelMessage>)>,
}

impl Overlay {
    /// Records a patch's message operations.
    pub fn push(&mut self, patch: &Patch) {
        if patch.replace_model_messages.is_some() || !patch.append_model_messages.is_empty() {
            self.ops.push((
                patch.replace_model_messages.clone(),
                patch.append_model_messages.clone(),
            ));
        }
    }

    /// Applies every recorded operation in order.
    pub fn apply(&self, messages: &mut Vec<ModelMessage>) {
        for (replace, append) in &self.ops {
            if let Some(r) = replace {
                messages.clone_from(r);
            }
            messages.extend(append.iter().cloned());
        }
    }

    /// Whether the overlay replaces the resolved context.
    pub fn replaces(&self) -> bool {
        self.ops.iter().any(|(r, _)| r.is_some())
    }

    /// Whether applying the overlay may leave a paired context unpaired
    /// (SPEC H6): it replaces messages, or appends tool calls or results.
    pub(crate) fn may_unpair(&self) -> bool {
        self.ops
            .iter()
            .any(|(r, a)| r.is_some() || crate::model_view::carries_tools(a))
    }

    /// Number of model-only messages the overlay adds (appends only).
    pub fn appended(&self) -> usize {
        self.ops.iter().map(|(_, a)| a.len()).sum()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(provider: &str, key: &str, v: i64) -> ProviderOptions {
        let mut m = Map::new();
        m.insert(key.into(), Value::from(v));
        BTreeMap::from([(provider.to_string(), m)])
    }

    #[test]
    fn p1_same_model_still_starts_a_fresh_route() {
        let mut r = Route::new("small");
        r.apply(&RoutePatch {
            settings: ModelSettings {
                temperature: Some(0.5),
                ..Default::default()
            },
            provider_options: opts("openai", "effort", 1),
            tool_choice: Some(ToolChoice::Required),
            tools: Some(vec!["search".into()]),
            ..Default::default()
        });
        r.apply(&RoutePatch {
            model: Some("small".into()),
            settings: ModelSettings {
                top_p: Some(0.9),
                ..Default::default()
            },
            ..Default::default()
        });
        assert_eq!(r.settings.temperature, None);
        assert_eq!(r.settings.top_p, Some(0.9));
        assert!(r.provider_options.is_empty());
        assert_eq!(r.tool_choice, None);
        assert_eq!(r.tools, Some(vec!["search".to_string()]));
    }

    #[test]
    fn p2_merges_settings_by_field_and_options_by_provider() {
        let mut r = Route::new("m");
        let mut a = opts("openai", "effort", 1);
        a.extend(opts("anthropic", "budget", 2));
        r.apply(&RoutePatch {
            settings: ModelSettings {
                temperature: Some(0.5),
                ..Default::default()
            },
            provider_options: a,
            ..Default::default()
        });
        r.apply(&RoutePatch {
            settings: ModelSettings {
                max_output_tokens: Some(10),
                ..Default::default()
            },
            provider_options: opts("openai", "other", 3),
            ..Default::default()
        });
        assert_eq!(r.settings.temperature, Some(0.5));
        assert_eq!(r.settings.max_output_tokens, Some(10));
        assert_eq!(r.provider_options["openai"].get("effort"), None);
        assert_eq!(r.provider_options["openai"]["other"], Value::from(3));
        assert_eq!(r.provider_options["anthropic"]["budget"], Value::from(2));
    }

    #[test]
    fn emptiness_is_exact() {
        assert!(ModelSettings::default().is_empty());
        let warm = ModelSettings {
            temperature: Some(0.5),
            ..Default::default()
        };
        assert!(!warm.is_empty());
        assert!(Patch::default().is_empty());
        assert!(!Patch::append_system("x").is_empty());
        assert!(
            !Patch::route(RoutePatch {
                settings: warm,
                ..Default::default()
            })
            .is_empty()
        );
    }

    /// SPEC P4, P8: the overlay records appends and replacements in order.
    #[test]
    fn p4_overlay_records_its_operations() {
        let mut o = Overlay::default();
        assert!(o.is_empty() && !o.replaces());
        o.push(&Patch::default());
        assert!(o.is_empty(), "an empty patch records nothing");
        o.push(&Patch::append_system("a"));
        assert!(!o.is_empty() && !o.replaces());
        assert_eq!(o.appended(), 1);
        o.push(&Patch {
            replace_model_messages: Some(vec![ModelMessage::user("r")]),
            ..Patch::default()
        });
        assert!(o.replaces());
        let mut msgs = vec![ModelMessage::user("old")];
        o.apply(&mut msgs);
        assert_eq!(msgs, vec![ModelMessage::user("r")]);
    }

    /// An owned patch applies as a borrowed one does, whichever vector
    /// has the room.
    #[test]
    fn p4_owned_patch_applies_like_a_borrowed_one() {
        let base = || vec![ModelMessage::user("a"), ModelMessage::user("b")];
        let appends = |room: usize| {
            let mut v = Vec::with_capacity(2 + room);
            v.extend([ModelMessage::system("x"), ModelMessage::system("y")]);
            v
        };
        for room in [0, 1, 2, 5] {
            for replace in [None, Some(vec![ModelMessage::user("r")])] {
                let p = Patch {
                    append_model_messages: appends(room),
                    replace_model_messages: replace,
                    ..Patch::default()
                };
                let (mut want, mut got) = (base(), base());
                p.apply_messages(&mut want);
                p.apply_messages_owned(&mut got);
                assert_eq!(got, want, "room {room}");
            }
        }
        let mut empty = Vec::new();
        Patch::append_system("x").apply_messages_owned(&mut empty);
        assert_eq!(empty, vec![ModelMessage::system("x")]);
    }

    #[test]
    fn p4_replace_then_append() {
        let mut msgs = vec![ModelMessage::user("old")];
        let p = Patch {
            replace_model_messages: Some(vec![ModelMessage::user("new")]),
            append_model_messages: vec![ModelMessage::system("extra")],
            ..Default::default()
        };
        p.apply_messages(&mut msgs);
        assert_eq!(
            msgs,
            vec![ModelMessage::user("new"), ModelMessage::system("extra")]
        );
    }
}
