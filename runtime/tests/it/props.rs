//! Property tests against small reference models:
//! - P1–P3: routes after any sequence of patches (and after composing the
//!   patches of several `prepare_run` hooks, L5) equal a flat reference model;
//! - L10: the joined `after_step` decision does not depend on hook order.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use pai_runtime::{
    HookCx, HookFuture, Lifecycle, Message, Role, compose, hook,
    hook::{AfterStepDecision, AfterStepInput, RunDecision, RunInput},
    message::{PaiMeta, Producer, Visibility},
    model::{ModelSettings, Patch, Route, RoutePatch, ToolChoice},
};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};

/// Drives a future that never waits (every hook here answers at once).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("test hooks never wait"),
    }
}

/// The reference: a route as a flat map from field name to value.
type Flat = BTreeMap<String, Value>;

fn reference_apply(flat: &mut Flat, p: &RoutePatch) {
    if let Some(m) = &p.model {
        // P1: a fresh route keeps only the registered tool selection.
        flat.retain(|k, _| k == "tools");
        flat.insert("model".into(), json!(m));
    }
    // P2: settings by field, provider options by provider key.
    if let Value::Object(s) = serde_json::to_value(&p.settings).unwrap() {
        for (k, v) in s {
            flat.insert(format!("settings.{k}"), v);
        }
    }
    for (provider, o) in &p.provider_options {
        flat.insert(
            format!("provider_options.{provider}"),
            Value::Object(o.clone()),
        );
    }
    // P3: whole values.
    if let Some(t) = &p.provider_tools {
        flat.insert("provider_tools".into(), json!(t));
    }
    if let Some(c) = &p.tool_choice {
        flat.insert("tool_choice".into(), serde_json::to_value(c).unwrap());
    }
    if let Some(t) = &p.tools {
        flat.insert("tools".into(), json!(t));
    }
}

/// A route as the reference sees it: a fresh route from an empty map.
fn flatten(r: &Route) -> Flat {
    let mut flat = Flat::new();
    reference_apply(
        &mut flat,
        &RoutePatch {
            model: Some(r.model.clone()),
            settings: r.settings.clone(),
            provider_options: r.provider_options.clone(),
            provider_tools: r.provider_tools.clone(),
            tool_choice: r.tool_choice.clone(),
            tools: r.tools.clone(),
        },
    );
    flat
}

fn maybe<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    prop_oneof![3 => Just(None), 1 => s.prop_map(Some)].boxed()
}

fn settings() -> impl Strategy<Value = ModelSettings> {
    (
        maybe(0u32..3),
        maybe(prop_oneof![Just(0.0), Just(0.5), Just(1.0)]),
        maybe(prop_oneof![Just(0.1), Just(0.9)]),
    )
        .prop_map(|(max_output_tokens, temperature, top_p)| ModelSettings {
            max_output_tokens,
            temperature,
            top_p,
            ..ModelSettings::default()
        })
}

fn options() -> impl Strategy<Value = BTreeMap<String, Map<String, Value>>> {
    prop::collection::btree_map(
        prop_oneof![Just("openai".to_string()), Just("anthropic".to_string())],
        (0i64..3).prop_map(|v| {
            let mut m = Map::new();
            m.insert("k".into(), json!(v));
            m
        }),
        0..=2,
    )
}

fn route_patch() -> impl Strategy<Value = RoutePatch> {
    (
        maybe(prop_oneof![
            Just("small".to_string()),
            Just("large".to_string())
        ]),
        settings(),
        options(),
        maybe(prop::collection::vec(
            (0i64..3).prop_map(|v| json!({ "t": v })),
            0..3,
        )),
        maybe(prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::Required),
            Just(ToolChoice::Tool("a".into()))
        ]),
        maybe(prop::collection::vec(
            prop_oneof![Just("a".to_string()), Just("b".to_string())],
            0..3,
        )),
    )
        .prop_map(
            |(model, settings, provider_options, provider_tools, tool_choice, tools)| RoutePatch {
                model,
                settings,
                provider_options,
                provider_tools,
                tool_choice,
                tools,
            },
        )
}

