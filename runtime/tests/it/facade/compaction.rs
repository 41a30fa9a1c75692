//! The compaction helper as the main model sees it (SPEC C1, C2): the
//! summary record and its private cursor, the context it yields.

use super::*;

/// A runtime with compaction (threshold 3, keep 1) over `store`, and its
/// summary model, which answers `S1`, `S2`, ... and runs `on_call` before
/// it answers.
fn compacting(
    store: Arc<MemoryStore>,
    on_call: impl Fn() + Send + Sync + 'static,
) -> (Setup, Arc<ScriptedModel>) {
    let summaries = ScriptedModel::by(move |_, n| {
        on_call();
        Turn::text(format!("S{}", n + 1))
    });
    let compaction = Compaction::new(3, 1, summaries.clone());
    let s = facade_setup(vec![Box::new(compaction)])
        .store(store)
        .build();
    (s, summaries)
}

/// Sends each text and lets its run complete.
async fn converse(s: &Setup, texts: &[&str]) -> Vec<pai_runtime::Sent> {
    let th = s.rt.client("alice").thread("t1");
    let mut sent = Vec::new();
    for text in texts {
        sent.push(th.send(*text).await.unwrap());
        th.wait_until_idle().await.unwrap();
    }
    sent
}

/// Roles and texts of the main model's step-0 context of `run`.
fn context_of(s: &Setup, run: &str) -> Vec<(Role, String)> {
    shape(&s.model.request(run, 0).messages)
}

/// Roles and texts of a model context.
fn shape(messages: &[ModelMessage]) -> Vec<(Role, String)> {
    messages
        .iter()
        .map(|m| (m.role, texts(m).join("")))
        .collect()
}

/// SPEC C1: past its threshold, the resolver summarizes the older messages
/// through the summary model, and commits one summary record (transcript-
/// visible, hidden from context, producer compaction) and its private
/// cursor in one mutation of the run, with progress events.
#[tokio::test(start_paused = true)]
async fn c1_compaction_summarizes_and_moves_its_cursor() {
    let (s, summaries) = compacting(Arc::new(MemoryStore::default()), || {});
    converse(&s, &["one", "two"]).await;
    assert!(summaries.calls() == 0, "3 messages: not past the threshold");
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(CompactionCursor::of(&stored), None);

    let third = converse(&s, &["three"]).await.remove(0);
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    // The summary model was asked about the first four messages.
    let asked = summaries.seen();
    assert_eq!(asked.len(), 1);
    let segment: Vec<(Role, String)> = shape(&asked[0].messages)
        .into_iter()
        .filter(|(role, _)| *role != Role::System)
        .collect();
    assert_eq!(
        segment,
        [
            (Role::User, "one".to_string()),
            (Role::Assistant, "re: one".to_string()),
            (Role::User, "two".to_string()),
            (Role::Assistant, "re: two".to_string()),
        ]
    );
    // One summary record, and the cursor through `re: two`.
    let compaction = |m: &&Message| m.pai.producer == Producer::Compaction;
    let summaries_stored: Vec<&Message> = stored.messages.iter().filter(compaction).collect();
    assert_eq!(summaries_stored.len(), 1);
    let summary = summaries_stored[0];
    assert_eq!(summary.text(), "S1");
    let transcript_only = Visibility {
        transcript: true,
        context: false,
    };
    assert_eq!(summary.visibility, transcript_only);
    assert_eq!(summary.pai.run_id.as_deref(), Some(third.run_id.as_str()));
    let re_two = stored
        .messages
        .iter()
        .find(|m| m.text() == "re: two")
        .unwrap();
    let cursor = CompactionCursor::of(&stored).unwrap();
    assert_eq!(
        cursor,
        CompactionCursor {
            through: re_two.seq,
            summary: summary.id.clone(),
            covers: re_two.seq,
        }
    );
    assert!(stored.private_metadata.contains_key(COMPACTION_KEY));
    // The client sees the summary in its transcript, never the cursor.
    let state = s.thread("t1").state().await.unwrap();
    assert!(state.messages.iter().any(|m| m.id == summary.id));
    assert!(!format!("{state:?}").contains(COMPACTION_KEY));
}

/// SPEC C1: the summary and the cursor are one mutation of the run that
/// compacts, between its progress events.
#[tokio::test(start_paused = true)]
async fn c1_summary_and_cursor_are_one_mutation_with_progress_events() {
    let (s, _) = compacting(Arc::new(MemoryStore::default()), || {});
    let third = converse(&s, &["one", "two", "three"]).await.remove(2);
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    let by = |p: Producer| stored.messages.iter().find(|m| m.pai.producer == p);
    let summary = by(Producer::Compaction).unwrap();
    let re_two = stored.messages.iter().find(|m| m.text() == "re: two");
    let re_two = re_two.unwrap();
    let of_run = s.events.of(&third.run_id);
    let mutations: Vec<&EventKind> = of_run
        .iter()
        .filter(|k| matches!(k, EventKind::Mutated { .. }))
        .collect();
    assert_eq!(mutations.len(), 1);
    let EventKind::Mutated {
        appended, private, ..
    } = mutations[0]
    else {
        unreachable!()
    };
    assert_eq!(
        (appended.clone(), private.clone()),
        (vec![summary.id.clone()], vec![COMPACTION_KEY.to_string()])
    );
    assert!(of_run.iter().any(|k| matches!(k, EventKind::CompactionStarted { through, messages: 4, .. } if *through == re_two.seq)));
    assert!(
        of_run
            .iter()
            .any(|k| matches!(k, EventKind::Compacted { summary: id, .. } if *id == summary.id))
    );
}

