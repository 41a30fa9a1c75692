//! Tests of the thread record: leases and fencing (K2), versions (H1),
//! the queue (K1), cancels (K6), waiting and answers (T7, T9).
use super::*;
use crate::message::{NewMessage, PaiMeta, Part, Producer, Visibility};
use crate::store::waiting::tests::call;
use crate::store::{Claimed, FencingToken};

fn message(text: &str) -> NewMessage {
    NewMessage {
        id: text.to_string().into(),
        role: Role::User,
        parts: vec![Part::text(text)],
        visibility: Visibility::ALL,
        pai: PaiMeta::new(Producer::User, None, None, 0),
    }
}

impl ThreadRec {
    /// The next run, claimed by one worker whose leases never expire.
    fn start_next(&mut self) -> Option<Claimed> {
        self.claim("t", "w", None, 0)
    }

    /// The token of a claim of the next run.
    fn acquire(&mut self) -> FencingToken {
        self.start_next().expect("a run to claim").token
    }
}

#[test]
fn k2_a_stale_token_changes_nothing() {
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    let old = rec.acquire();
    let (new, _, version) = rec.next_episode_t("r1", old, 0).unwrap();
    assert!(new > old);
    assert_eq!(version, 2, "a claim and a new episode are commits (H1)");
    assert_eq!(
        rec.append_t(Some(new), [message("x")]).map(|a| a.version),
        Ok(3)
    );
    let refused = rec.append_t(Some(old), [message("y")]);
    assert_eq!(
        refused,
        Err(StoreError::StaleLease {
            given: old,
            current: new
        })
    );
    assert_eq!((rec.version(), rec.messages().len()), (3, 1));
}

/// SPEC H1: run status changes and lease revisions are commits: a claim,
/// a renewal, a wait, an answer, a cancel and a run's end each bump the
/// version by one; a claim that takes nothing changes nothing.
#[test]
fn h1_run_status_and_lease_revisions_bump_the_version() {
    use crate::tool::ToolKind::Approval;
    let mut rec = ThreadRec::new("a", "o");
    assert_eq!(rec.start_next(), None);
    assert_eq!(rec.version(), 0);
    rec.admit("r1", "m1");
    let claimed = rec.claim("t", "w", Some(100), 0).expect("r1");
    assert_eq!((claimed.version, rec.version()), (1, 1));
    assert_eq!(rec.renew_t("r1", claimed.token, 10), Ok((false, 2)));
    assert_eq!(
        rec.wait_t("r1", claimed.token, vec![call("c1", Approval)]),
        Ok(Some(3))
    );
    let answered = rec.answer("c1", Answer::Approved).map(|a| a.version);
    assert_eq!(answered, Ok(4));
    let resumed = rec.claim("t", "w", Some(100), 20).expect("resumes");
    assert_eq!(resumed.version, 5);
    let cancel = rec.cancel(None).map(|c| c.version);
    assert_eq!(cancel, Ok(6));
    let end = RunEnd {
        status: RunStatus::Cancelled,
        outcome: Outcome::Cancelled,
        reason: None,
    };
    assert_eq!(rec.end_run("r1", &end), 7);
}

#[test]
fn h1_one_version_per_commit_and_rising_sequence_numbers() {
    let mut rec = ThreadRec::new("a", "o");
    let first = rec.append_t(None, [message("a"), message("b")]).unwrap();
    let second = rec.append_t(None, [message("c")]).unwrap();
    assert_eq!((first.version, first.first_seq), (1, 1));
    assert_eq!((second.version, second.first_seq), (2, 3));
    assert_eq!(rec.last_seq(), 3);
}

#[test]
fn k1_runs_start_in_arrival_order_and_finish_clears_the_lease() {
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    rec.admit("r2", "m2");
    assert_eq!(rec.start_next().map(|s| s.run).as_deref(), Some("r1"));
    assert_eq!(rec.queue.front().map(String::as_str), Some("r2"));
    let end = RunEnd {
        status: RunStatus::Completed,
        outcome: Outcome::Completed,
        reason: None,
    };
    rec.finish_run("r1", &end);
    assert_eq!(rec.current_run(), None);
    assert_eq!(rec.lease.holder, None);
    assert_eq!(rec.runs()[0].status, RunStatus::Completed);
    assert_eq!(rec.start_next().map(|s| s.run).as_deref(), Some("r2"));
}

