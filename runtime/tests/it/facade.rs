//! The thread facade end to end, through the public API (SPEC H2–H5, K4,
//! R1–R3, L11, C1, C2): trusted admin mutations with expectations, hook
//! mutations inside a run, history rewrites with their hooks, deletion and
//! incarnations, and the compaction helper as the main model sees it.
//! Each test is named after the rule it checks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::store::{AdminOp, AdminReply, FacadeOp, FacadeReply, ReadOp, RunOp};
use pai_runtime::{
    Agent, Event, EventSink, HookError, HookFuture, HookResult, LanguageModel, Lifecycle,
    MemoryStore, Message, ModelError, ModelRequest, Part, Role, Runtime, StoreError, StreamPart,
    ToolError, client_tool, compose,
    event::{EventKind, LiveEvent},
    facade::MutateError,
    hook,
    hook::{
        COMPACTION_KEY, Compaction, CompactionCursor, Phase, Phases, RewriteFact, RewriteInput,
        RewriteKind, RewritePatch, RunDecision,
    },
    message::{ModelContent, ModelMessage, PaiMeta, Producer, Visibility},
    model::{BoxStream, FinishReason, ModelMap, ReadyStream},
    store::{
        Expect, Refusal, RunStatus, StoreReply, StoreRequest, VisibilityChange, Write, Writer,
    },
    typed_tool,
};
use serde_json::{Map, Value, json};

use crate::common;
use common::{CountingIds, StillClock};

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// Every request a model received.
type Seen = Arc<Mutex<Vec<ModelRequest>>>;

/// The newest user text of a request.
fn last_user_text(r: &ModelRequest) -> String {
    r.messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| texts(m).join(""))
        .unwrap_or_default()
}

