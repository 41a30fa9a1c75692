//! Waiting and resume (SPEC T6, T7, T9, A3, K5, K6, L1, L13) with the
//! runtime used directly: approval and client tools, answers, cancels of
//! waiting runs, typed run metadata and hidden lifecycle context messages.

use std::sync::{Arc, Mutex};

use pai_runtime::{
    Agent, BuildError, ClientError, HookFuture, LanguageModel, Part, Role, Runtime, StreamPart,
    ToolError, client_tool, compose, hook,
    hook::{AfterStepDecision, RunDecision, ToolResultDecision},
    message::{ResultSource, ToolStatus},
    model::{FinishReason, ModelMap},
    store::RunStatus,
    tool::TypedTool,
    typed_tool,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::common;
use common::{CountingIds, ScriptedModel, StillClock, Turn};

/// Step 0 calls `add` (backend), `send` (approval) and `pick` (client);
/// later steps answer with how many system messages they were sent.
fn model() -> Arc<ScriptedModel> {
    ScriptedModel::by(|r, _| match r.step {
        0 => Turn::calls([
            ("c1", "add", json!({"a": 2, "b": 3})),
            ("c2", "send", json!({"to": "bob"})),
            ("c3", "pick", json!({"options": ["x", "y"]})),
        ]),
        _ => {
            let system = r.messages.iter().filter(|m| m.role == Role::System);
            Turn::text(format!("done; system: {}", system.count()))
        }
    })
}

#[derive(Deserialize)]
struct AddIn {
    a: i64,
    b: i64,
}
#[derive(Serialize, Deserialize)]
struct AddOut {
    sum: i64,
}
#[derive(Deserialize)]
struct SendIn {
    to: String,
}
#[derive(Serialize, Deserialize)]
struct SendOut {
    sent_to: String,
    key: String,
}
#[derive(Deserialize)]
struct PickIn {
    #[allow(dead_code)]
    options: Vec<String>,
}
#[derive(Deserialize)]
struct PickOut {
    #[allow(dead_code)]
    choice: String,
}

/// The run metadata of the test agent.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
struct Notes {
    sums: Vec<i64>,
    episodes_seen: Vec<bool>,
    sent: u32,
}

/// Every result `after_tool_result` saw: (call, source).
type Seen = Arc<Mutex<Vec<(String, ResultSource)>>>;

fn tools() -> (TypedTool<AddIn, AddOut>, TypedTool<SendIn, SendOut>) {
    let add = typed_tool("add", "adds", false, |_cx, i: AddIn| async move {
        Ok::<_, ToolError>(AddOut { sum: i.a + i.b })
    });
    let send = typed_tool("send", "sends mail", true, |cx, i: SendIn| async move {
        Ok::<_, ToolError>(SendOut {
            sent_to: i.to,
            key: cx.idempotency_key,
        })
    });
    (add, send)
}

/// A runtime for `agent` whose model "m" is `model`, on still time.
fn build(agent: Agent<()>, model: Arc<dyn LanguageModel>) -> Runtime<()> {
    Runtime::builder(agent, ())
        .models(ModelMap::new().with("m", model))
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build()
        .unwrap()
}

fn runtime(seen: Seen, complete: bool) -> Runtime<()> {
    let (add, send) = tools();
    let pick = client_tool::<PickIn, PickOut>("pick", "the user picks");
    let watch = hook::after_tool_result("watch", move |_, i| {
        seen.lock()
            .unwrap()
            .push((i.result.call_id.to_string(), i.result.source));
        HookFuture::ready(Ok(ToolResultDecision::Continue))
    });
    // Records each episode in the metadata and stores one hidden message.
    let remember = hook::prepare_run("remember", |cx, i| {
        HookFuture::new(async move {
            cx.update_run_metadata(|n: &mut Notes| n.episodes_seen.push(i.resumed))
                .await?;
            if !i.resumed {
                cx.store_context_message("the user prefers short answers")
                    .await?;
            }
            Ok(RunDecision::default())
        })
    });
    let finish = hook::after_step("finish", move |_, _| {
        HookFuture::ready(Ok(match complete {
            true => AfterStepDecision::Complete,
            false => AfterStepDecision::Natural,
        }))
    });
    let agent = Agent::new("mail", "m")
        .run_metadata::<Notes>()
        .typed_tool(&add)
        .typed_tool(&send)
        .typed_tool(&pick)
        .on_output(&add, |n: &mut Notes, _i: &AddIn, o: &AddOut| {
            n.sums.push(o.sum);
            Ok(())
        })
        .on_output(&send, |n: &mut Notes, _i: &SendIn, _o: &SendOut| {
            n.sent += 1;
            Ok(())
        })
        .lifecycle(compose(vec![
            Box::new(watch),
            Box::new(remember),
            Box::new(finish),
        ]));
    build(agent, model())
}

fn results(messages: &[pai_runtime::Message]) -> Vec<(String, ResultSource, Value)> {
    messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult {
                call_id,
                source,
                output,
                ..
            } => Some((call_id.to_string(), *source, output.clone())),
            _ => None,
        })
        .collect()
}

