//! History rewrites through the facade (SPEC K4, R1–R3, L11): refused
//! while a run is busy, regeneration, `prepare_history_rewrite` patches in
//! the rewrite's own version, `history_rewritten` after the commit,
//! coalesced and bounded.

use super::*;

/// SPEC K4: while a run waits (a client tool call pending), visibility
/// rewrites and regeneration are refused and change nothing; once it has
/// ended, the same rewrite commits.
#[tokio::test(start_paused = true)]
async fn k4_rewrite_refused_while_a_run_waits() {
    let s = setup(vec![]);
    let th = s.rt.client("alice").thread("t1");
    let t = s.rt.admin().thread("t1");
    let sent = th.send("wait").await.unwrap();
    th.wait_until_idle().await.unwrap();
    let before = t.read().await.unwrap();
    assert_eq!(before.runs[0].status, RunStatus::Waiting);
    let busy = MutateError::Refused(Refusal::Busy {
        run: sent.run_id.clone(),
        status: RunStatus::Waiting,
    });
    // Hiding the assistant message that carries the pending call.
    let call_msg = before
        .messages
        .iter()
        .find(|m| m.parts.iter().any(|p| matches!(p, Part::ToolCall { .. })))
        .unwrap()
        .id
        .clone();
    let err = t
        .set_visibility(vec![(call_msg.clone(), HIDDEN)], Expect::Nothing)
        .await
        .unwrap_err();
    assert_eq!(err, busy);
    let err = t
        .set_visibility(vec![(sent.message_id.clone(), HIDDEN)], Expect::Nothing)
        .await
        .unwrap_err();
    assert_eq!(err, busy);
    let err = t.regenerate(&sent.message_id).await.unwrap_err();
    assert_eq!(err, busy);
    assert_eq!(t.read().await.unwrap(), before, "refusals change nothing");
    // A plain mutation (no rewrite) is not refused.
    t.set_metadata("k", json!(1)).await.unwrap();
    // Once the run ended, the rewrite commits.
    th.submit_tool_result(&format!("{}-pick", sent.run_id), json!("x"))
        .await
        .unwrap();
    th.wait_until_idle().await.unwrap();
    let done = t
        .set_visibility(vec![(call_msg.clone(), HIDDEN)], Expect::Nothing)
        .await
        .unwrap();
    assert_eq!(
        done.changed,
        [VisibilityChange {
            message: call_msg,
            before: Visibility::ALL,
            after: HIDDEN
        }]
    );
}

/// SPEC K4: a running run refuses rewrites too.
#[tokio::test(start_paused = true)]
async fn k4_rewrite_refused_while_a_run_runs() {
    let s = setup(vec![]);
    let th = s.rt.client("alice").thread("t1");
    let t = s.rt.admin().thread("t1");
    let sent = th.send("slow").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = t.read().await.unwrap();
    let busy = MutateError::Refused(Refusal::Busy {
        run: sent.run_id.clone(),
        status: RunStatus::Running,
    });
    let err = t
        .set_visibility(vec![(sent.message_id.clone(), HIDDEN)], Expect::Nothing)
        .await
        .unwrap_err();
    assert_eq!(err, busy);
    assert_eq!(t.regenerate(&sent.message_id).await.unwrap_err(), busy);
    assert_eq!(t.read().await.unwrap(), before);
    th.wait_until_idle().await.unwrap();
    t.regenerate(&sent.message_id).await.unwrap();
}

/// Two full runs on `t1`: messages `one`, `re: one`, `two`, `re: two`.
/// Returns the two sends.
async fn two_runs(s: &Setup) -> (pai_runtime::Sent, pai_runtime::Sent) {
    let th = s.rt.client("alice").thread("t1");
    let one = th.send("one").await.unwrap();
    th.wait_until_idle().await.unwrap();
    let two = th.send("two").await.unwrap();
    th.wait_until_idle().await.unwrap();
    (one, two)
}