fn texts(m: &ModelMessage) -> Vec<String> {
    m.content
        .iter()
        .filter_map(|c| match c {
            ModelContent::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// The main model: the newest user text decides. `wait` calls the client
/// tool `pick` at step 0; `slow` calls the backend tool `slow` (a minute
/// long) at step 0; anything else is answered `re: <text>`.
struct Main {
    seen: Seen,
}

impl LanguageModel for Main {
    fn stream<'a>(&'a self, r: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        self.seen.lock().unwrap().push(r.clone());
        let text = last_user_text(r);
        let call =
            |tool: &str| StreamPart::tool_call(format!("{}-{tool}", r.run_id), tool, json!({}));
        let parts = match (text.as_str(), r.step) {
            ("wait", 0) => vec![call("pick"), StreamPart::Finish(FinishReason::ToolCalls)],
            ("slow", 0) => vec![call("slow"), StreamPart::Finish(FinishReason::ToolCalls)],
            (t, _) => vec![
                StreamPart::TextDelta(format!("re: {t}").into()),
                StreamPart::Finish(FinishReason::Stop),
            ],
        };
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

#[derive(Default)]
struct Log(Mutex<Vec<Event>>);

impl EventSink for Log {
    fn record(&self, e: Event) {
        self.0.lock().unwrap().push(e);
    }
}

impl Log {
    fn kinds(&self) -> Vec<(String, EventKind)> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .map(|e| (e.run_id.clone(), e.kind.clone()))
            .collect()
    }

    /// `Ended` events of `run`: (status, reason).
    fn ends(&self, run: &str) -> Vec<(RunStatus, Option<String>)> {
        self.kinds()
            .into_iter()
            .filter(|(r, _)| r == run)
            .filter_map(|(_, k)| match k {
                EventKind::Ended { status, reason, .. } => Some((status, reason)),
                _ => None,
            })
            .collect()
    }
}

struct Setup {
    rt: Runtime<()>,
    log: Arc<Log>,
    store: Arc<MemoryStore>,
    seen: Seen,
}

/// A runtime for agent `a` (tools `pick` and `slow`) with `hooks`, the
/// main model "m" and a store of the test's own.
fn setup(hooks: Vec<Box<dyn Lifecycle<()>>>) -> Setup {
    setup_on(Arc::new(MemoryStore::default()), hooks)
}

fn setup_on(store: Arc<MemoryStore>, hooks: Vec<Box<dyn Lifecycle<()>>>) -> Setup {
    setup_full(store, hooks, 4)
}

/// As [`setup_on`], with at most `rewrite_threads` threads' `history_rewritten`
/// hooks running at once.
fn setup_full(
    store: Arc<MemoryStore>,
    hooks: Vec<Box<dyn Lifecycle<()>>>,
    rewrite_threads: usize,
) -> Setup {
    let seen = Seen::default();
    let log = Arc::new(Log::default());
    let pick = client_tool::<Value, Value>("pick", "the user picks");
    let slow = typed_tool(
        "slow",
        "takes a minute",
        false,
        |_cx, _i: Value| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, ToolError>(json!("late"))
        },
    );
    let agent = Agent::new("a", "m")
        .typed_tool(&pick)
        .typed_tool(&slow)
        .lifecycle(compose(hooks));
    let rt = Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", Arc::new(Main { seen: seen.clone() })))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .events(log.clone())
        .store(store.clone())
        .rewrite_concurrency(rewrite_threads)
        .build()
        .unwrap();
    Setup {
        rt,
        log,
        store,
        seen,
    }
}

/// Texts of the stored messages, in order.
fn stored_texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn inspect(store: &MemoryStore, thread: &str) -> Option<pai_runtime::store::StoredThread> {
    match store.apply(StoreRequest::admin(thread, AdminOp::Inspect)) {
        Ok(StoreReply::Admin(AdminReply::Thread(t))) => t,
        other => panic!("inspect answered {other:?}"),
    }
}

const HIDDEN: Visibility = Visibility {
    transcript: false,
    context: false,
};

// ---------------------------------------------------------------------------
// H2
// ---------------------------------------------------------------------------

/// SPEC H2, H1: every write staged in `f` lands in one commit: one version,
/// one watcher invalidation, all of them visible together.
#[tokio::test(start_paused = true)]
async fn h2_staged_writes_commit_as_one_version() {
    let s = setup(vec![]);
    let t = s.rt.admin().thread("t1");
    t.create("alice").await.unwrap();
    let mut watch =
        s.rt.client("alice")
            .thread("t1")
            .watch(vec![])
            .await
            .unwrap();
    let before = t.read().await.unwrap();
    let (ids, done) = t
        .mutate(Expect::Nothing, |st| {
            let a = st.append(Role::User, "one", Visibility::ALL);
            let b = st.append(Role::Assistant, "two", Visibility::CONTEXT_ONLY);
            st.set_metadata("k", json!(1));
            st.set_private("p", json!("x"));
            Ok(vec![a, b])
        })
        .await
        .unwrap();
    assert_eq!(
        done.version,
        before.version + 1,
        "one version for four writes"
    );
    assert_eq!(done.appended, ids);
    let after = t.read().await.unwrap();
    assert_eq!(after.version, before.version + 1);
    assert_eq!(stored_texts(&after.messages), ["one", "two"]);
    assert_eq!(after.messages[1].visibility, Visibility::CONTEXT_ONLY);
    assert_eq!(after.metadata.get("k"), Some(&json!(1)));
    assert_eq!(after.private_metadata.get("p"), Some(&json!("x")));
    let mut committed = Vec::new();
    while let Some(e) = watch.try_next() {
        if let LiveEvent::Committed { version, .. } = e {
            committed.push(version);
        }
    }
    assert_eq!(
        committed,
        [before.version + 1],
        "one invalidation per commit"
    );
    // An empty mutation is no change: no version.
    let (_, none) = t.mutate(Expect::Nothing, |_| Ok(())).await.unwrap();
    assert_eq!(none.version, after.version);
    assert_eq!(t.read().await.unwrap(), after);
}

/// SPEC H2: an error or a panic in `f` commits none of its staged writes.
#[tokio::test(start_paused = true)]
async fn h2_error_or_panic_in_f_commits_nothing() {
    let s = setup(vec![]);
    let t = s.rt.admin().thread("t1");
    t.create("alice").await.unwrap();
    t.set_metadata("k", json!("kept")).await.unwrap();
    let before = t.read().await.unwrap();
    let err = t
        .mutate(Expect::Nothing, |st| {
            st.append(Role::User, "lost", Visibility::ALL);
            st.set_metadata("k", json!("lost"));
            st.set_private("p", json!("lost"));
            Err::<(), _>("changed my mind".to_string())
        })
        .await
        .unwrap_err();
    assert_eq!(err, MutateError::Aborted("changed my mind".into()));
    assert_eq!(t.read().await.unwrap(), before, "an error commits nothing");
    let err = t
        .mutate(Expect::Nothing, |st| -> Result<(), String> {
            st.append(Role::User, "lost", Visibility::ALL);
            st.set_private("p", json!("lost"));
            panic!("boom in f")
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MutateError::Aborted(m) if m.contains("boom in f")),
        "{err:?}"
    );
    assert_eq!(t.read().await.unwrap(), before, "a panic commits nothing");
}

/// SPEC H2: inside `f`, reads see the thread as stored when the mutation
/// began, never the writes `f` staged; those still commit afterwards.
#[tokio::test(start_paused = true)]
async fn h2_reads_inside_f_see_stored_state_not_staged_writes() {
    let s = setup(vec![]);
    let t = s.rt.admin().thread("t1");
    t.create("alice").await.unwrap();
    t.set_metadata("k", json!("stored")).await.unwrap();
    let v = t.read().await.unwrap().version;
    let (seen, _) = t
        .mutate(Expect::Nothing, |st| {
            st.set_metadata("k", json!("staged"));
            st.append(Role::User, "new", Visibility::ALL);
            st.set_private("p", json!(1));
            let th = st.thread();
            Ok((
                th.metadata.get("k").cloned(),
                th.messages.len(),
                th.private_metadata.get("p").cloned(),
                th.version,
            ))
        })
        .await
        .unwrap();
    assert_eq!(seen, (Some(json!("stored")), 0, None, v));
    let after = t.read().await.unwrap();
    assert_eq!(after.metadata.get("k"), Some(&json!("staged")));
    assert_eq!(stored_texts(&after.messages), ["new"]);
    assert_eq!(after.private_metadata.get("p"), Some(&json!(1)));
}

/// SPEC H2, H7: a hook's mutation inside its run is atomic too: an error in
/// `f` commits nothing, a commit is one version, and what it appends is
/// attributed to the run.
#[tokio::test(start_paused = true)]
async fn h2_hook_mutations_inside_a_run_are_atomic() {
    type Outcomes = Arc<Mutex<Vec<Result<u64, MutateError>>>>;
    let outcomes = Outcomes::default();
    let out = outcomes.clone();
    let h = hook::prepare_run("stage", move |cx, _| {
        let out = out.clone();
        HookFuture::new(async move {
            let before = cx
                .read_thread()
                .await
                .map_err(|e| HookError::new(e.to_string()))?;
            let failed = cx
                .mutate(Expect::Nothing, |st| {
                    st.set_private("p", json!("lost"));
                    Err::<(), _>("no".to_string())
                })
                .await;
            out.lock().unwrap().push(failed.map(|(_, m)| m.version));
            let done = cx
                .mutate(Expect::version_of(&before), |st| {
                    st.append(Role::System, "note", Visibility::CONTEXT_ONLY);
                    st.set_private("p", json!("kept"));
                    Ok(())
                })
                .await;
            out.lock()
                .unwrap()
                .push(done.map(|(_, m)| m.version - before.version));
            Ok(RunDecision::default())
        })
    });
    let s = setup(vec![Box::new(h)]);
    let th = s.rt.client("alice").thread("t1");
    let sent = th.send("hello").await.unwrap();
    th.wait_until_idle().await.unwrap();
    let got = outcomes.lock().unwrap().clone();
    assert_eq!(got, [Err(MutateError::Aborted("no".into())), Ok(1)]);
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(stored.private_metadata.get("p"), Some(&json!("kept")));
    let note = stored.messages.iter().find(|m| m.text() == "note").unwrap();
    assert_eq!(
        (note.pai.producer, note.pai.run_id.as_deref()),
        (Producer::Lifecycle, Some(sent.run_id.as_str()))
    );
}

// ---------------------------------------------------------------------------
// H3
// ---------------------------------------------------------------------------

/// SPEC H3: `expect = version(v)` conflicts once anything changed since v
/// (metadata, private metadata, messages, a whole run), and commits when
/// nothing did. A conflict changes nothing.
#[tokio::test(start_paused = true)]
async fn h3_version_expectation_conflicts_on_any_change() {
    let s = setup(vec![]);
    let admin = s.rt.admin();
    let t = admin.thread("t1");
    let th = s.rt.client("alice").thread("t1");
    t.create("alice").await.unwrap();
    for change in ["metadata", "private", "message", "run"] {
        let v = t.read().await.unwrap().version;
        match change {
            "metadata" => {
                t.set_metadata("m", json!(change)).await.unwrap();
            }
            "private" => {
                t.mutate(Expect::Nothing, |st| {
                    st.set_private("q", json!(v));
                    Ok(())
                })
                .await
                .unwrap();
            }
            "message" => {
                t.mutate(Expect::Nothing, |st| {
                    st.append(Role::User, "note", Visibility::ALL);
                    Ok(())
                })
                .await
                .unwrap();
            }
            _ => {
                th.send("hi").await.unwrap();
                th.wait_until_idle().await.unwrap();
            }
        }
        let changed = t.read().await.unwrap();
        assert!(changed.version > v, "{change} changed the version");
        let err = t
            .mutate(
                Expect::Version {
                    version: v,
                    incarnation: changed.incarnation,
                },
                |st| {
                    st.set_private("x", json!(change));
                    Ok(())
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            err,
            MutateError::Refused(Refusal::Conflict {
                version: changed.version,
                incarnation: changed.incarnation,
                private_changed: false
            }),
            "after a {change} change"
        );
        assert!(err.is_conflict());
        assert_eq!(
            t.read().await.unwrap(),
            changed,
            "a conflict changes nothing"
        );
        // Nothing changed since `changed`: its version holds.
        let (_, done) = t
            .mutate(Expect::version_of(&changed), |st| {
                st.set_private("x", json!(change));
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(done.version, changed.version + 1);
    }
}

/// SPEC H3: `expect = private_metadata(m)` ignores unrelated changes (other
/// metadata, messages, a run with its lease and renewals) and conflicts only
/// once private metadata changed.
#[tokio::test(start_paused = true)]
async fn h3_private_expectation_ignores_unrelated_changes() {
    let s = setup(vec![]);
    let t = s.rt.admin().thread("t1");
    let th = s.rt.client("alice").thread("t1");
    t.create("alice").await.unwrap();
    t.mutate(Expect::Nothing, |st| {
        st.set_private("cursor", json!(1));
        Ok(())
    })
    .await
    .unwrap();
    let snapshot = t.read().await.unwrap();
    // Unrelated changes.
    t.set_metadata("public", json!(true)).await.unwrap();
    t.mutate(Expect::Nothing, |st| {
        st.append(Role::User, "aside", Visibility::ALL);
        Ok(())
    })
    .await
    .unwrap();
    th.send("hi").await.unwrap();
    th.wait_until_idle().await.unwrap();
    let moved = t.read().await.unwrap();
    assert!(
        moved.version >= snapshot.version + 4,
        "{} -> {}",
        snapshot.version,
        moved.version
    );
    let (_, done) = t
        .mutate(Expect::private_metadata_of(&snapshot), |st| {
            st.set_private("cursor", json!(2));
            Ok(())
        })
        .await
        .expect("unrelated changes do not conflict");
    assert_eq!(done.version, moved.version + 1);
    // Now the snapshot is stale.
    let current = t.read().await.unwrap();
    let err = t
        .mutate(Expect::private_metadata_of(&snapshot), |st| {
            st.set_private("cursor", json!(3));
            st.set_metadata("public", json!(false));
            Ok(())
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        MutateError::Refused(Refusal::Conflict {
            version: current.version,
            incarnation: current.incarnation,
            private_changed: true
        })
    );
    assert_eq!(
        t.read().await.unwrap(),
        current,
        "a conflict changes nothing"
    );
}

// ---------------------------------------------------------------------------
// H4
// ---------------------------------------------------------------------------

/// SPEC H4: a client reads `metadata`, never private metadata (neither in
/// its state nor in what it watches), and reaches only its own threads.
#[tokio::test(start_paused = true)]
async fn h4_client_state_never_carries_private_metadata() {
    let s = setup(vec![]);
    let t = s.rt.admin().thread("t1");
    t.create("alice").await.unwrap();
    let th = s.rt.client("alice").thread("t1");
    let mut watch = th.watch(vec![]).await.unwrap();
    t.mutate(Expect::Nothing, |st| {
        st.set_metadata("public", json!("shown"));
        st.set_private("secret", json!("s3cr3t-value"));
        Ok(())
    })
    .await
    .unwrap();
    th.send("hi").await.unwrap();
    let state = th.wait_until_idle().await.unwrap();
    assert_eq!(state.metadata.get("public"), Some(&json!("shown")));
    assert!(!state.metadata.contains_key("secret"));
    let shown = format!("{state:?}");
    assert!(!shown.contains("s3cr3t-value"), "{shown}");
    let mut live = Vec::new();
    while let Some(e) = watch.try_next() {
        live.push(format!("{e:?}"));
    }
    assert!(!live.is_empty());
    assert!(live.iter().all(|e| !e.contains("s3cr3t-value")), "{live:?}");
    // The server side has it.
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(
        stored.private_metadata.get("secret"),
        Some(&json!("s3cr3t-value"))
    );
    // Another identity reaches nothing.
    let bob = s.rt.client("bob").thread("t1");
    assert!(bob.state().await.is_err());
    assert!(bob.send("let me in").await.is_err());
    assert_eq!(s.rt.inspect("t1").await.unwrap().unwrap(), stored);
}

// ---------------------------------------------------------------------------
// H5
// ---------------------------------------------------------------------------

/// SPEC H5: deleting and creating the same id starts a new incarnation,
/// empty; a handle bound to the old one, and the old incarnation's runs and
/// resolvers, can neither read nor write it.
#[tokio::test(start_paused = true)]
async fn h5_delete_then_create_is_a_new_incarnation_and_bound_handles_are_refused() {
    let s = setup(vec![]);
    let admin = s.rt.admin();
    let th = s.rt.client("alice").thread("t1");
    let sent = th.send("hi").await.unwrap();
    th.wait_until_idle().await.unwrap();
    admin
        .thread("t1")
        .mutate(Expect::Nothing, |st| {
            st.set_metadata("m", json!(1));
            st.set_private("p", json!(1));
            Ok(())
        })
        .await
        .unwrap();
    let bound = admin.bind("t1").await.unwrap();
    let old = bound.read().await.unwrap();
    assert_eq!(bound.incarnation(), Some(old.incarnation));

    let gone = admin.thread("t1").delete().await.unwrap().unwrap();
    assert_eq!(gone.incarnation, old.incarnation);
    assert!(gone.cancelled.is_empty(), "the only run had completed");
    assert!(matches!(
        admin.thread("t1").read().await,
        Err(StoreError::NoThread(_))
    ));
    assert_eq!(admin.thread("t1").delete().await.unwrap(), None);

    let new = admin.thread("t1").create("alice").await.unwrap();
    assert_ne!(new, old.incarnation, "a new incarnation");
    let fresh = admin.thread("t1").read().await.unwrap();
    assert_eq!(fresh.incarnation, new);
    assert!(fresh.messages.is_empty() && fresh.runs.is_empty());
    assert!(fresh.metadata.is_empty() && fresh.private_metadata.is_empty());
    assert!(th.state().await.unwrap().messages.is_empty());

    // The bound handle is refused, and changes nothing.
    let deleted = |e: &StoreError| matches!(e, StoreError::Deleted { incarnation, .. } if *incarnation == old.incarnation);
    let read = bound.read().await.unwrap_err();
    assert!(deleted(&read), "{read:?}");
    let write = bound
        .mutate(Expect::Nothing, |st| {
            st.set_metadata("stale", json!(true));
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&write, MutateError::Store(e) if deleted(e)),
        "{write:?}"
    );
    assert!(bound.set_metadata("stale", json!(true)).await.is_err());
    assert!(bound.delete().await.is_err(), "a bound delete is refused");
    assert_eq!(admin.thread("t1").read().await.unwrap(), fresh);

    // The old incarnation's run and resolvers are refused by the store.
    let note = Message {
        id: "late".into(),
        seq: 0,
        role: Role::Assistant,
        parts: vec![Part::text("late write")],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::Model, Some(&sent.run_id), Some(0), 0),
    };
    let (run, token) = (sent.run_id.clone(), old.lease_token);
    let late = RunOp::Append {
        messages: vec![note],
        step: None,
    };
    let append = s
        .store
        .apply(StoreRequest::run("t1", run.clone(), token, late));
    assert!(matches!(&append, Err(e) if deleted(e)), "{append:?}");
    let stale = Write::Metadata {
        key: "stale".into(),
        value: Some(json!(true)),
    };
    let mutate = s.store.apply(StoreRequest::facade(
        "t1",
        FacadeOp::Mutate {
            incarnation: None,
            writer: Writer::Run { run, token },
            expect: Expect::Nothing,
            writes: vec![stale],
        },
    ));
    assert!(matches!(&mutate, Err(e) if deleted(e)), "{mutate:?}");
    let read = pai_runtime::store::HistoryRead::Metadata;
    let (agent, incarnation) = ("a".into(), old.incarnation);
    let history = s.store.apply(StoreRequest::read(
        "t1",
        ReadOp::History {
            agent,
            incarnation,
            read,
        },
    ));
    assert!(history.is_err(), "{history:?}");
    assert_eq!(admin.thread("t1").read().await.unwrap(), fresh);
}

/// SPEC H5: deleting a thread cancels its waiting and queued runs with
/// reason `deleted` (neither runs again), tells and closes its watchers.
#[tokio::test(start_paused = true)]
async fn h5_delete_cancels_queued_and_waiting_runs_with_reason_deleted() {
    let s = setup(vec![]);
    let th = s.rt.client("alice").thread("t1");
    let first = th.send("wait").await.unwrap();
    th.wait_until_idle().await.unwrap();
    let second = th.send("later").await.unwrap();
    let state = th.state().await.unwrap();
    let statuses: Vec<RunStatus> = state.runs.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [RunStatus::Waiting, RunStatus::Queued]);
    let mut watch = th.watch(vec![]).await.unwrap();

    let gone = s.rt.admin().thread("t1").delete().await.unwrap().unwrap();
    assert_eq!(
        gone.cancelled,
        [
            (first.run_id.clone(), RunStatus::Waiting),
            (second.run_id.clone(), RunStatus::Queued)
        ]
    );
    let deleted = (RunStatus::Cancelled, Some("deleted".to_string()));
    assert_eq!(s.log.ends(&first.run_id), std::slice::from_ref(&deleted));
    assert_eq!(s.log.ends(&second.run_id), [deleted]);
    // The watcher hears both ends, then is closed.
    let mut ended = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(e) = watch.next().await {
            if let LiveEvent::RunEnded { run_id, reason, .. } = e {
                ended.push((run_id, reason));
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the watch was not closed");
    let why = Some("deleted".to_string());
    assert_eq!(
        ended,
        [
            (first.run_id.clone(), why.clone()),
            (second.run_id.clone(), why)
        ]
    );
    // Nothing of the old runs goes on.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        s.seen.lock().unwrap().len(),
        1,
        "only the first step ever ran"
    );
    assert!(
        th.submit_tool_result(&format!("{}-pick", first.run_id), json!("x"))
            .await
            .is_err()
    );
    assert_eq!(s.rt.inspect("t1").await.unwrap(), None);
    // A send opens the next incarnation, whose run is driven as usual.
    let again = th.send("again").await.unwrap();
    let state = th.wait_until_idle().await.unwrap();
    assert_eq!(stored_texts(&state.messages), ["again", "re: again"]);
    assert_eq!(state.runs.len(), 1);
    assert_eq!(
        (state.runs[0].id.as_str(), state.runs[0].status),
        (again.run_id.as_str(), RunStatus::Completed)
    );
}

/// SPEC H5, K2: deleting a thread whose run is running stops the run (its
/// end is cancelled, reason `deleted`), and nothing it writes later lands
/// in the thread's next incarnation.
#[tokio::test(start_paused = true)]
async fn h5_delete_stops_a_running_run() {
    let s = setup(vec![]);
    let admin = s.rt.admin();
    let th = s.rt.client("alice").thread("t1");
    let sent = th.send("slow").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(th.state().await.unwrap().runs[0].status, RunStatus::Running);
    let gone = admin.thread("t1").delete().await.unwrap().unwrap();
    assert_eq!(gone.cancelled, [(sent.run_id.clone(), RunStatus::Running)]);
    let new = admin.thread("t1").create("alice").await.unwrap();
    tokio::time::sleep(Duration::from_secs(120)).await;
    let fresh = admin.thread("t1").read().await.unwrap();
    assert_eq!(fresh.incarnation, new);
    assert!(fresh.messages.is_empty(), "{:?}", fresh.messages);
    assert!(fresh.runs.is_empty());
    assert_eq!(s.seen.lock().unwrap().len(), 1, "no step after the delete");
    assert_eq!(
        s.log.ends(&sent.run_id),
        [(RunStatus::Cancelled, Some("deleted".to_string()))],
        "the running run ends once, cancelled by the delete"
    );
    // The new incarnation's runs are driven as usual.
    let again = th.send("again").await.unwrap();
    let state = th.wait_until_idle().await.unwrap();
    assert_eq!(stored_texts(&state.messages), ["again", "re: again"]);
    assert_eq!(
        (state.runs[0].id.as_str(), state.runs[0].status),
        (again.run_id.as_str(), RunStatus::Completed)
    );
}

/// SPEC H5, K1: a send right after deleting a thread whose run was running
/// (its driver not yet stopped) opens the next incarnation, whose run is
/// driven to its end; nothing of the old run lands in it.
#[tokio::test(start_paused = true)]
async fn h5_a_send_right_after_deleting_a_running_run_is_driven() {
    let s = setup(vec![]);
    let th = s.rt.client("alice").thread("t1");
    let old = th.send("slow").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    s.rt.admin().thread("t1").delete().await.unwrap().unwrap();
    let again = th.send("again").await.unwrap();
    let state = tokio::time::timeout(Duration::from_secs(600), th.wait_until_idle())
        .await
        .expect("the new incarnation's run is driven")
        .unwrap();
    assert_eq!(stored_texts(&state.messages), ["again", "re: again"]);
    let runs: Vec<(&str, RunStatus)> = state
        .runs
        .iter()
        .map(|r| (r.id.as_str(), r.status))
        .collect();
    assert_eq!(runs, [(again.run_id.as_str(), RunStatus::Completed)]);
    assert_eq!(
        s.log.ends(&old.run_id),
        [(RunStatus::Cancelled, Some("deleted".to_string()))]
    );
}

// ---------------------------------------------------------------------------
// K4
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// R1, R2, R3, L11
// ---------------------------------------------------------------------------

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
    let removed: Vec<String> = before.messages[1..].iter().map(|m| m.id.clone()).collect();
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
    let th = s.rt.client("alice").thread("t1");
    th.wait_until_idle().await.unwrap();
    let after = t.read().await.unwrap();
    assert_eq!(stored_texts(&after.messages), ["one", "re: one"]);
    assert_eq!(
        after.messages[0], before.messages[0],
        "the message kept as is"
    );
    assert!(after.messages[1].id != before.messages[1].id, "a new reply");
    assert_eq!(
        after.messages[1].pai.run_id.as_deref(),
        Some(regen.run.as_str())
    );
    let run = after.runs.iter().find(|r| r.id == regen.run).unwrap();
    assert_eq!(
        (run.status, run.trigger.as_str()),
        (RunStatus::Completed, one.message_id.as_str())
    );
    let request = s.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(request.run_id, regen.run);
    assert_eq!(
        request.messages,
        [ModelMessage::user("one")],
        "no removed message reaches the model"
    );
    let rewritten: Vec<_> = s
        .log
        .kinds()
        .into_iter()
        .filter_map(|(_, k)| match k {
            EventKind::HistoryRewritten {
                kind: "regenerate",
                removed,
                started,
                ..
            } => Some((removed, started)),
            _ => None,
        })
        .collect();
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

/// SPEC R2: `prepare_history_rewrite` sees the rewrite (its kind, the thread
/// before it) and its patches commit in the rewrite's own version, for a
/// visibility rewrite and a regeneration alike. A hook that fails refuses
/// the rewrite: neither the rewrite nor any patch lands.
#[tokio::test(start_paused = true)]
async fn r2_prepare_history_rewrite_patches_commit_in_the_same_version() {
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
    let prepared = r.prepared.clone();
    let s = setup(vec![Box::new(r)]);
    let (one, two) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");

    // A visibility rewrite.
    let v0 = t.read().await.unwrap().version;
    let done = t
        .set_visibility(
            vec![(two.message_id.clone(), Visibility::CONTEXT_ONLY)],
            Expect::Nothing,
        )
        .await
        .unwrap();
    assert_eq!(done.version, v0 + 1, "rewrite and patches: one version");
    let after = t.read().await.unwrap();
    assert_eq!(after.version, v0 + 1);
    assert_eq!(after.metadata.get("seen_version"), Some(&json!(v0)));
    assert_eq!(
        after.private_metadata.get("last_kind"),
        Some(&json!("visibility"))
    );
    let msg = after
        .messages
        .iter()
        .find(|m| m.id == two.message_id)
        .unwrap();
    assert_eq!(msg.visibility, Visibility::CONTEXT_ONLY);
    let change = VisibilityChange {
        message: two.message_id.clone(),
        before: Visibility::ALL,
        after: Visibility::CONTEXT_ONLY,
    };
    assert_eq!(
        prepared.lock().unwrap().clone(),
        [(
            RewriteKind::Visibility {
                changes: vec![change]
            },
            v0
        )]
    );

    // A failing hook refuses the rewrite: nothing lands.
    *fail.lock().unwrap() = true;
    let err = t
        .set_visibility(
            vec![(two.message_id.clone(), Visibility::ALL)],
            Expect::Nothing,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, MutateError::Hook(m) if m.contains("not now")),
        "{err:?}"
    );
    assert!(t.regenerate(&one.message_id).await.is_err());
    assert_eq!(t.read().await.unwrap(), after);
    *fail.lock().unwrap() = false;

    // A regeneration.
    let v1 = after.version;
    let removed: Vec<String> = after.messages[1..].iter().map(|m| m.id.clone()).collect();
    let regen = t.regenerate(&one.message_id).await.unwrap();
    s.rt.client("alice")
        .thread("t1")
        .wait_until_idle()
        .await
        .unwrap();
    let rewritten: Vec<(u64, Vec<String>)> = s
        .log
        .kinds()
        .into_iter()
        .filter_map(|(_, k)| match k {
            EventKind::HistoryRewritten {
                kind: "regenerate",
                version,
                patched,
                ..
            } => Some((version, patched)),
            _ => None,
        })
        .collect();
    let keys = vec!["seen_version".to_string(), "private.last_kind".to_string()];
    assert_eq!(
        rewritten,
        [(v1 + 1, keys)],
        "the regeneration is version v1 + 1"
    );
    let end = t.read().await.unwrap();
    assert_eq!(
        end.metadata.get("seen_version"),
        Some(&json!(v1)),
        "written by that version"
    );
    assert_eq!(
        end.private_metadata.get("last_kind"),
        Some(&json!("regenerate"))
    );
    assert_eq!(
        prepared.lock().unwrap().last().cloned(),
        Some((
            RewriteKind::Regenerate {
                from: one.message_id.clone(),
                removed
            },
            v1
        ))
    );
    assert!(
        end.runs
            .iter()
            .any(|r| r.id == regen.run && r.status == RunStatus::Completed)
    );
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
    let s = setup_on(store, vec![Box::new(r)]);
    let (one, two) = two_runs(&s).await;
    let t = s.rt.admin().thread("t1");
    let hide = |id: &str, v: Visibility| vec![(id.to_string(), v)];
    let a = t
        .set_visibility(hide(&one.message_id, HIDDEN), Expect::Nothing)
        .await
        .unwrap();
    // Let the first delivery start its slow call.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        delivered.lock().unwrap().is_empty(),
        "the first call is still running"
    );
    let b = t
        .set_visibility(hide(&two.message_id, HIDDEN), Expect::Nothing)
        .await
        .unwrap();
    let c = t
        .set_visibility(hide(&one.message_id, Visibility::ALL), Expect::Nothing)
        .await
        .unwrap();
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
    assert_eq!(
        max_in_flight.load(Ordering::SeqCst),
        1,
        "serialized per thread"
    );
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
    let batches: Vec<Vec<u64>> = s
        .log
        .kinds()
        .into_iter()
        .filter_map(|(_, k)| match k {
            EventKind::RewriteDelivered {
                versions,
                error: None,
            } => Some(versions),
            _ => None,
        })
        .collect();
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
        let s = setup_full(Arc::new(MemoryStore::default()), vec![Box::new(r)], bound);
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
    let errors: Vec<(Vec<u64>, Option<String>)> = s
        .log
        .kinds()
        .into_iter()
        .filter_map(|(_, k)| match k {
            EventKind::RewriteDelivered { versions, error } => Some((versions, error)),
            _ => None,
        })
        .collect();
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

/// SPEC L11: the `prepare_history_rewrite` patches of composed hooks merge
/// in composition order (a later hook's set or remove of a key wins), and
/// commit with the rewrite; `history_rewritten` hooks are called in order.
#[tokio::test(start_paused = true)]
async fn l11_prepare_patches_merge_in_order() {
    /// The rewrite's result for hooks composed in `order`.
    async fn merged(order: [usize; 3]) -> (Map<String, Value>, Map<String, Value>, Vec<String>) {
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

// ---------------------------------------------------------------------------
// C1, C2
// ---------------------------------------------------------------------------

/// The summary model: answers `S1`, `S2`, ... and records its requests;
/// `on_call` runs before it answers.
struct Summarizer {
    seen: Seen,
    on_call: Box<dyn Fn() + Send + Sync>,
}

impl LanguageModel for Summarizer {
    fn stream<'a>(&'a self, r: &'a ModelRequest) -> HookFuture<'a, Result<BoxStream, ModelError>> {
        (self.on_call)();
        let n = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(r.clone());
            seen.len()
        };
        let parts = vec![
            StreamPart::TextDelta(format!("S{n}").into()),
            StreamPart::Finish(FinishReason::Stop),
        ];
        HookFuture::ready(Ok(Box::new(ReadyStream::new(parts)) as BoxStream))
    }
}

/// A runtime with compaction (threshold 3, keep 1) over `store`.
fn compacting(
    store: Arc<MemoryStore>,
    on_call: impl Fn() + Send + Sync + 'static,
) -> (Setup, Seen) {
    let summaries = Seen::default();
    let model = Summarizer {
        seen: summaries.clone(),
        on_call: Box::new(on_call),
    };
    let compaction = Compaction::new(3, 1, Arc::new(model));
    (setup_on(store, vec![Box::new(compaction)]), summaries)
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

/// The main model's step-0 request of `run`.
fn request_of(seen: &Seen, run: &str) -> ModelRequest {
    seen.lock()
        .unwrap()
        .iter()
        .find(|r| r.run_id == run && r.step == 0)
        .cloned()
        .unwrap()
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
    assert!(
        summaries.lock().unwrap().is_empty(),
        "3 messages: not past the threshold"
    );
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(CompactionCursor::of(&stored), None);

    let third = converse(&s, &["three"]).await.remove(0);
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    // The summary model was asked about the first four messages.
    let asked = summaries.lock().unwrap().clone();
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
    let summaries_stored: Vec<&Message> = stored
        .messages
        .iter()
        .filter(|m| m.pai.producer == Producer::Compaction)
        .collect();
    assert_eq!(summaries_stored.len(), 1);
    let summary = summaries_stored[0];
    assert_eq!(summary.text(), "S1");
    assert_eq!(
        summary.visibility,
        Visibility {
            transcript: true,
            context: false
        }
    );
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
    // Summary and cursor: one mutation of the run; progress events.
    let of_run: Vec<EventKind> = s
        .log
        .kinds()
        .into_iter()
        .filter(|(r, _)| *r == third.run_id)
        .map(|(_, k)| k)
        .collect();
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
    // The client sees the summary in its transcript, never the cursor.
    let state = s.rt.client("alice").thread("t1").state().await.unwrap();
    assert!(state.messages.iter().any(|m| m.id == summary.id));
    assert!(!format!("{state:?}").contains(COMPACTION_KEY));
    // A later compaction builds on the previous summary.
    converse(&s, &["four", "five"]).await;
    let asked = summaries.lock().unwrap().clone();
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
    assert_eq!(summaries.lock().unwrap().len(), 1, "a summary was written");
    let stored = s.rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(CompactionCursor::of(&stored), None, "no cursor");
    assert!(
        stored
            .messages
            .iter()
            .all(|m| m.pai.producer != Producer::Compaction)
    );
    assert_eq!(stored.private_metadata.get("other"), Some(&json!(1)));
    let skipped = s.log.kinds().into_iter().any(|(r, k)| {
        r == sent[2].run_id && matches!(k, EventKind::CompactionSkipped { reason, .. } if reason.contains("conflict"))
    });
    assert!(skipped, "compaction says it skipped on a conflict");
    let request = request_of(&s.seen, &sent[2].run_id);
    assert_eq!(
        shape(&request.messages),
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
    let of = |i: usize| shape(&request_of(&s.seen, &sent[i].run_id).messages);
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
    let six = shape(&request_of(&s.seen, &six.run_id).messages);
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
    assert_eq!(summaries.lock().unwrap().len(), 1, "run three compacted");
    let three = shape(&request_of(&s.seen, &sent[2].run_id).messages);
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
        .log
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
        shape(&request_of(&s.seen, &regen.run).messages),
        [
            (Role::User, "one".to_string()),
            (Role::Assistant, "re: one".to_string()),
            (Role::User, "two".to_string())
        ],
        "no summary of removed history"
    );
}