/// SPEC T7, T9: a step with a backend, an approval and a client call
/// commits the backend result and waits (a watcher hears on what, the run
/// holds no lease, a later send queues); wrong answers change nothing, an
/// answer is taken once, and the run waits until the last one.
#[tokio::test]
async fn t7_t9_approval_and_client_calls_wait_and_answers_are_checked() {
    let rt = runtime(Seen::default(), false);
    let client = rt.client("alice");
    let thread = client.thread("t1");
    let mut watch = thread.watch(vec![]).await.unwrap();
    thread.send("mail bob").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let mut told = Vec::new();
    while let Some(e) = watch.try_next() {
        if let pai_runtime::event::LiveEvent::RunWaiting { calls, .. } = e {
            told.extend(calls.into_iter().map(|c| (c.call_id.into_string(), c.kind)));
        }
    }
    let kinds = [
        ("c2".to_string(), pai_runtime::tool::ToolKind::Approval),
        ("c3".to_string(), pai_runtime::tool::ToolKind::Client),
    ];
    assert_eq!(told, kinds, "a watcher hears what the run waits on");
    let run = &state.runs[0];
    assert_eq!(run.status, RunStatus::Waiting);
    assert_eq!(
        rt.inspect("t1").await.unwrap().unwrap().lease_holder,
        None,
        "a waiting run holds no lease"
    );
    let waiting: Vec<&str> = run.waiting.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(waiting, ["c2", "c3"]);
    assert_eq!(
        results(&state.messages).len(),
        1,
        "the backend result is committed"
    );
    // T9: a later send queues behind the waiting run.
    thread.send("and then?").await.unwrap();
    assert_eq!(
        thread.state().await.unwrap().runs[1].status,
        RunStatus::Queued
    );
    // Wrong answers change nothing.
    let before = rt.inspect("t1").await.unwrap().unwrap();
    assert!(matches!(
        thread.approve("c1").await,
        Err(ClientError::NotWaiting { .. })
    ));
    assert!(matches!(
        thread.approve("c3").await,
        Err(ClientError::WrongAnswer { .. })
    ));
    let bad = thread.submit_tool_result("c3", json!({"choice": 7})).await;
    assert!(
        matches!(bad, Err(ClientError::InvalidOutput { .. })),
        "{bad:?}"
    );
    assert_eq!(rt.inspect("t1").await.unwrap().unwrap(), before);
    thread.approve("c2").await.unwrap();
    assert!(matches!(
        thread.deny("c2", "no").await,
        Err(ClientError::AlreadyAnswered { .. })
    ));
    assert_eq!(
        thread.state().await.unwrap().runs[0].status,
        RunStatus::Waiting
    );
}