fn user(id: &str, run: &str) -> NewMessage {
    let mut m = message(id);
    m.pai.run_id = Some(run.to_string().into());
    m
}

/// SPEC L1: a run's latest user message is its own (its trigger or a
/// steer stored for it), never the message of a run queued behind it;
/// and a queued run's messages, its trigger included, wait for it (K1).
#[test]
fn l1_latest_user_message_belongs_to_the_run() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("m1", "r1")]).unwrap();
    rec.admit("r1", "m1");
    rec.start_next();
    rec.append_t(None, [user("m2", "r2"), user("m3", "r3")])
        .unwrap();
    rec.admit("r2", "m2");
    rec.admit("r3", "m3");
    rec.append_t(None, [user("s1", "r1")]).unwrap();
    rec.steer("s1");
    assert_eq!(rec.latest_user_of("r1").map(|m| m.id.as_str()), Some("s1"));
    assert_eq!(rec.latest_user_of("r2").map(|m| m.id.as_str()), Some("m2"));
    assert!(rec.is_hidden(&rec.messages()[1]));
    assert!(!rec.is_hidden(&rec.messages()[3]), "r1's steer is r1's");
    // A steer left over when r1 ends starts r4: it is r4's until r4 starts.
    assert_eq!(rec.admit_leftover_steers("r4").as_deref(), Some("s1"));
    assert!(rec.is_hidden(&rec.messages()[3]));
    assert_eq!(rec.latest_user_of("r4").map(|m| m.id.as_str()), Some("s1"));
}

fn ids(messages: Vec<&Message>) -> Vec<&str> {
    messages.into_iter().map(|m| m.id.as_str()).collect()
}

fn end_completed(rec: &mut ThreadRec, run: &str) {
    let end = RunEnd {
        status: RunStatus::Completed,
        outcome: Outcome::Completed,
        reason: None,
    };
    rec.end_run(run, &end);
}

/// SPEC M1: a queued run's trigger enters the context after every message
/// committed before the run was claimed, so the model reads its own
/// question after the previous run's answer.
#[test]
fn m1_a_queued_trigger_enters_after_the_previous_answer() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("q1", "r1")]).unwrap();
    rec.admit("r1", "q1");
    let t1 = rec.acquire();
    rec.append_t(None, [user("q2", "r2")]).unwrap();
    rec.admit("r2", "q2");
    assert_eq!(ids(rec.visible_messages(None)), ["q1"]);
    rec.append_t(Some(t1), [message("a1")]).unwrap();
    end_completed(&mut rec, "r1");
    rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "a1", "q2"]);
    // A step anchored before the claim never sees it.
    assert_eq!(ids(rec.visible_messages(Some(2))), ["q1"]);
}

/// SPEC M1: a message whose queued run was cancelled never enters the
/// context of a run admitted before it; it enters that of the next run
/// admitted after it, before that run's own message.
#[test]
fn m1_a_cancelled_queued_message_waits_for_a_later_run() {
    use crate::tool::ToolKind::Approval;
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("q1", "r1")]).unwrap();
    rec.admit("r1", "q1");
    let t1 = rec.acquire();
    rec.wait_t("r1", t1, vec![call("c1", Approval)]).unwrap();
    rec.append_t(None, [user("q2", "r2")]).unwrap();
    rec.admit("r2", "q2");
    rec.cancel(Some("r2")).unwrap();
    rec.answer("c1", Answer::Approved).unwrap();
    let resumed = rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1"], "r1 never sees q2");
    rec.append_t(Some(resumed), [message("a1")]).unwrap();
    end_completed(&mut rec, "r1");
    rec.append_t(None, [user("q3", "r3")]).unwrap();
    rec.admit("r3", "q3");
    rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "a1", "q2", "q3"]);
}