/// SPEC R1: regenerating from a user message removes every message after
/// it and starts a new run from it, whose model sees none of the removed
/// history. A regeneration must start from a user message of the thread.
#[tokio::test(start_paused = true)]
async fn r1_regenerate_truncates_and_starts_a_run_from_the_message() {
    let s = setup(vec![]);
    let (one, _) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let before = t.read().await.unwrap();
    assert_eq!(
        stored_texts(&before.messages),
        ["one", "re: one", "two", "re: two"]
    );
    let removed: Vec<pai_runtime::id::MessageId> =
        before.messages[1..].iter().map(|m| m.id.clone()).collect();
    // Refusals first: an assistant message, a missing one.
    let reply = before.messages[1].id.clone();
    assert_eq!(
        t.regenerate(&reply).await.unwrap_err(),
        MutateError::Refused(Refusal::NotUserMessage { message: reply })
    );
    assert_eq!(
        t.regenerate("nope").await.unwrap_err(),
        MutateError::Refused(Refusal::NoMessage {
            message: "nope".into()
        })
    );
    assert_eq!(t.read().await.unwrap(), before);

    let regen = t.regenerate(&one.message_id).await.unwrap();
    assert_eq!(regen.from, one.message_id);
    s.thread("t1").wait_until_idle().await.unwrap();
    let after = t.read().await.unwrap();
    assert_eq!(stored_texts(&after.messages), ["one", "re: one"]);
    let (kept, reply) = (&after.messages[0], &after.messages[1]);
    assert_eq!(*kept, before.messages[0], "the message kept as is");
    assert!(reply.id != before.messages[1].id, "a new reply");
    assert_eq!(reply.pai.run_id.as_deref(), Some(regen.run.as_str()));
    let run = after.runs.iter().find(|r| r.id == regen.run).unwrap();
    assert_eq!(
        (run.status, run.trigger.as_str()),
        (RunStatus::Completed, one.message_id.as_str())
    );
    let request = s.model.seen().last().cloned().unwrap();
    assert_eq!(request.run_id, regen.run);
    let one_only = [ModelMessage::user("one")];
    assert_eq!(
        request.messages, one_only,
        "no removed message reaches the model"
    );
    let rewritten: Vec<_> = s.events.pick(|k| match k {
        EventKind::HistoryRewritten {
            kind: "regenerate",
            removed,
            started,
            ..
        } => Some((removed, started)),
        _ => None,
    });
    assert_eq!(rewritten, [(removed, Some(regen.run))]);
}

/// How a [`Rewriter`] patches a rewrite.
type PatchFn = Box<dyn Fn(&RewriteInput<'_>) -> HookResult<RewritePatch> + Send + Sync>;

/// Batches `history_rewritten` was given, each with the stored version when
/// the call began.
type Delivered = Arc<Mutex<Vec<(Vec<RewriteFact>, u64)>>>;

/// A hook that patches rewrites and records what it is given.
struct Rewriter {
    name: &'static str,
    patch: PatchFn,
    /// `prepare:<name>` and `rewritten:<name>` in call order.
    calls: Arc<Mutex<Vec<String>>>,
    /// Every rewrite `prepare_history_rewrite` saw: kind and thread version.
    prepared: Arc<Mutex<Vec<(RewriteKind, u64)>>>,
    delivered: Delivered,
    /// How long `history_rewritten` takes.
    delay: Duration,
    store: Option<Arc<MemoryStore>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl Rewriter {
    fn new(
        name: &'static str,
        patch: impl Fn(&RewriteInput<'_>) -> HookResult<RewritePatch> + Send + Sync + 'static,
    ) -> Rewriter {
        Rewriter {
            name,
            patch: Box::new(patch),
            calls: Arc::default(),
            prepared: Arc::default(),
            delivered: Arc::default(),
            delay: Duration::ZERO,
            store: None,
            in_flight: Arc::default(),
            max_in_flight: Arc::default(),
        }
    }
}

impl Lifecycle<()> for Rewriter {
    fn name(&self) -> &str {
        self.name
    }

    fn phases(&self) -> Phases {
        Phases::only(Phase::PrepareHistoryRewrite).with(Phase::HistoryRewritten)
    }

    fn prepare_history_rewrite<'a>(
        &'a self,
        _cx: &'a pai_runtime::HookCx<'_, ()>,
        input: &'a RewriteInput<'_>,
    ) -> HookFuture<'a, HookResult<RewritePatch>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("prepare:{}", self.name));
        self.prepared
            .lock()
            .unwrap()
            .push((input.kind.clone(), input.thread.version));
        HookFuture::ready((self.patch)(input))
    }

    fn history_rewritten<'a>(
        &'a self,
        cx: &'a pai_runtime::HookCx<'_, ()>,
        facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        HookFuture::new(async move {
            self.calls
                .lock()
                .unwrap()
                .push(format!("rewritten:{}", self.name));
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let version = self
                .store
                .as_ref()
                .and_then(|st| inspect(st, cx.thread_id))
                .map_or(0, |t| t.version);
            tokio::time::sleep(self.delay).await;
            self.delivered
                .lock()
                .unwrap()
                .push((facts.to_vec(), version));
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        })
    }
}

