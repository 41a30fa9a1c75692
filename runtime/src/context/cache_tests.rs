//! The cache against its reference, the whole-thread derivation: after
//! every read, in any chunking, the cached context equals
//! `into_model_messages` of every visible message so far (SPEC M1, H6).

use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::id::CallId;
use crate::message::{PaiMeta, Part, Producer, ResultSource, Role, ToolStatus, Visibility};
use crate::model_view::{into_model_messages, pair_after};

fn part() -> impl Strategy<Value = Part> {
    let id = (0..3u8).prop_map(|i| CallId::new(format!("c{i}")));
    prop_oneof![
        2 => "[a-c]".prop_map(Part::text),
        2 => id.clone().prop_map(|call_id| Part::ToolCall {
            call_id,
            tool: "t".into(),
            input: Value::Null,
        }),
        2 => id.prop_map(|call_id| Part::ToolResult {
            call_id,
            tool: "t".into(),
            status: ToolStatus::Output,
            source: ResultSource::Tool,
            output: Value::from(1),
        }),
    ]
}

fn message() -> impl Strategy<Value = (Role, Vec<Part>, bool)> {
    let role = prop_oneof![
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool),
        Just(Role::System)
    ];
    (
        role,
        prop::collection::vec(part(), 0..3),
        prop::bool::weighted(0.85),
    )
}

fn stored(specs: Vec<(Role, Vec<Part>, bool)>) -> Vec<Message> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, (role, parts, context))| Message {
            id: format!("m{i}").into(),
            seq: i as u64 + 1,
            role,
            parts,
            visibility: Visibility {
                transcript: true,
                context,
            },
            pai: PaiMeta::new(Producer::User, None, None, 0),
        })
        .collect()
}

fn through(seq: u64) -> CachedThrough {
    CachedThrough { epoch: 0, seq }
}

/// Feeds `messages` to a cache in chunks ending at `cuts`, checking the
/// context after each against the whole derivation; every other read
/// lends the context out and gives it back as a step would.
fn check_chunked(messages: &[Message], cuts: &[usize]) {
    let cache = ContextCache::default();
    let mut at = 0;
    for (k, &cut) in cuts.iter().chain([&messages.len()]).enumerate() {
        let cut = cut.clamp(at, messages.len());
        let chunk = messages[at..cut].to_vec();
        cache.lock().extend(1, through(cut as u64), at == 0, chunk);
        at = cut;
        let want = into_model_messages(messages[..cut].to_vec());
        assert_eq!(cache.context(), want, "after {cut} messages");
        if k % 2 == 1 {
            let lent = cache.lend();
            assert_eq!(lent.messages, want, "lent after {cut} messages");
            cache.give_back(lent.messages, lent.settled);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// SPEC M1, H6: the cached context is the whole derivation, in any chunking.
    #[test]
    fn m1_h6_the_cached_context_is_the_whole_derivation(
        specs in prop::collection::vec(message(), 0..24),
        cuts in prop::collection::vec(0..24usize, 0..8),
    ) {
        let messages = stored(specs);
        let mut cuts = cuts;
        cuts.sort_unstable();
        check_chunked(&messages, &cuts);
    }

    /// SPEC H6: a pairing's output pairs to itself, and pairing it with
    /// more messages after it only pairs those (what `pair_after` relies on).
    #[test]
    fn h6_a_paired_prefix_pairs_to_itself(
        head in prop::collection::vec(message(), 0..12),
        tail in prop::collection::vec(message(), 0..12),
    ) {
        let paired = into_model_messages(stored(head));
        prop_assert_eq!(pair_tool_calls(paired.clone()), paired.clone());
        let mut joined = paired.clone();
        joined.extend(stored(tail).into_iter().filter_map(model_message));
        let n = paired.len();
        prop_assert_eq!(pair_after(joined.clone(), n), pair_tool_calls(joined));
    }
}

/// A lent context that never comes back leaves the cache cold: the next
/// refresh must ask for everything.
#[test]
fn m1_a_context_never_given_back_leaves_the_cache_cold() {
    let messages = stored(vec![(Role::User, vec![Part::text("hi")], true)]);
    let cache = ContextCache::default();
    cache.lock().extend(1, through(1), true, messages.clone());
    assert_eq!(cache.lock().through, Some(through(1)));
    let lent = cache.lend();
    assert_eq!(cache.lock().through, None, "cold while lent");
    drop(lent);
    assert!(cache.context().is_empty());
    cache.lock().extend(1, through(1), true, messages);
    assert_eq!(cache.context(), vec![ModelMessage::user("hi")]);
}

/// A call whose result has not come stays open, so a later result still
/// pairs with it rather than with a stand-in fixed earlier (H6).
#[test]
fn h6_an_open_call_is_not_settled_before_its_result() {
    let call = Part::ToolCall {
        call_id: "c1".into(),
        tool: "t".into(),
        input: Value::Null,
    };
    let result = Part::ToolResult {
        call_id: "c1".into(),
        tool: "t".into(),
        status: ToolStatus::Output,
        source: ResultSource::Tool,
        output: Value::from(7),
    };
    let messages = stored(vec![
        (Role::User, vec![Part::text("q")], true),
        (Role::Assistant, vec![call], true),
        (Role::User, vec![Part::text("steer")], true),
        (Role::Tool, vec![result], true),
    ]);
    check_chunked(&messages, &[2, 3]);
    let cache = ContextCache::default();
    cache
        .lock()
        .extend(1, through(3), true, messages[..3].to_vec());
    assert_eq!(
        cache.lock().settled.len(),
        1,
        "only the question is settled"
    );
}