/// SPEC T9, K5, T6, L1, L13: the last answer resumes the run in a new
/// episode where the approved call runs once with its idempotency key,
/// every result passes after_tool_result, metadata and the hidden message
/// survive the wait, and the queued run runs after it.
#[tokio::test]
async fn t9_the_last_answer_resumes_the_run() {
    let seen = Seen::default();
    let rt = runtime(seen.clone(), false);
    let thread = rt.client("alice").thread("t1");
    let first = thread.send("mail bob").await.unwrap();
    thread.wait_until_idle().await.unwrap();
    let second = thread.send("and then?").await.unwrap();
    thread.approve("c2").await.unwrap();
    let answer = json!({"choice": "x"});
    thread.submit_tool_result("c3", answer).await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();

    let stored = rt.inspect("t1").await.unwrap().unwrap();
    let run = &stored.runs[0];
    assert_eq!(
        (run.status, run.episodes, run.steps),
        (RunStatus::Completed, 2, 2)
    );
    assert!(run.waiting.is_empty());
    let mut all = results(&stored.messages);
    all.truncate(3);
    let sources: Vec<(&str, ResultSource)> = all.iter().map(|(c, s, _)| (c.as_str(), *s)).collect();
    assert_eq!(
        sources,
        [
            ("c1", ResultSource::Tool),
            ("c2", ResultSource::Tool),
            ("c3", ResultSource::Client)
        ]
    );
    let key = format!("{}/c2", first.run_id);
    assert_eq!(
        all[1].2,
        json!({"sent_to": "bob", "key": key}),
        "K5: run id + call id"
    );
    let mut saw = seen.lock().unwrap().clone();
    saw.truncate(3);
    assert_eq!(saw.len(), 3, "T4: after_tool_result saw every result");
    let notes: Notes = serde_json::from_value(run.metadata.clone().unwrap()).unwrap();
    assert_eq!(
        notes,
        Notes {
            sums: vec![5],
            episodes_seen: vec![false, true],
            sent: 1
        },
        "T6 and typed metadata survive the wait"
    );
    // L13: the hidden message reached the model after the resume, never the client.
    let reply = state
        .messages
        .iter()
        .rfind(|m| m.role == Role::Assistant && m.pai.run_id == Some(first.run_id.clone()))
        .unwrap();
    assert_eq!(reply.text(), "done; system: 1");
    assert!(state.messages.iter().all(|m| m.role != Role::System));
    assert!(
        stored
            .messages
            .iter()
            .any(|m| m.role == Role::System && !m.visibility.transcript)
    );
    // The queued run ran after the resumed one.
    let later = stored.runs.iter().find(|r| r.id == second.run_id).unwrap();
    assert_eq!(later.status, RunStatus::Waiting);
}

/// SPEC K6, T8: cancelling a waiting run gives each waiting call a
/// cancelled result that after_tool_result sees, and ends it cancelled.
#[tokio::test]
async fn k6_cancelling_a_waiting_run_cancels_its_calls() {
    let seen = Seen::default();
    let rt = runtime(seen.clone(), false);
    let client = rt.client("alice");
    let thread = client.thread("t1");
    let sent = thread.send("mail bob").await.unwrap();
    thread.wait_until_idle().await.unwrap();
    thread.approve("c2").await.unwrap();
    assert_eq!(thread.cancel().await.unwrap(), sent.run_id);
    thread.wait_until_idle().await.unwrap();
    let stored = rt.inspect("t1").await.unwrap().unwrap();
    assert_eq!(stored.runs[0].status, RunStatus::Cancelled);
    let sources: Vec<ResultSource> = results(&stored.messages).into_iter().map(|r| r.1).collect();
    assert_eq!(
        sources,
        [
            ResultSource::Tool,
            ResultSource::Cancelled,
            ResultSource::Cancelled
        ]
    );
    let saw: Vec<ResultSource> = seen.lock().unwrap().iter().map(|s| s.1).collect();
    assert_eq!(saw, sources, "T4 saw the cancelled results");
    assert!(matches!(
        thread.approve("c3").await,
        Err(ClientError::NotWaiting { .. })
    ));
}

/// SPEC A3: `complete` with waiting calls cancels them and completes.
#[tokio::test]
async fn a3_complete_with_waiting_calls_cancels_them() {
    let seen = Seen::default();
    let rt = runtime(seen, true);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    assert_eq!(state.runs[0].status, RunStatus::Completed);
    let r = results(&state.messages);
    assert_eq!(r.len(), 3);
    assert!(r[1..].iter().all(|(_, s, _)| *s == ResultSource::Cancelled));
    let statuses: Vec<ToolStatus> = state
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::ToolResult { status, .. } => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [ToolStatus::Output, ToolStatus::Error, ToolStatus::Error]
    );
}

/// SPEC T7: a denied call never runs; the model sees the reason.
#[tokio::test]
async fn t7_a_denied_call_never_runs() {
    let rt = runtime(Seen::default(), false);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    thread.wait_until_idle().await.unwrap();
    thread.deny("c2", "not to bob").await.unwrap();
    thread
        .submit_tool_result("c3", json!({"choice": "y"}))
        .await
        .unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let r = results(&state.messages);
    assert_eq!(
        (r[1].1, &r[1].2),
        (ResultSource::Denied, &json!("not to bob"))
    );
    assert_eq!(state.runs[0].status, RunStatus::Completed);
    let notes: Notes = serde_json::from_value(state.runs[0].metadata.clone().unwrap()).unwrap();
    assert_eq!(notes.sent, 0, "on_output runs for successful outputs only");
}