/// A [`Rewriter`] that records the thread's version and the rewrite's
/// kind in its patch, or fails while the flag is set.
fn patcher() -> (Rewriter, Arc<Mutex<bool>>) {
    let fail = Arc::new(Mutex::new(false));
    let failing = fail.clone();
    let r = Rewriter::new("patcher", move |input| {
        if *failing.lock().unwrap() {
            return Err(HookError::new("not now"));
        }
        Ok(RewritePatch::default()
            .set("seen_version", json!(input.thread.version))
            .set_private("last_kind", json!(input.kind.name())))
    });
    (r, fail)
}

/// SPEC R2: `prepare_history_rewrite` sees a visibility rewrite (its kind,
/// the thread before it) and its patches commit in the rewrite's own
/// version. A hook that fails refuses the rewrite: neither the rewrite nor
/// any patch lands.
#[tokio::test(start_paused = true)]
async fn r2_prepare_history_rewrite_patches_commit_in_the_same_version() {
    let (r, fail) = patcher();
    let prepared = r.prepared.clone();
    let s = setup(vec![Box::new(r)]);
    let (one, two) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let v0 = t.read().await.unwrap().version;
    let context_only = vec![(two.message_id.clone(), Visibility::CONTEXT_ONLY)];
    let done = t
        .set_visibility(context_only, Expect::Nothing)
        .await
        .unwrap();
    assert_eq!(done.version, v0 + 1, "rewrite and patches: one version");
    let after = t.read().await.unwrap();
    assert_eq!(after.version, v0 + 1);
    assert_eq!(after.metadata.get("seen_version"), Some(&json!(v0)));
    let last_kind = after.private_metadata.get("last_kind");
    assert_eq!(last_kind, Some(&json!("visibility")));
    let msg = after.messages.iter().find(|m| m.id == two.message_id);
    assert_eq!(msg.unwrap().visibility, Visibility::CONTEXT_ONLY);
    let change = VisibilityChange {
        message: two.message_id.clone(),
        before: Visibility::ALL,
        after: Visibility::CONTEXT_ONLY,
    };
    let changes = vec![change];
    let want = [(RewriteKind::Visibility { changes }, v0)];
    assert_eq!(prepared.lock().unwrap().clone(), want);

    // A failing hook refuses the rewrite: nothing lands.
    *fail.lock().unwrap() = true;
    let all = vec![(two.message_id.clone(), Visibility::ALL)];
    let err = t.set_visibility(all, Expect::Nothing).await.unwrap_err();
    let refused = matches!(&err, MutateError::Hook(m) if m.contains("not now"));
    assert!(refused, "{err:?}");
    assert!(t.regenerate(&one.message_id).await.is_err());
    assert_eq!(t.read().await.unwrap(), after);
}

/// SPEC R2: a regeneration's `prepare_history_rewrite` sees it (the message
/// it starts from, the messages it removes, the thread before it) and its
/// patches commit in the regeneration's own version.
#[tokio::test(start_paused = true)]
async fn r2_a_regeneration_is_patched_in_its_own_version() {
    let (r, _) = patcher();
    let prepared = r.prepared.clone();
    let s = setup(vec![Box::new(r)]);
    let (one, _) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let before = t.read().await.unwrap();
    let v1 = before.version;
    let removed: Vec<pai_runtime::id::MessageId> =
        before.messages[1..].iter().map(|m| m.id.clone()).collect();
    let regen = t.regenerate(&one.message_id).await.unwrap();
    s.thread("t1").wait_until_idle().await.unwrap();
    let rewritten: Vec<(u64, Vec<String>)> = s.events.pick(|k| match k {
        EventKind::HistoryRewritten {
            kind: "regenerate",
            version,
            patched,
            ..
        } => Some((version, patched)),
        _ => None,
    });
    let keys = vec!["seen_version".to_string(), "private.last_kind".to_string()];
    let want = [(v1 + 1, keys)];
    assert_eq!(rewritten, want, "the regeneration is version v1 + 1");
    let end = t.read().await.unwrap();
    let seen = end.metadata.get("seen_version");
    assert_eq!(seen, Some(&json!(v1)), "written by that version");
    let last_kind = end.private_metadata.get("last_kind");
    assert_eq!(last_kind, Some(&json!("regenerate")));
    let from = one.message_id.clone();
    let want = (RewriteKind::Regenerate { from, removed }, v1);
    assert_eq!(prepared.lock().unwrap().last().cloned(), Some(want));
    let completed =
        |r: &pai_runtime::store::RunRecord| r.id == regen.run && r.status == RunStatus::Completed;
    assert!(end.runs.iter().any(completed));
}