/// A `prepare_run` hook that returns one fixed patch.
fn patch_hook(p: RoutePatch) -> Box<dyn Lifecycle<()>> {
    Box::new(hook::prepare_run("patch", move |_, _| {
        HookFuture::ready(Ok(RunDecision::Continue(Patch::route(p.clone()))))
    }))
}

/// An `after_step` hook that returns one fixed decision.
fn step_hook(d: AfterStepDecision) -> Box<dyn Lifecycle<()>> {
    Box::new(hook::after_step("decide", move |_, _| {
        HookFuture::ready(Ok(d))
    }))
}

fn message() -> Message {
    Message {
        id: "m1".into(),
        seq: 1,
        role: Role::Assistant,
        parts: vec![],
        visibility: Visibility::ALL,
        pai: PaiMeta {
            producer: Producer::Model,
            run_id: None,
            step: Some(0),
            updated_at: 0,
            outcome: None,
            reason: None,
            offered: None,
        },
    }
}

fn joined_after_step(ds: &[AfterStepDecision]) -> AfterStepDecision {
    let hooks: Vec<Box<dyn Lifecycle<()>>> = ds.iter().map(|d| step_hook(*d)).collect();
    let composed = compose(hooks);
    let msg = message();
    let input = AfterStepInput {
        step: 0,
        message: &msg,
        tool_results: &[],
        refusal: None,
    };
    let cx = HookCx::new(&(), "run", "thread", 1, 0);
    now(composed.after_step(&cx, &input)).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/props.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    /// P1–P3: applying patches one by one matches the reference model.
    #[test]
    fn p1_p3_route_matches_reference(patches in prop::collection::vec(route_patch(), 0..8)) {
        let mut route = Route::new("small");
        let mut flat = flatten(&route);
        for p in &patches {
            route.apply(p);
            reference_apply(&mut flat, p);
            prop_assert_eq!(flatten(&route), flat.clone());
        }
    }

    /// P1–P3 through composition (L5): the composed `prepare_run` patch, applied
    /// once, equals applying every hook's patch in order.
    #[test]
    fn l5_composed_patch_equals_patches_in_order(patches in prop::collection::vec(route_patch(), 0..6)) {
        let hooks: Vec<Box<dyn Lifecycle<()>>> = patches.iter().cloned().map(patch_hook).collect();
        let composed = compose(hooks);
        let base = Route::new("small");
        let input = RunInput { messages: &[], latest_user_message: None, route: &base, resumed: false };
        let cx = HookCx::new(&(), "run", "thread", 1, 0);
        let RunDecision::Continue(joined) = now(composed.prepare_run(&cx, &input)).unwrap() else {
            panic!("route hooks never respond");
        };
        let mut got = base.clone();
        got.apply(&joined.route);
        let mut flat = flatten(&base);
        for p in &patches {
            reference_apply(&mut flat, p);
        }
        prop_assert_eq!(flatten(&got), flat);
    }

    /// L10: every hook is asked; the joined decision is the strongest one,
    /// and a permutation of the hooks gives the same decision.
    #[test]
    fn l10_joined_decision_ignores_hook_order(
        decisions in prop::collection::vec(
            prop_oneof![
                Just(AfterStepDecision::Natural),
                Just(AfterStepDecision::NextStep),
                Just(AfterStepDecision::Complete)
            ],
            0..6,
        ),
        perm in prop::collection::vec(any::<prop::sample::Index>(), 6),
    ) {
        // A random permutation: Fisher-Yates driven by the generated indices.
        let mut shuffled = decisions.clone();
        for i in (1..shuffled.len()).rev() {
            let j = perm[i].index(i + 1);
            shuffled.swap(i, j);
        }
        let expected = decisions.iter().copied().max().unwrap_or(AfterStepDecision::Natural);
        prop_assert_eq!(joined_after_step(&decisions), expected);
        prop_assert_eq!(joined_after_step(&shuffled), expected);
    }
}