/// SPEC C1: a later compaction builds on the previous summary: the summary
/// model sees `S1`, none of what it summarized, and the cursor moves on.
#[tokio::test(start_paused = true)]
async fn c1_a_later_compaction_builds_on_the_previous_summary() {
    let (s, summaries) = compacting(Arc::new(MemoryStore::default()), || {});
    converse(&s, &["one", "two", "three", "four", "five"]).await;
    let asked = summaries.seen();
    assert_eq!(asked.len(), 2);
    let second: Vec<(Role, String)> = shape(&asked[1].messages);
    assert!(
        second.contains(&(Role::System, "S1".to_string())),
        "{second:?}"
    );
    assert!(!second.iter().any(|(_, t)| t == "one"), "{second:?}");
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    let re_four = stored
        .messages
        .iter()
        .find(|m| m.text() == "re: four")
        .unwrap();
    assert_eq!(CompactionCursor::of(&stored).unwrap().through, re_four.seq);
}

/// SPEC C1: the summary and cursor are guarded by `expect =
/// private_metadata`: if private metadata changes while the summary is
/// written, nothing of the compaction is committed and the step goes on
/// with the full context.
#[tokio::test(start_paused = true)]
async fn c1_compaction_commit_is_guarded_by_private_metadata() {
    let store = Arc::new(MemoryStore::default());
    let meddler = store.clone();
    let (s, summaries) = compacting(store, move || {
        let reply = meddler.apply(StoreRequest::facade(
            "t1",
            FacadeOp::Mutate {
                incarnation: None,
                writer: Writer::Trusted,
                expect: Expect::Nothing,
                writes: vec![Write::PrivateMetadata {
                    key: "other".into(),
                    value: Some(json!(1)),
                }],
            },
        ));
        assert!(
            matches!(reply, Ok(StoreReply::Facade(FacadeReply::Mutated(Ok(_))))),
            "{reply:?}"
        );
    });
    let sent = converse(&s, &["one", "two", "three"]).await;
    assert_eq!(summaries.calls(), 1, "a summary was written");
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(CompactionCursor::of(&stored), None, "no cursor");
    assert!(
        stored
            .messages
            .iter()
            .all(|m| m.pai.producer != Producer::Compaction)
    );
    assert_eq!(stored.private_metadata.get("other"), Some(&json!(1)));
    let skipped = s.events.kinds().into_iter().any(|(r, k)| {
        r == sent[2].run_id && matches!(k, EventKind::CompactionSkipped { reason, .. } if reason.contains("conflict"))
    });
    assert!(skipped, "compaction says it skipped on a conflict");
    assert_eq!(
        context_of(&s, &sent[2].run_id),
        [
            (Role::User, "one".to_string()),
            (Role::Assistant, "re: one".to_string()),
            (Role::User, "two".to_string()),
            (Role::Assistant, "re: two".to_string()),
            (Role::User, "three".to_string()),
        ]
    );
    assert_eq!(stored.runs[2].status, RunStatus::Completed);
}

/// The first message of a context: the summary `S<n>`, as a system message.
fn summary_of(context: &[(Role, String)], n: u32) -> (Role, String) {
    let (role, text) = context
        .first()
        .cloned()
        .unwrap_or((Role::User, String::new()));
    assert_eq!(role, Role::System, "{context:?}");
    assert!(text.contains(&format!("S{n}")), "{context:?}");
    (role, text)
}

/// SPEC C2: with compaction installed, each step's context is the summary,
/// then the context-visible messages after the cursor; before any
/// compaction it is the whole history. (The step that compacts is checked
/// by `c2_the_step_that_compacts_sees_its_new_summary`.)
#[tokio::test(start_paused = true)]
async fn c2_context_is_summary_then_messages_after_cursor() {
    let (s, _) = compacting(Arc::new(MemoryStore::default()), || {});
    let sent = converse(&s, &["one", "two", "three", "four", "five"]).await;
    let of = |i: usize| context_of(&s, &sent[i].run_id);
    let u = |t: &str| (Role::User, t.to_string());
    let a = |t: &str| (Role::Assistant, format!("re: {t}"));
    assert_eq!(of(0), [u("one")]);
    assert_eq!(of(1), [u("one"), a("one"), u("two")], "no compaction yet");
    // Run `three` compacted through `re: two`; run `four` sees S1 and what follows.
    let four = of(3);
    let s1 = summary_of(&four, 1);
    assert_eq!(four, [s1, u("three"), a("three"), u("four")]);
    // Run `five` compacted through `re: four`. Context-hidden messages after
    // the cursor stay out too.
    let t = s.rt.admin().thread("t1");
    let stored = t.read().await.unwrap();
    let re_five = stored
        .messages
        .iter()
        .find(|m| m.text() == "re: five")
        .unwrap()
        .id
        .clone();
    t.set_visibility(vec![(re_five, HIDDEN)], Expect::Nothing)
        .await
        .unwrap();
    let six = converse(&s, &["six"]).await.remove(0);
    let six = context_of(&s, &six.run_id);
    let s2 = summary_of(&six, 2);
    assert!(!s2.1.contains("S1"), "the newest summary only");
    assert_eq!(six, [s2, u("five"), u("six")]);
}

