//! Deleting a thread through the facade (SPEC H5, K1, K2): incarnations,
//! bound handles, and what happens to the deleted incarnation's runs.

use super::*;

/// SPEC H5: deleting and creating the same id starts a new incarnation,
/// empty; a handle bound to the old one can neither read nor write it.
/// (That the store refuses the old incarnation's runs and history reads is
/// store-check's `retired` test, on every store.)
#[tokio::test(start_paused = true)]
async fn h5_delete_then_create_is_a_new_incarnation_and_bound_handles_are_refused() {
    let s = setup(vec![]);
    let admin = s.rt.admin();
    let th = s.rt.client("alice").thread("t1");
    th.send("hi").await.unwrap();
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
    assert_eq!(s.events.ends(&first.run_id), std::slice::from_ref(&deleted));
    assert_eq!(s.events.ends(&second.run_id), [deleted]);
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
    assert_eq!(s.model.calls(), 1, "only the first step ever ran");
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
    assert_eq!(s.model.calls(), 1, "no step after the delete");
    assert_eq!(
        s.events.ends(&sent.run_id),
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
        s.events.ends(&old.run_id),
        [(RunStatus::Cancelled, Some("deleted".to_string()))]
    );
}