/// SPEC M1: a trigger claimed while a later one still waits in the queue
/// enters before it, not after the newest stored (hidden) message; and two
/// late entries after the same message keep the order they entered in.
#[test]
fn m1_queued_triggers_enter_in_claim_order_though_stored_before_a_hidden_one() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("q1", "r1")]).unwrap();
    rec.admit("r1", "q1");
    rec.acquire();
    rec.append_t(None, [user("q2", "r2")]).unwrap();
    rec.admit("r2", "q2");
    rec.append_t(None, [user("q3", "r3")]).unwrap();
    rec.admit("r3", "q3");
    end_completed(&mut rec, "r1");
    rec.acquire();
    end_completed(&mut rec, "r2");
    rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "q2", "q3"]);
    // Entering after the same message (a1): the earlier entry first,
    // though its sequence number is the higher one.
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("q1", "r1")]).unwrap();
    rec.admit("r1", "q1");
    let t1 = rec.acquire();
    rec.append_t(None, [user("s1", "r1")]).unwrap();
    rec.steer("s1");
    rec.append_t(None, [user("q2", "r2")]).unwrap();
    rec.admit("r2", "q2");
    rec.append_t(Some(t1), [message("a1")]).unwrap();
    // r1 ends with s1 untaken: s1 starts a run of its own, after r2.
    end_completed(&mut rec, "r1");
    assert_eq!(rec.admit_leftover_steers("r3").as_deref(), Some("s1"));
    rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "a1", "q2"]);
    end_completed(&mut rec, "r2");
    rec.acquire();
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "a1", "q2", "s1"]);
}

/// SPEC M1, A4: a steer enters after the messages committed before the
/// step that takes it.
#[test]
fn m1_a_steer_enters_where_a_step_takes_it() {
    let mut rec = ThreadRec::new("a", "o");
    rec.append_t(None, [user("q1", "r1")]).unwrap();
    rec.admit("r1", "q1");
    let t1 = rec.acquire();
    rec.append_t(None, [user("s1", "r1")]).unwrap();
    rec.steer("s1");
    rec.append_t(Some(t1), [message("a1")]).unwrap();
    // A taker asks for steers stored before a step's last commit (K3).
    assert!(
        rec.has_steer(Some(3)),
        "s1 (seq 2) was stored before a1 (seq 3)"
    );
    assert!(!rec.has_steer(Some(2)), "none stored before s1");
    let epoch = rec.epoch();
    rec.take_steers();
    assert!(rec.epoch() > epoch, "cached contexts are read again");
    assert_eq!(ids(rec.visible_messages(None)), ["q1", "a1", "s1"]);
    assert!(!rec.has_steer(None));
}

/// SPEC K6: a cancel reaches the current run, else the oldest queued
/// one (which then never starts), else says there is none.
#[test]
fn k6_cancel_reaches_the_current_or_a_queued_run() {
    let mut rec = ThreadRec::new("a", "o");
    assert_eq!(rec.cancel(None), Err(CancelMiss::NoRun));
    rec.admit("r1", "m1");
    rec.admit("r2", "m2");
    let target = |rec: &mut ThreadRec, run| rec.cancel(run).map(|c| c.target);
    assert_eq!(
        target(&mut rec, None),
        Ok(CancelTarget::Queued("r1".into()))
    );
    assert_eq!(rec.runs()[0].status, RunStatus::Cancelled);
    assert_eq!(rec.start_next().map(|s| s.run).as_deref(), Some("r2"));
    assert_eq!(
        target(&mut rec, None),
        Ok(CancelTarget::Active("r2".into()))
    );
    assert_eq!(rec.cancel(Some("r1")), Err(CancelMiss::Ended("r1".into())));
    assert_eq!(
        rec.cancel(Some("r9")),
        Err(CancelMiss::Unknown("r9".into()))
    );
}