/// SPEC R3: `history_rewritten` runs after the commit (the store already has
/// the rewrite's version when it is called); while a slow call runs, the
/// rewrites that follow are held and delivered together in one call, never
/// concurrently with it. A failing call cannot undo a rewrite.
#[tokio::test(start_paused = true)]
async fn r3_history_rewritten_runs_after_commit_and_coalesces() {
    let store = Arc::new(MemoryStore::default());
    let mut r = Rewriter::new("slow", |_| Ok(RewritePatch::default()));
    r.delay = Duration::from_secs(10);
    r.store = Some(store.clone());
    let delivered = r.delivered.clone();
    let max_in_flight = r.max_in_flight.clone();
    let s = facade_setup(vec![Box::new(r)]).store(store).build();
    let (one, two) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let set = |id: &str, v: Visibility| t.set_visibility(vec![(id.into(), v)], Expect::Nothing);
    let a = set(&one.message_id, HIDDEN).await.unwrap();
    // Let the first delivery start its slow call.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let running = delivered.lock().unwrap().is_empty();
    assert!(running, "the first call is still running");
    let b = set(&two.message_id, HIDDEN).await.unwrap();
    let c = set(&one.message_id, Visibility::ALL).await.unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let got: Vec<(Vec<u64>, u64)> = delivered
        .lock()
        .unwrap()
        .iter()
        .map(|(facts, v)| (facts.iter().map(|f| f.version).collect(), *v))
        .collect();
    assert_eq!(
        got,
        [
            (vec![a.version], a.version),
            (vec![b.version, c.version], c.version)
        ],
        "one call for A (after its commit), one for B and C together"
    );
    let in_flight = max_in_flight.load(Ordering::SeqCst);
    assert_eq!(in_flight, 1, "serialized per thread");
    let facts = delivered.lock().unwrap()[1].0.clone();
    assert_eq!(
        facts[1].kind,
        RewriteKind::Visibility {
            changes: vec![VisibilityChange {
                message: one.message_id.clone(),
                before: HIDDEN,
                after: Visibility::ALL
            }]
        }
    );
    let batches: Vec<Vec<u64>> = s.events.pick(|k| match k {
        EventKind::RewriteDelivered {
            versions,
            error: None,
        } => Some(versions),
        _ => None,
    });
    assert_eq!(batches, [vec![a.version], vec![b.version, c.version]]);
}

/// SPEC R3: `history_rewritten` runs for a bounded number of threads at
/// once: with a bound of one, a second thread's delivery waits for the
/// first thread's to end; with a bound of two, both run together.
#[tokio::test(start_paused = true)]
async fn r3_history_rewritten_runs_on_a_bounded_number_of_threads() {
    for (bound, overlap) in [(1, 1), (2, 2)] {
        let mut r = Rewriter::new("slow", |_| Ok(RewritePatch::default()));
        r.delay = Duration::from_secs(10);
        let delivered = r.delivered.clone();
        let max_in_flight = r.max_in_flight.clone();
        let hooks: Vec<Box<dyn Lifecycle<()>>> = vec![Box::new(r)];
        let s = facade_setup(hooks).rewrite_concurrency(bound).build();
        let admin = s.rt.admin();
        for id in ["t1", "t2"] {
            let t = admin.thread(id);
            t.create("alice").await.unwrap();
            let (ids, _) = t
                .mutate(Expect::Nothing, |st| {
                    Ok(st.append(Role::User, "hi", Visibility::ALL))
                })
                .await
                .unwrap();
            t.set_visibility(vec![(ids, HIDDEN)], Expect::Nothing)
                .await
                .unwrap();
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(delivered.lock().unwrap().len(), 2, "both threads heard");
        assert_eq!(
            max_in_flight.load(Ordering::SeqCst),
            overlap,
            "with a bound of {bound}"
        );
    }
}

/// A `history_rewritten` hook that fails.
struct Failing;

impl Lifecycle<()> for Failing {
    fn phases(&self) -> Phases {
        Phases::only(Phase::HistoryRewritten)
    }

    fn history_rewritten<'a>(
        &'a self,
        _cx: &'a pai_runtime::HookCx<'_, ()>,
        _facts: &'a [RewriteFact],
    ) -> HookFuture<'a, HookResult<()>> {
        HookFuture::ready(Err(HookError::new("listener down")))
    }
}

