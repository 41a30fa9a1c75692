//! The generator reaches the situations the rules are about: a test that
//! fails if a change of weights leaves one out (the model alone decides
//! each step's expected reply; claims are given the next token).

use std::collections::BTreeSet;

use pai_runtime::{
    StoreError,
    store::{
        AdminReply, CancelTarget, ClientReply, FacadeReply, Finish, Refusal, RunReply, StoreReply,
    },
};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use crate::model::{Action, Expected, Model};

/// A name for the situation a step is in, if it is one we look for.
fn situation(expect: &Expected) -> Option<&'static str> {
    use StoreReply as R;
    Some(match expect {
        Expected::Claim(Some(c)) if c.takeover.is_some() => "K3 takeover",
        Expected::Claim(Some(c)) if c.resumed => "T9 resume",
        Expected::Claim(Some(_)) => "K1 start",
        Expected::Lease { .. } => "K3 next episode",
        Expected::Reply(Err(StoreError::StaleLease { .. })) => "K2 stale write refused",
        Expected::Reply(Err(StoreError::LeaseNotHeld { .. })) => "K2 lease not held",
        Expected::Reply(Err(StoreError::Deleted { .. })) => "H5 retired run refused",
        Expected::Reply(Err(StoreError::Forbidden { .. })) => "H4 other identity",
        Expected::Reply(Ok(R::Facade(FacadeReply::Mutated(Err(Refusal::Conflict {
            private_changed: false,
            ..
        }))))) => "H3 version conflict",
        Expected::Reply(Ok(R::Facade(FacadeReply::Mutated(Err(Refusal::Conflict {
            private_changed: true,
            ..
        }))))) => "H3 private conflict",
        Expected::Reply(Ok(R::Facade(FacadeReply::Mutated(Err(Refusal::Busy { .. }))))) => {
            "K4 busy"
        }
        Expected::Reply(Ok(R::Facade(FacadeReply::Mutated(Ok(_))))) => "H2 committed",
        Expected::Reply(Ok(R::Facade(FacadeReply::Regenerated(Ok(_))))) => "R1 regenerated",
        Expected::Reply(Ok(R::Admin(AdminReply::Deleted(Some(_))))) => "H5 deleted",
        Expected::Reply(Ok(R::Client(ClientReply::Answered(Ok(_))))) => "T9 answered",
        Expected::Reply(Ok(R::Client(ClientReply::Answered(Err(_))))) => "T9 answer refused",
        Expected::Reply(Ok(R::Client(ClientReply::Cancelled(Ok(
            pai_runtime::store::CancelReached {
                target: CancelTarget::Queued(_),
                ..
            },
        ))))) => "K6 queued cancelled",
        Expected::Reply(Ok(R::Client(ClientReply::Cancelled(Ok(_))))) => "K6 current cancelled",
        Expected::Reply(Ok(R::Client(ClientReply::Cancelled(Err(_))))) => "K6 cancel missed",
        Expected::Reply(Ok(R::Run(RunReply::Finished(Finish::CancelFirst)))) => "K6 cancel first",
        Expected::Reply(Err(StoreError::Cancelled { .. })) => "K6 cancelled run's write refused",
        Expected::Reply(Ok(R::Run(RunReply::Appended(a)))) if a.cancel_requested => {
            "K6 closing results taken"
        }
        Expected::Reply(Ok(R::Run(RunReply::Waited(Some(_))))) => "T7 waits",
        Expected::Reply(Ok(R::Run(RunReply::Awaited { .. } | RunReply::MetadataSet { .. }))) => {
            "T9 answerable early or metadata"
        }
        Expected::Reply(Ok(R::Run(RunReply::Finished(Finish::Stored { .. })))) => "run ended",
        Expected::Reply(Ok(R::Client(ClientReply::Submitted(
            pai_runtime::store::Submitted::Steer { .. },
        )))) => "A4 steer",
        _ => return None,
    })
}

#[test]
fn generated_cases_reach_every_situation() {
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..512 {
        let ops = crate::ops::ops(40)
            .new_tree(&mut runner)
            .expect("a case")
            .current();
        let mut model = Model::new();
        for op in &ops {
            let Action::Call { expect, .. } = model.step(op).action else {
                continue;
            };
            seen.extend(situation(&expect));
            match expect {
                Expected::Claim(Some(c)) => model.adopt_token(c.thread, c.floor.next()),
                Expected::Lease { thread, .. } => {
                    let next = model.threads[thread].lease.token.next();
                    model.adopt_token(thread, next);
                }
                _ => {}
            }
        }
    }
    let all = [
        "K3 takeover",
        "T9 resume",
        "K1 start",
        "K3 next episode",
        "K2 stale write refused",
        "K2 lease not held",
        "H5 retired run refused",
        "H4 other identity",
        "H3 version conflict",
        "H3 private conflict",
        "K4 busy",
        "H2 committed",
        "R1 regenerated",
        "H5 deleted",
        "T9 answered",
        "T9 answer refused",
        "K6 queued cancelled",
        "K6 current cancelled",
        "K6 cancel missed",
        "K6 cancel first",
        "K6 cancelled run's write refused",
        "K6 closing results taken",
        "T7 waits",
        "run ended",
        "A4 steer",
    ];
    let missing: Vec<&str> = all.iter().copied().filter(|s| !seen.contains(s)).collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}