/// P1–P6 end to end: the route each provider attempt receives equals the
/// reference applied to run patches, then step patches (step 0 only), then
/// `around_model_call` patches from the outermost hook in (step 0 only).
mod attempts {
    use std::sync::Arc;

    use pai_runtime::{
        Agent, Runtime,
        hook::{AttemptPatch, StepDecision},
        model::ModelMap,
    };

    use super::*;
    use crate::common::{CountingIds, ScriptedModel, StillClock, one_more_step};

    /// A `prepare_model_step` hook that patches step 0 only.
    fn step_patch(p: RoutePatch) -> Box<dyn Lifecycle<()>> {
        Box::new(hook::prepare_model_step("step_patch", move |_, i| {
            let patch = if i.step == 0 {
                Patch::route(p.clone())
            } else {
                Patch::default()
            };
            HookFuture::ready(Ok(StepDecision::Continue(patch)))
        }))
    }

    /// An `around_model_call` hook that patches step 0's attempt only.
    fn attempt_hook(p: RoutePatch) -> Box<dyn Lifecycle<()>> {
        Box::new(hook::around_model_call("attempt", move |_, r, next| {
            let patch = if r.step == 0 {
                AttemptPatch {
                    route: p.clone(),
                    timeout_ms: None,
                }
            } else {
                AttemptPatch::default()
            };
            HookFuture::new(async move { Ok(next.call(patch).await?) })
        }))
    }

    fn routes(
        run: &[RoutePatch],
        step: &[RoutePatch],
        attempt: &[RoutePatch],
    ) -> Vec<(u32, Route)> {
        let model = ScriptedModel::text("ok");
        let mut hooks: Vec<Box<dyn Lifecycle<()>>> = Vec::new();
        hooks.extend(run.iter().cloned().map(patch_hook));
        hooks.extend(step.iter().cloned().map(step_patch));
        hooks.extend(attempt.iter().cloned().map(attempt_hook));
        hooks.push(Box::new(one_more_step()));
        let agent = Agent::new("a", "small").lifecycle(compose(hooks));
        let models = ModelMap::new()
            .with("small", model.clone())
            .with("large", model.clone());
        let rt = Runtime::builder(agent, ())
            .models(models)
            .clock(Arc::new(StillClock))
            .ids(Arc::new(CountingIds::default()))
            .build()
            .unwrap();
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                let t = rt.client("u").thread("t");
                t.send("go").await.unwrap();
                t.wait_until_idle().await.unwrap();
            });
        let seen = model.seen().into_iter();
        seen.map(|r| (r.step, r.route)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 128,
            failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
                concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/props.txt"),
            ))),
            ..ProptestConfig::default()
        })]

        #[test]
        fn p1_p6_attempt_routes_match_reference(
            run in prop::collection::vec(route_patch(), 0..3),
            step in prop::collection::vec(route_patch(), 0..3),
            attempt in prop::collection::vec(route_patch(), 0..3),
        ) {
            let got = routes(&run, &step, &attempt);
            prop_assert_eq!(got.len(), 2, "two steps, one attempt each");
            let mut episode = flatten(&Route::new("small"));
            for p in &run {
                reference_apply(&mut episode, p);
            }
            let mut step0 = episode.clone();
            for p in step.iter().chain(&attempt) {
                reference_apply(&mut step0, p);
            }
            prop_assert_eq!(got[0].0, 0);
            prop_assert_eq!(flatten(&got[0].1), step0);
            // P5/P6: the next step starts again from the episode defaults.
            prop_assert_eq!(got[1].0, 1);
            prop_assert_eq!(flatten(&got[1].1), episode);
        }
    }
}