/// An `on_output` handler must update the agent's own metadata type.
#[test]
fn t6_on_output_with_another_metadata_type_is_refused_at_build() {
    let (add, _) = tools();
    let agent = Agent::<()>::new("a", "m")
        .run_metadata::<Notes>()
        .typed_tool(&add)
        .on_output(&add, |n: &mut u32, _: &AddIn, _: &AddOut| {
            *n += 1;
            Ok(())
        });
    let built = Runtime::builder(agent, ())
        .models(ModelMap::new())
        .clock(Arc::new(StillClock))
        .ids(Arc::new(CountingIds::default()))
        .build();
    let Err(e @ BuildError::MetadataType { .. }) = built else {
        panic!("built with a mistyped on_output");
    };
    let said = e.to_string();
    assert!(
        said.contains("waiting::Notes") && said.contains("u32"),
        "{said}"
    );
}

/// A runtime whose hooks are `hooks`, with the test's tools and model.
fn runtime_with(hooks: Vec<Box<dyn pai_runtime::Lifecycle<()>>>, panics: bool) -> Runtime<()> {
    let (add, send) = tools();
    let pick = client_tool::<PickIn, PickOut>("pick", "the user picks");
    let agent = Agent::new("mail", "m")
        .run_metadata::<Notes>()
        .typed_tool(&add)
        .typed_tool(&send)
        .typed_tool(&pick)
        .on_output(&add, move |_n: &mut Notes, _i: &AddIn, o: &AddOut| {
            assert!(!panics || o.sum != 5, "on_output saw 5");
            Ok(())
        })
        .lifecycle(compose(hooks));
    build(agent, model())
}

/// SPEC X2, T6: a panic in an on_output handler fails the run.
#[tokio::test]
async fn x2_a_panicking_on_output_fails_the_run() {
    let rt = runtime_with(vec![], true);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let run = &state.runs[0];
    assert_eq!(run.status, RunStatus::Failed);
    assert!(
        run.reason
            .as_deref()
            .unwrap_or("")
            .contains("on_output panicked")
    );
}

/// SPEC L1, L12, T4: a prepare_run that responds on the resume still gives
/// every waiting call a result before the response ends the run: the
/// approved call never runs (cancelled), the client's output stays.
#[tokio::test]
async fn l12_a_response_on_resume_still_ends_every_waiting_call() {
    let guard = hook::prepare_run("guard", |_, i| {
        HookFuture::ready(Ok(match i.resumed {
            true => RunDecision::Respond(pai_runtime::hook::Response {
                outcome: pai_runtime::message::Outcome::Blocked,
                reason: Some("policy changed".into()),
                parts: vec![Part::text("Stopped.")],
            }),
            false => RunDecision::default(),
        }))
    });
    let rt = runtime_with(vec![Box::new(guard)], false);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    thread.wait_until_idle().await.unwrap();
    thread.approve("c2").await.unwrap();
    thread
        .submit_tool_result("c3", json!({"choice": "x"}))
        .await
        .unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let run = &state.runs[0];
    assert_eq!(
        (run.status, run.outcome),
        (
            RunStatus::Completed,
            Some(pai_runtime::message::Outcome::Blocked)
        )
    );
    let sources: Vec<ResultSource> = results(&state.messages).into_iter().map(|r| r.1).collect();
    assert_eq!(
        sources,
        [
            ResultSource::Tool,
            ResultSource::Cancelled,
            ResultSource::Client
        ],
        "the approved call never ran; the client's output stays its result"
    );
    assert_eq!(
        state.messages.last().map(|m| m.text()).as_deref(),
        Some("Stopped.")
    );
}

/// A model whose step 0 calls a slow backend tool beside an approval call.
fn slow_model() -> Arc<ScriptedModel> {
    let calls = [
        ("c1", "slow", json!({})),
        ("c2", "send", json!({"to": "bob"})),
    ];
    ScriptedModel::by(move |r, _| match r.step {
        0 => Turn::calls(calls.clone()),
        _ => Turn::Parts(vec![StreamPart::Finish(FinishReason::Stop)]),
    })
}

