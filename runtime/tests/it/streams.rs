//! SPEC S3 (property): for random texts with embedded secrets, random patterns
//! from a small family and every random chunking, the stored text equals the
//! redaction of the whole text; no stored text, live text after the redactor,
//! or later model context matches a pattern; and redaction is idempotent.

use std::sync::Arc;

use pai_runtime::text::{matches_any, patterns, redact};
use pai_runtime::{
    Agent, Role, Runtime, StreamPart, compose,
    event::LiveEvent,
    model::{FinishReason, ModelMap},
    stream::StreamTransform,
    text::{Pattern, redact_text_deltas},
};
use proptest::prelude::*;

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn, one_more_step, texts};
use proptest::test_runner::FileFailurePersistence;

const FAMILY: &[&str] = &[
    "sk-[A-Za-z0-9_-]+",
    "ghp_[A-Za-z0-9]+",
    "password",
    "[0-9]+",
    "key-[a-f0-9]+",
];
const REPLACEMENT: &str = "[REDACTED]";

/// Streams the chunks at step 0 and "ok" at step 1.
fn chunks_model(chunks: Vec<String>) -> Arc<ScriptedModel> {
    ScriptedModel::by(move |r, _| {
        let mut parts: Vec<StreamPart> = match r.step {
            0 => chunks
                .iter()
                .map(|c| StreamPart::TextDelta(c.clone().into()))
                .collect(),
            _ => vec![StreamPart::TextDelta("ok".into())],
        };
        parts.push(StreamPart::Finish(FinishReason::Stop));
        Turn::Parts(parts)
    })
}

/// The assistant texts of the contexts after step 0.
fn later_context(model: &ScriptedModel) -> Vec<String> {
    let seen = model.seen();
    let later = seen.iter().filter(|r| r.step > 0).flat_map(|r| &r.messages);
    later
        .filter(|m| m.role == Role::Assistant)
        .flat_map(texts)
        .collect()
}

/// What one run shows: the stored step-0 text, the live text, and the
/// assistant text the model saw later.
struct Seen {
    stored: String,
    live: String,
    later: Vec<String>,
}

fn run(pats: &[Pattern], chunks: Vec<String>) -> Seen {
    let model = chunks_model(chunks);
    let agent = Agent::new("a", "m").lifecycle(compose(vec![
        Box::new(common::redact(pats.to_vec(), REPLACEMENT)),
        Box::new(one_more_step()),
    ]));
    let rt = Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", model.clone()))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .unwrap();
    let (stored, live) = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(async {
            let t = rt.client("u").thread("t");
            let mut watch = t.watch(Vec::new()).await.unwrap();
            t.send("go").await.unwrap();
            let state = t.wait_until_idle().await.unwrap();
            let stored = state.messages[1].text();
            let mut live = String::new();
            while let Some(e) = watch.try_next() {
                if let LiveEvent::Part {
                    step: 0,
                    part: StreamPart::TextDelta(d),
                    ..
                } = e
                {
                    live.push_str(&d);
                }
            }
            (stored, live)
        });
    let later = later_context(&model);
    Seen {
        stored,
        live,
        later,
    }
}

/// Text made of filler that brushes against the patterns (s, k, -, digits,
/// "pass") and secrets of the chosen patterns.
fn text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("s".to_string()),
        Just("k".to_string()),
        Just("-".to_string()),
        Just("sk".to_string()),
        Just("sk-".to_string()),
        Just("pass".to_string()),
        Just("key-".to_string()),
        Just("ghp".to_string()),
        Just(" ".to_string()),
        Just("the ".to_string()),
        Just("é".to_string()),
        "[a-z]{1,4}",
        "[0-9]{1,3}",
        "sk-[A-Za-z0-9_-]{1,8}",
        "ghp_[A-Za-z0-9]{1,6}",
        Just("password".to_string()),
        "key-[a-f0-9]{1,6}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

/// Cuts `text` into chunks at char boundaries chosen by `cuts`.
fn chunk(text: &str, cuts: &[prop::sample::Index]) -> Vec<String> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter(|_| !bounds.is_empty())
        .map(|c| bounds[c.index(bounds.len())])
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    let mut from = 0;
    for a in at {
        out.push(text[from..a].to_string());
        from = a;
    }
    out.push(text[from..].to_string());
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/streams.txt"),
        ))),
        ..ProptestConfig::default()
    })]

    /// The stage alone, many chunkings: streaming equals the whole-text reference.
    #[test]
    fn s3_redactor_equals_reference_for_every_chunking(
        which in prop::sample::subsequence(FAMILY.to_vec(), 1..=3),
        text in text(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let pats = patterns(&which).unwrap();
        let expected = redact(&text, &pats, REPLACEMENT);
        let mut stage = redact_text_deltas(pats.clone(), REPLACEMENT);
        let mut collect = Collect(String::new());
        for c in chunk(&text, &cuts) {
            collect.feed(&mut *stage, StreamPart::TextDelta(c.into()));
        }
        collect.finish(&mut *stage);
        let got = collect.0;
        prop_assert_eq!(&got, &expected);
        prop_assert!(!matches_any(&got, &pats), "{:?}", got);
        prop_assert_eq!(redact(&got, &pats, REPLACEMENT), got);
    }

    /// The full pipeline: provider stream, canonical redaction, store, live
    /// watcher and the next step's model context.
    #[test]
    fn s3_stored_live_and_context_are_redacted(
        which in prop::sample::subsequence(FAMILY.to_vec(), 1..=3),
        text in text(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let pats = patterns(&which).unwrap();
        let expected = redact(&text, &pats, REPLACEMENT);
        let seen = run(&pats, chunk(&text, &cuts));
        prop_assert_eq!(&seen.stored, &expected);
        prop_assert_eq!(&seen.live, &expected);
        prop_assert!(!matches_any(&seen.stored, &pats));
        for t in &seen.later {
            prop_assert!(!matches_any(t, &pats), "model context {:?}", t);
        }
        prop_assert_eq!(redact(&seen.stored, &pats, REPLACEMENT), seen.stored);
    }
}

/// Collects a stage's text output.
struct Collect(String);

impl Collect {
    fn feed(&mut self, stage: &mut dyn StreamTransform, part: StreamPart) {
        let mut e = pai_runtime::stream::Emit::default();
        stage.push(part, &mut e);
        self.take(e);
    }
    fn finish(&mut self, stage: &mut dyn StreamTransform) {
        let mut e = pai_runtime::stream::Emit::default();
        stage.finish(&mut e);
        self.take(e);
    }
    fn take(&mut self, e: pai_runtime::stream::Emit) {
        for p in e.into_parts() {
            if let StreamPart::TextDelta(t) = p {
                self.0.push_str(&t);
            }
        }
    }
}