/// SPEC T7, T9, K6: a waiting run releases its lease and stays current,
/// so a queued run cannot start; it resumes when every call is answered
/// (or a cancel came); a cancel asked for first refuses the wait.
#[test]
fn t9_a_waiting_run_stays_current_and_resumes_when_answered() {
    use crate::tool::ToolKind::{Approval, Client};
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    rec.admit("r2", "m2");
    let token = rec.acquire();
    assert_eq!(
        rec.wait_t("r1", token, vec![call("c1", Approval), call("c2", Client)]),
        Ok(Some(2))
    );
    assert_eq!(
        (rec.lease.holder.clone(), rec.runs()[0].status),
        (None, RunStatus::Waiting)
    );
    assert_eq!(rec.start_next(), None, "r2 waits behind the waiting run");
    let first = rec.answer("c1", Answer::Approved);
    let first = first.map(|a| (a.run, a.ready, a.version));
    assert_eq!(
        first,
        Ok(("r1".into(), false, 3)),
        "an answer is one commit (H1)"
    );
    assert_eq!(rec.start_next(), None, "c2 still waits");
    let out = Answer::Submitted {
        output: Value::Null,
    };
    let last = rec.answer("c2", out).map(|a| (a.run, a.ready, a.version));
    assert_eq!(last, Ok(("r1".into(), true, 4)));
    let resumed = rec.start_next().expect("resumes");
    assert_eq!((resumed.run.as_str(), resumed.resumed), ("r1", true));
    assert_eq!(
        rec.answer("c2", Answer::Approved),
        Err(AnswerMiss::AlreadyAnswered),
        "answered calls stay until the resume commits their results"
    );
    rec.commit_resumed_t("r1", resumed.token, Vec::new())
        .unwrap();
    assert_eq!(
        rec.answer("c2", Answer::Approved),
        Err(AnswerMiss::NotWaiting)
    );
    // A cancel before the wait is recorded refuses it.
    let cancel = rec.cancel(None).map(|c| c.target);
    assert_eq!(cancel, Ok(CancelTarget::Active("r1".into())));
    let token = resumed.token;
    assert_eq!(
        rec.wait_t("r1", token, vec![call("c3", Approval)]),
        Ok(None)
    );
    assert_eq!(rec.runs()[0].status, RunStatus::Running);
}

/// SPEC T9: a client or approval call is answerable once its step's policy
/// let it through, while the run still works; the answer is kept when the
/// run then waits on the call, and does not make a running run resumable.
#[test]
fn t9_a_call_is_answerable_before_the_run_waits() {
    use crate::tool::ToolKind::{Approval, Client};
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    let token = rec.acquire();
    assert_eq!(
        rec.answer("c1", Answer::Approved),
        Err(AnswerMiss::NotWaiting),
        "not answerable before its step let it through"
    );
    let calls = vec![call("c1", Approval), call("c2", Client)];
    assert_eq!(rec.await_calls_t("r1", token, calls.clone()), Ok(2));
    let early = rec.answer("c1", Answer::Approved).map(|a| a.ready);
    assert_eq!(early, Ok(false), "a running run does not resume");
    assert_eq!(rec.wait_t("r1", token, calls), Ok(Some(4)));
    let kept = rec.waiting_calls("r1");
    assert_eq!(kept[0].answer, Some(Answer::Approved));
    assert_eq!(kept[1].answer, None);
}

/// SPEC H1, K2, L14: a metadata write is one fenced commit; a run counts
/// its own steps and episodes, which a resume continues from.
#[test]
fn h1_metadata_writes_are_fenced_commits_and_runs_count_their_own() {
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    rec.admit("r2", "m2");
    let token = rec.acquire();
    rec.next_episode_t("r1", token, 0).unwrap();
    let stale = rec.set_run_metadata_t("r1", token, Value::from(1));
    assert!(matches!(stale, Err(StoreError::StaleLease { .. })));
    assert_eq!((rec.version(), rec.run_metadata("r1")), (2, None));
    let token = rec.lease.token;
    assert_eq!(rec.set_run_metadata_t("r1", token, Value::from(2)), Ok(3));
    assert_eq!(rec.set_run_metadata_t("r1", token, Value::from(3)), Ok(4));
    assert_eq!(rec.run_metadata("r1"), Some(&Value::from(3)));
    assert_eq!(rec.run_metadata("r2"), None);
    rec.step_committed("r1");
    rec.step_committed("r1");
    rec.step_committed("r1");
    assert_eq!((rec.steps("r1"), rec.steps("r2")), (3, 0));
    assert_eq!((rec.episodes("r1"), rec.episodes("r2")), (2, 0));
}

/// SPEC K6: a cancel reaching a waiting run makes it resumable at once.
#[test]
fn k6_a_cancelled_waiting_run_resumes_to_end() {
    let mut rec = ThreadRec::new("a", "o");
    rec.admit("r1", "m1");
    let token = rec.acquire();
    let calls = vec![call("c1", crate::tool::ToolKind::Approval)];
    assert_eq!(rec.wait_t("r1", token, calls), Ok(Some(2)));
    let cancel = rec.cancel(None).map(|c| c.target);
    assert_eq!(cancel, Ok(CancelTarget::Waiting("r1".into())));
    let started = rec.start_next().expect("resumes");
    assert!(started.resumed && started.cancel_requested);
}