/// SPEC T8, K5: a cancel while a backend tool runs beside a pending
/// approval call gives each call exactly one cancelled result.
#[tokio::test(start_paused = true)]
async fn t8_a_cancel_beside_a_pending_call_gives_each_call_one_result() {
    let (_, send) = tools();
    let slow = typed_tool(
        "slow",
        "takes a while",
        false,
        |_cx, _i: Value| async move {
            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
            Ok::<_, ToolError>(json!("late"))
        },
    );
    let agent = Agent::<()>::new("a", "m")
        .typed_tool(&slow)
        .typed_tool(&send);
    let rt = build(agent, slow_model());
    let thread = rt.client("alice").thread("t1");
    thread.send("go").await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    thread.cancel().await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    assert_eq!(state.runs[0].status, RunStatus::Cancelled);
    let ids: Vec<(String, ResultSource)> = results(&state.messages)
        .into_iter()
        .map(|(c, s, _)| (c, s))
        .collect();
    let expected = [
        ("c1".to_string(), ResultSource::Cancelled),
        ("c2".to_string(), ResultSource::Cancelled),
    ];
    assert_eq!(ids, expected);
}

/// An agent with `add` (its `on_output` keeps each sum), `send` and `pick`,
/// whose lifecycle is `hooks`.
fn counting(hooks: Vec<Box<dyn pai_runtime::Lifecycle<()>>>) -> Runtime<()> {
    let (add, send) = tools();
    let pick = client_tool::<PickIn, PickOut>("pick", "the user picks");
    let agent = Agent::new("mail", "m")
        .run_metadata::<Notes>()
        .typed_tool(&add)
        .typed_tool(&send)
        .typed_tool(&pick)
        .on_output(&add, |n: &mut Notes, _i: &AddIn, o: &AddOut| {
            n.sums.push(o.sum);
            Ok(())
        })
        .lifecycle(compose(hooks));
    build(agent, model())
}

/// SPEC K5: what `on_output` and `after_tool_result` write about a result
/// is read back within its batch (read your writes) and commits in the
/// result's own commit: one version for the results and the metadata.
#[tokio::test]
async fn k5_hook_writes_are_read_back_and_commit_with_their_result() {
    let saw: Arc<Mutex<Vec<Notes>>> = Arc::default();
    let seen = saw.clone();
    let count = hook::after_tool_result("count", move |cx, _| {
        let seen = seen.clone();
        HookFuture::new(async move {
            let notes: Notes = cx.run_metadata().await?;
            seen.lock().unwrap().push(notes);
            cx.update_run_metadata(|n: &mut Notes| n.sent += 10).await?;
            Ok(ToolResultDecision::Continue)
        })
    });
    let rt = counting(vec![Box::new(count)]);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let seen = saw.lock().unwrap().clone();
    let first = Notes {
        sums: vec![5],
        ..Notes::default()
    };
    assert_eq!(seen, [first], "the hook reads on_output's staged write");
    let notes: Notes = serde_json::from_value(state.runs[0].metadata.clone().unwrap()).unwrap();
    assert_eq!((notes.sums, notes.sent), (vec![5], 10));
    // user message, step, results (with the metadata), wait: no commit of
    // the metadata alone.
    let stored = rt.inspect("t1").await.unwrap().unwrap();
    let tool = stored.messages.iter().find(|m| m.role == Role::Tool);
    assert_eq!(tool.map(|m| m.seq), Some(3));
    assert_eq!(stored.version, 6, "no version for the metadata alone");
}

/// SPEC K5, L4: a batch of results a hook fails stores none of what its
/// hooks and handlers wrote about those results.
#[tokio::test]
async fn k5_a_failed_batch_stores_none_of_its_hook_writes() {
    let write = hook::after_tool_result("write", |cx, _| {
        HookFuture::new(async move {
            cx.update_run_metadata(|n: &mut Notes| n.sent = 7).await?;
            Ok(ToolResultDecision::Continue)
        })
    });
    let fail = hook::after_tool_result("fail", |_, _| {
        HookFuture::ready(Err(pai_runtime::HookError::new("refused")))
    });
    let rt = counting(vec![Box::new(write), Box::new(fail)]);
    let thread = rt.client("alice").thread("t1");
    thread.send("mail bob").await.unwrap();
    let state = thread.wait_until_idle().await.unwrap();
    let run = &state.runs[0];
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(
        run.metadata, None,
        "nothing the failed batch wrote is stored"
    );
    assert!(results(&state.messages).is_empty());
}