/// SPEC C2, C1: the step whose resolver compacts is sent the new summary,
/// then the messages after the new cursor; the summarized messages must
/// not simply vanish from its context.
#[tokio::test(start_paused = true)]
async fn c2_the_step_that_compacts_sees_its_new_summary() {
    let (s, summaries) = compacting(Arc::new(MemoryStore::default()), || {});
    let sent = converse(&s, &["one", "two", "three"]).await;
    assert_eq!(summaries.calls(), 1, "run three compacted");
    let three = context_of(&s, &sent[2].run_id);
    let s1 = summary_of(&three, 1);
    assert_eq!(three, [s1, (Role::User, "three".to_string())]);
}

/// SPEC C1: regeneration repair: a regeneration that removes messages at or
/// before the cursor resets it in the same transaction; one that removes
/// only later messages keeps it.
#[tokio::test(start_paused = true)]
async fn c1_regeneration_behind_the_cursor_resets_it() {
    let (s, _) = compacting(Arc::new(MemoryStore::default()), || {});
    let sent = converse(&s, &["one", "two", "three", "four"]).await;
    let t = s.rt.admin().thread("t1");
    let th = s.rt.client("alice").thread("t1");
    let cursor = CompactionCursor::of(&t.read().await.unwrap()).unwrap();
    // Regenerating from `four` removes only `re: four`, after the cursor.
    t.regenerate(&sent[3].message_id).await.unwrap();
    th.wait_until_idle().await.unwrap();
    assert_eq!(CompactionCursor::of(&t.read().await.unwrap()), Some(cursor));
    // Regenerating from `two` removes `re: two`, which the cursor covers.
    let regen = t.regenerate(&sent[1].message_id).await.unwrap();
    let patched: Vec<Vec<String>> = s
        .events
        .kinds()
        .into_iter()
        .filter_map(|(_, k)| match k {
            EventKind::HistoryRewritten {
                patched, started, ..
            } if started.as_deref() == Some(regen.run.as_str()) => Some(patched),
            _ => None,
        })
        .collect();
    assert_eq!(patched, [vec![format!("private.{COMPACTION_KEY}")]]);
    th.wait_until_idle().await.unwrap();
    let after = t.read().await.unwrap();
    assert_eq!(CompactionCursor::of(&after), None);
    assert_eq!(
        stored_texts(&after.messages),
        ["one", "re: one", "two", "re: two"]
    );
    assert_eq!(
        context_of(&s, &regen.run),
        [
            (Role::User, "one".to_string()),
            (Role::Assistant, "re: one".to_string()),
            (Role::User, "two".to_string())
        ],
        "no summary of removed history"
    );
}

/// SPEC C3, S3: a summary passes the run's canonical transforms before it
/// is stored or used: with a redactor installed, a secret the summary
/// model repeats is masked in the stored record and in the context the
/// next step is sent.
#[tokio::test(start_paused = true)]
async fn c3_a_summary_is_redacted_before_it_is_stored_or_sent() {
    let summaries = ScriptedModel::by(|_, n| Turn::text(format!("S{} key sk-Live9", n + 1)));
    let compaction = Compaction::new(3, 1, summaries.clone());
    let pattern = pai_runtime::text::Pattern::parse("sk-[A-Za-z0-9]+").unwrap();
    let redact = common::redact(vec![pattern], "[hidden]");
    let s = facade_setup(vec![Box::new(compaction), Box::new(redact)])
        .store(Arc::new(MemoryStore::default()))
        .build();
    let third = converse(&s, &["one", "two", "three"]).await.remove(2);
    assert_eq!(summaries.calls(), 1);
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    let summary = stored
        .messages
        .iter()
        .find(|m| m.pai.producer == Producer::Compaction)
        .unwrap();
    assert_eq!(summary.text(), "S1 key [hidden]");
    let sent = context_of(&s, &third.run_id);
    assert_eq!(
        sent[0],
        (
            Role::System,
            "Summary of the earlier conversation: S1 key [hidden]".to_string()
        )
    );
    assert!(!format!("{sent:?}").contains("sk-Live9"));
}