/// SPEC K2 (property): for any interleaving of lease acquisitions and
/// writes with any token handed out so far, a write lands exactly when
/// it carries the newest token; a refused write changes nothing.
mod k2_property {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Acquire,
        /// Write with the i-th token handed out (modulo their number).
        Write(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![Just(Op::Acquire), (0usize..8).prop_map(Op::Write)]
    }

    proptest! {
        #[test]
        fn k2_only_the_newest_token_writes(ops in prop::collection::vec(op(), 1..40)) {
            let mut rec = ThreadRec::new("a", "o");
            rec.admit("r1", "m1");
            let mut tokens: Vec<FencingToken> = Vec::new();
            for (i, op) in ops.iter().enumerate() {
                match op {
                    Op::Acquire => {
                        // Each claim comes after the last holder's lease
                        // expired: the first starts r1, the others take it over.
                        let now = 10 * (i as u64 + 1);
                        let claimed = rec.claim("t", &format!("w{i}"), Some(5), now);
                        let t = claimed.expect("an expired lease is taken").token;
                        prop_assert!(tokens.last().is_none_or(|last| t > *last), "tokens only grow");
                        tokens.push(t);
                    }
                    Op::Write(k) if !tokens.is_empty() => {
                        let token = tokens[k % tokens.len()];
                        let before = (rec.version(), rec.messages().len());
                        let newest = *tokens.last().expect("some token");
                        let wrote = rec.append_t(Some(token), [message("w")]);
                        if token == newest {
                            prop_assert_eq!(wrote.map(|a| a.version), Ok(before.0 + 1));
                        } else {
                            prop_assert!(wrote.is_err());
                            prop_assert_eq!((rec.version(), rec.messages().len()), before);
                        }
                    }
                    Op::Write(_) => {}
                }
            }
        }
    }
}

/// K2: the newest token is not enough: the run writing must be the one
/// holding the lease. A queued run, and a run that has ended, are refused
/// and change nothing (found by the store conformance suite).
#[test]
fn k2_only_the_holder_writes_under_the_newest_token() {
    use crate::store::{AdminOp, AdminReply, ClientOp, RunOp, StoreReply, StoreRequest};
    let store = crate::MemoryStore::default();
    let submit = |id: &str, run: &str| {
        let op = ClientOp::Submit {
            message: message(id),
            steer: false,
            new_run: Some(run.into()),
        };
        StoreRequest::client("t", "a", "o", op)
    };
    store.apply(submit("m1", "r1")).unwrap();
    store.apply(submit("m2", "r2")).unwrap();
    let claim = StoreRequest::claim(Some("t".into()), "w", None);
    let Ok(StoreReply::Admin(AdminReply::Claimed(Some(c)))) = store.apply(claim) else {
        panic!("r1 is claimed");
    };
    let append = |run: &str| {
        let op = RunOp::Append {
            messages: vec![message("x")],
            step: None,
            metadata: None,
        };
        StoreRequest::run("t", run, c.token, op)
    };
    let queued = store.apply(append("r2"));
    assert!(
        matches!(queued, Err(StoreError::LeaseNotHeld { .. })),
        "{queued:?}"
    );
    let end = RunEnd {
        status: RunStatus::Completed,
        outcome: Outcome::Completed,
        reason: None,
    };
    let finish = StoreRequest::run(
        "t",
        "r1",
        c.token,
        RunOp::Finish {
            end,
            next_run: None,
        },
    );
    store.apply(finish).unwrap();
    let ended = store.apply(append("r1"));
    assert!(
        matches!(ended, Err(StoreError::LeaseNotHeld { .. })),
        "{ended:?}"
    );
    let inspect = StoreRequest::admin("t", AdminOp::Inspect);
    let Ok(StoreReply::Admin(AdminReply::Thread(Some(t)))) = store.apply(inspect) else {
        panic!("the thread is there");
    };
    // Two submits, a claim and the run's end: the refused writes added nothing.
    assert_eq!((t.version, t.messages.len()), (4, 2), "nothing landed");
}