/// SPEC R3: a failing `history_rewritten` cannot undo the rewrite.
#[tokio::test(start_paused = true)]
async fn r3_a_failing_history_rewritten_leaves_the_rewrite() {
    let s = setup(vec![Box::new(Failing)]);
    let (one, _) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let done = t
        .set_visibility(vec![(one.message_id.clone(), HIDDEN)], Expect::Nothing)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let errors: Vec<(Vec<u64>, Option<String>)> = s.events.pick(|k| match k {
        EventKind::RewriteDelivered { versions, error } => Some((versions, error)),
        _ => None,
    });
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].0, [done.version]);
    assert!(
        errors[0]
            .1
            .as_deref()
            .unwrap_or("")
            .contains("listener down")
    );
    let after = t.read().await.unwrap();
    assert_eq!(after.version, done.version);
    assert_eq!(after.messages[0].visibility, HIDDEN);
}

/// The metadata, private metadata and hook calls a rewrite leaves.
type Merged = (Map<String, Value>, Map<String, Value>, Vec<String>);

/// The rewrite's result for three patching hooks composed in `order`.
async fn merged(order: [usize; 3]) -> Merged {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut hooks: Vec<Option<Rewriter>> = vec![
        Some(Rewriter::new("a", |_| {
            Ok(RewritePatch::default()
                .set("k", json!("a"))
                .set("x", json!("a"))
                .set_private("p", json!("a")))
        })),
        Some(Rewriter::new("b", |_| {
            Ok(RewritePatch::default()
                .set("k", json!("b"))
                .remove(true, "p")
                .remove(false, "x"))
        })),
        Some(Rewriter::new("c", |_| {
            Ok(RewritePatch::default()
                .set("x", json!("c"))
                .remove(false, "seed"))
        })),
    ];
    let mut composed: Vec<Box<dyn Lifecycle<()>>> = Vec::new();
    for i in order {
        let mut h = hooks[i].take().unwrap();
        h.calls = calls.clone();
        composed.push(Box::new(h));
    }
    let s = setup(composed);
    let (one, _) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    t.mutate(Expect::Nothing, |st| {
        st.set_metadata("seed", json!(1));
        st.set_private("p", json!("seed"));
        Ok(())
    })
    .await
    .unwrap();
    let v = t.read().await.unwrap().version;
    let done = t
        .set_visibility(vec![(one.message_id, HIDDEN)], Expect::Nothing)
        .await
        .unwrap();
    assert_eq!(done.version, v + 1);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = t.read().await.unwrap();
    let calls = calls.lock().unwrap().clone();
    (after.metadata, after.private_metadata, calls)
}

/// SPEC L11: the `prepare_history_rewrite` patches of composed hooks merge
/// in composition order (a later hook's set or remove of a key wins), and
/// commit with the rewrite; `history_rewritten` hooks are called in order.
#[tokio::test(start_paused = true)]
async fn l11_prepare_patches_merge_in_order() {
    let (metadata, private, calls) = merged([0, 1, 2]).await;
    let expected: Map<String, Value> =
        [("k".to_string(), json!("b")), ("x".to_string(), json!("c"))]
            .into_iter()
            .collect();
    assert_eq!(
        metadata, expected,
        "b's k over a's; c's x after b's removal; c removed seed"
    );
    assert!(
        !private.contains_key("p"),
        "b's removal wins over a's set and the stored value"
    );
    assert_eq!(
        calls,
        [
            "prepare:a",
            "prepare:b",
            "prepare:c",
            "rewritten:a",
            "rewritten:b",
            "rewritten:c"
        ]
    );
    // The opposite order gives the opposite winners.
    let (metadata, private, calls) = merged([2, 1, 0]).await;
    let expected: Map<String, Value> =
        [("k".to_string(), json!("a")), ("x".to_string(), json!("a"))]
            .into_iter()
            .collect();
    assert_eq!(metadata, expected);
    assert_eq!(private.get("p"), Some(&json!("a")));
    assert_eq!(calls[..3], ["prepare:c", "prepare:b", "prepare:a"]);
}
