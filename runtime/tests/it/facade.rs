//! The thread facade end to end, through the public API (SPEC H2–H5, K4,
//! R1–R3, L11, C1, C2): trusted admin mutations with expectations, hook
//! mutations inside a run, history rewrites with their hooks, deletion and
//! incarnations, and the compaction helper as the main model sees it.
//! Each test is named after the rule it checks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pai_runtime::store::{AdminOp, AdminReply, FacadeOp, FacadeReply};
use pai_runtime::{
    Agent, HookError, HookFuture, HookResult, Lifecycle, MemoryStore, Message, Part, Role,
    StoreError, ToolError, client_tool, compose,
    event::{EventKind, LiveEvent},
    facade::MutateError,
    hook,
    hook::{
        COMPACTION_KEY, Compaction, CompactionCursor, Phase, Phases, RewriteFact, RewriteInput,
        RewriteKind, RewritePatch, RunDecision,
    },
    message::{ModelMessage, Producer, Visibility},
    store::{
        Expect, Refusal, RunStatus, StoreReply, StoreRequest, VisibilityChange, Write, Writer,
    },
    typed_tool,
};
use serde_json::{Map, Value, json};

use crate::common::{self, ScriptedModel, Setup, SetupBuilder, Turn, last_user_text, texts};

mod compaction;
mod deletion;
mod rewrites;

// ---------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------

/// The main model: the newest user text decides. `wait` calls the client
/// tool `pick` at step 0; `slow` calls the backend tool `slow` (a minute
/// long) at step 0; anything else is answered `re: <text>`.
fn main_model() -> Arc<ScriptedModel> {
    ScriptedModel::by(|r, _| {
        let call = |tool: &str| Turn::call(&format!("{}-{tool}", r.run_id), tool, json!({}));
        match (last_user_text(r).as_str(), r.step) {
            ("wait", 0) => call("pick"),
            ("slow", 0) => call("slow"),
            (t, _) => Turn::text(format!("re: {t}")),
        }
    })
}

/// A runtime for agent `a` (tools `pick` and `slow`) with `hooks`, the
/// main model "m" and a store of the test's own.
fn setup(hooks: Vec<Box<dyn Lifecycle<()>>>) -> Setup {
    facade_setup(hooks).build()
}

/// [`setup`], before it is built.
fn facade_setup(hooks: Vec<Box<dyn Lifecycle<()>>>) -> SetupBuilder {
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
    common::setup(agent).model(main_model())
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

/// One kind of change to `t1` (admin thread `t`, alice's `th`): metadata,
/// private metadata, a message, or a whole run.
async fn change_thread(s: &Setup, change: &str) {
    let (t, th) = (s.rt.admin().thread("t1"), s.thread("t1"));
    match change {
        "metadata" => {
            t.set_metadata("m", json!(change)).await.unwrap();
        }
        "private" => {
            t.mutate(Expect::Nothing, |st| {
                st.set_private("q", json!(change));
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
}

/// SPEC H3: `expect = version(v)` conflicts once anything changed since v
/// (metadata, private metadata, messages, a whole run), and commits when
/// nothing did. A conflict changes nothing.
#[tokio::test(start_paused = true)]
async fn h3_version_expectation_conflicts_on_any_change() {
    let s = setup(vec![]);
    let admin = s.rt.admin();
    let t = admin.thread("t1");
    t.create("alice").await.unwrap();
    for change in ["metadata", "private", "message", "run"] {
        let v = t.read().await.unwrap().version;
        change_thread(&s, change).await;
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
