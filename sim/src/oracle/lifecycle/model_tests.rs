//! The run-lifecycle model, input by input: each transition, each
//! violation and each allowance (issue 38; SPEC A1–A3, K3, K6, H5).

use super::*;

const W1: Who<'static> = Some("w1");
const W2: Who<'static> = Some("w2");

fn act(by: Who<'static>, act: Act) -> Input<'static> {
    Input::Act {
        by,
        act,
        what: format!("{act:?}"),
    }
}

fn claimed(by: Who<'static>) -> Input<'static> {
    Input::Claimed { by }
}

fn answer(by: Who<'static>, version: u64, aside: bool) -> Input<'static> {
    Input::Answer { by, version, aside }
}

fn deleted(by: Who<'static>) -> Input<'static> {
    Input::Heard {
        by,
        news: News::Delete,
        how: "the delete",
    }
}

fn after_step(step: u32, decision: Decision) -> Act {
    Act::AfterStep { step, decision }
}

fn begin(step: u32) -> Act {
    Act::Resolve { step, done: true }
}

fn commit(step: u32, version: u64) -> Act {
    Act::CommitStep { step, version }
}

/// Feeds `inputs` in order; the index and message of the first refusal.
fn run(inputs: Vec<Input<'static>>) -> Result<(), (usize, String)> {
    let mut model = RunModel::default();
    for (i, input) in inputs.into_iter().enumerate() {
        model.feed(input).map_err(|m| (i, m))?;
    }
    Ok(())
}

/// The inputs of one episode of `by` that claims, prepares and runs step
/// 0 up to its commit (at version 3).
fn first_step(by: Who<'static>) -> Vec<Input<'static>> {
    vec![
        claimed(by),
        act(by, Act::PrepareRun),
        act(
            by,
            Act::Resolve {
                step: 0,
                done: false,
            },
        ),
        act(by, begin(0)),
        act(by, Act::PrepareStep),
        act(by, Act::ModelCall),
        act(by, Act::Streamed),
        Input::StepCommitted(0),
        act(by, commit(0, 3)),
    ]
}

fn refused_at(inputs: Vec<Input<'static>>, at: usize, says: &str) {
    match run(inputs) {
        Err((i, m)) => {
            assert_eq!(i, at, "refused at the wrong input: {m}");
            assert!(m.contains(says), "{m}");
        }
        Ok(()) => panic!("nothing refused; expected input {at} ({says})"),
    }
}

#[test]
fn a_step_follows_its_predecessor_s_next_step_decision() {
    let mut inputs = first_step(None);
    inputs.extend([
        act(None, Act::Policy { step: 0 }),
        act(None, Act::ToolStart),
        act(None, Act::ToolResult),
        act(None, Act::CommitResults),
        act(None, after_step(0, Decision::Next)),
        act(None, begin(1)),
        act(None, Act::PrepareStep),
        act(None, Act::ModelCall),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn a3_a_step_that_begins_before_its_predecessor_s_after_step_is_refused() {
    let mut inputs = first_step(None);
    inputs.push(act(None, begin(1)));
    refused_at(inputs, 9, "before step 0's transition was decided");
}

#[test]
fn a4_a_steer_decided_or_committed_lets_the_next_step_begin() {
    // Decided in this episode: the step may follow (whether in a new
    // episode is the phase grammar's business, L14).
    let mut inputs = first_step(None);
    inputs.extend([
        act(None, after_step(0, Decision::Steer)),
        act(None, begin(1)),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    // The steer taken (committed), a new episode begins step 1.
    inputs.truncate(10);
    inputs.extend([
        Input::TransitionCommitted,
        act(None, Act::Close),
        claimed(None),
        act(None, Act::PrepareRun),
        act(None, begin(1)),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn a_new_episode_without_a_committed_transition_cannot_begin_the_next_step() {
    let mut inputs = first_step(None);
    inputs.extend([
        claimed(None),
        act(None, Act::PrepareRun),
        act(None, begin(1)),
    ]);
    refused_at(inputs, 11, "no wait or taken steer committed it");
}

#[test]
fn t7_a_resumed_episode_goes_on_from_its_committed_wait() {
    let mut inputs = first_step(W1);
    inputs.extend([
        act(W1, Act::Policy { step: 0 }),
        act(W1, after_step(0, Decision::Wait)),
        Input::TransitionCommitted,
        act(W1, Act::Wait { version: 4 }),
        claimed(W2),
        act(W2, Act::PrepareRun),
        act(W2, Act::ToolStart),
        act(W2, Act::CommitResults),
        act(W2, begin(1)),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn a2_nothing_starts_after_the_episode_s_transition_ended_the_run() {
    for (why, decision) in [
        ("complete", Decision::Ends("complete")),
        ("the step limit", Decision::Ends("the step limit")),
        ("an abort", Decision::Ends("an abort")),
    ] {
        for next in [
            Act::ModelCall,
            Act::PrepareRun,
            begin(1),
            Act::PrepareStep,
            Act::Policy { step: 0 },
            Act::ToolStart,
            Act::Compaction { step: 1 },
            after_step(0, Decision::Next),
            Act::Respond,
        ] {
            let mut inputs = first_step(None);
            inputs.extend([act(None, after_step(0, decision)), act(None, next)]);
            refused_at(inputs, 10, why);
        }
    }
}

#[test]
fn a3_a_completing_step_gives_its_pending_calls_up_and_ends() {
    let mut inputs = first_step(None);
    inputs.extend([
        act(None, Act::Policy { step: 0 }),
        act(None, Act::Awaiting),
        act(None, after_step(0, Decision::Ends("complete"))),
        act(None, Act::ToolResult),
        act(None, Act::CommitResults),
        act(None, Act::Close),
        act(None, Act::End { completed: true }),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn l12_nothing_starts_after_a_respond() {
    let inputs = vec![
        claimed(None),
        act(None, Act::Respond),
        act(None, Act::Close),
        act(None, begin(0)),
    ];
    refused_at(inputs, 3, "(a respond)");
}

/// A run whose holder w1 committed step 0 (with a call) and was cut off;
/// w2 takes it over.
fn taken_over(committed: bool) -> Vec<Input<'static>> {
    let mut inputs = first_step(W1);
    inputs.push(act(W1, Act::Policy { step: 0 }));
    if committed {
        inputs.push(Input::TransitionCommitted);
    }
    inputs.extend([
        Input::TakenOver {
            by: W2,
            next_step: 1,
        },
        claimed(W2),
    ]);
    inputs
}

#[test]
fn k3_a_taker_decides_the_last_committed_step_s_transition_first() {
    let mut inputs = taken_over(false);
    inputs.extend([
        act(W2, Act::Policy { step: 0 }),
        act(W2, Act::ToolStart),
        act(W2, Act::ToolResult),
        act(W2, Act::CommitResults),
        act(W2, after_step(0, Decision::Next)),
        act(W2, Act::PrepareRun),
        act(W2, begin(1)),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k3_a_taker_that_acts_on_the_transition_before_deciding_it_is_refused() {
    for next in [
        Act::PrepareRun,
        Act::Respond,
        begin(1),
        Act::Compaction { step: 1 },
        Act::Wait { version: 9 },
        Act::End { completed: true },
    ] {
        let mut inputs = taken_over(false);
        inputs.push(act(W2, next));
        refused_at(inputs, 12, "before it decided step 0's transition");
    }
}

#[test]
fn k3_a_taker_that_decides_the_run_ended_starts_nothing() {
    let mut inputs = taken_over(false);
    inputs.extend([
        act(W2, after_step(0, Decision::Ends("complete"))),
        act(W2, Act::Close),
        act(W2, Act::End { completed: true }),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    inputs.truncate(13);
    inputs.push(act(W2, Act::PrepareRun));
    refused_at(inputs, 13, "ended the run (complete)");
}

#[test]
fn k3_a_taker_of_a_cancelled_run_closes_it_without_deciding() {
    let mut inputs = taken_over(false);
    inputs.extend([
        act(W2, Act::ToolResult),
        act(W2, Act::CommitResults),
        act(W2, Act::Close),
        act(W2, Act::End { completed: false }),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k3_a_committed_wait_or_steer_needs_no_second_decision() {
    let mut inputs = taken_over(true);
    inputs.extend([act(W2, Act::PrepareRun), act(W2, begin(1))]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k3_a_taker_of_a_run_without_a_committed_step_begins_afresh() {
    let inputs = vec![
        Input::TakenOver {
            by: W2,
            next_step: 0,
        },
        claimed(W2),
        act(W2, Act::PrepareRun),
        act(W2, begin(0)),
    ];
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k3_a_stale_holder_is_judged_by_what_it_knew() {
    // w1 goes on with its in-flight tool after w2 took over: it never heard.
    let mut inputs = taken_over(false);
    inputs.extend([
        act(W1, Act::ToolStart),
        act(W1, Act::ToolResult),
        act(W1, Act::Close),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k6_no_step_commits_after_the_cancel_reached_the_store() {
    let mut inputs = first_step(W1);
    inputs.insert(8, Input::CancelReached(2));
    refused_at(inputs, 9, "after the cancel reached the store (v2)");
    let mut earlier = first_step(W1);
    earlier.push(Input::CancelReached(4));
    assert_eq!(run(earlier), Ok(()));
}

#[test]
fn k6_no_wait_lands_after_the_cancel_reached_the_store() {
    let mut inputs = first_step(W1);
    inputs.extend([
        act(W1, Act::Policy { step: 0 }),
        act(W1, after_step(0, Decision::Wait)),
        Input::CancelReached(4),
        act(W1, Act::Wait { version: 5 }),
    ]);
    refused_at(
        inputs,
        12,
        "landed (v5) after the cancel reached the store (v4)",
    );
}

/// w1 ran step 0 with a tool; the cancel reached the store at v4.
fn cancelled_in_tools() -> Vec<Input<'static>> {
    let mut inputs = first_step(W1);
    inputs.extend([
        act(W1, Act::Policy { step: 0 }),
        act(W1, Act::ToolStart),
        Input::CancelReached(4),
    ]);
    inputs
}

#[test]
fn k6_an_answer_from_before_the_cancel_tells_nothing() {
    let mut inputs = cancelled_in_tools();
    inputs.extend([
        answer(W1, 4, true),
        act(W1, Act::ToolResult),
        act(W1, Act::CommitResults),
        act(W1, after_step(0, Decision::Next)),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k6_a_holder_hears_the_cancel_at_its_next_write() {
    // Hooks of the step may still run (K6 forbids none); the model call
    // of the next step may not start.
    let mut inputs = cancelled_in_tools();
    inputs.extend([
        act(W1, Act::ToolResult),
        act(W1, Act::CommitResults),
        answer(W1, 5, false),
        act(W1, after_step(0, Decision::Next)),
        act(W1, begin(1)),
        act(W1, Act::PrepareStep),
        act(W1, Act::ModelCall),
    ]);
    refused_at(
        inputs,
        18,
        "heard of the cancel that reached the store at v4 (at its answer of v5",
    );
}

#[test]
fn h5_the_phase_in_flight_when_the_delete_is_heard_may_finish() {
    // The delete is learned while after_step's hooks run: after_step
    // finishes, then no later phase starts.
    let mut inputs = cancelled_in_tools();
    inputs.truncate(11);
    inputs.extend([
        act(W1, Act::ToolResult),
        act(W1, Act::CommitResults),
        deleted(W1),
        act(W1, after_step(0, Decision::Next)),
        act(W1, Act::Close),
        act(W1, Act::End { completed: false }),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    inputs.truncate(15);
    inputs.push(act(W1, begin(1)));
    refused_at(inputs, 15, "heard of the delete");
}

#[test]
fn k6_t8_closing_results_and_the_end_follow_a_heard_cancel() {
    let mut inputs = cancelled_in_tools();
    inputs.extend([
        answer(W1, 5, true),
        act(W1, Act::ToolResult),
        act(W1, Act::CommitResults),
        act(W1, Act::Streamed),
        act(W1, Act::Close),
        act(W1, Act::End { completed: false }),
    ]);
    assert_eq!(run(inputs), Ok(()));
}

#[test]
fn k6_h5_no_model_call_tool_or_compaction_starts_once_heard() {
    for (next, heard) in [
        (Act::ModelCall, "cancel"),
        (Act::ToolStart, "cancel"),
        (Act::Compaction { step: 1 }, "cancel"),
        (Act::ModelCall, "delete"),
        (Act::ToolStart, "delete"),
    ] {
        let mut inputs = cancelled_in_tools();
        inputs.push(match heard {
            "cancel" => answer(W1, 5, true),
            _ => deleted(W1),
        });
        inputs.push(act(W1, next));
        refused_at(inputs, 13, heard);
    }
}

#[test]
fn k6_a_claim_after_the_cancel_closes_the_waiting_run_and_runs_nothing() {
    let mut inputs = first_step(W1);
    inputs.extend([
        act(W1, Act::Policy { step: 0 }),
        act(W1, after_step(0, Decision::Wait)),
        Input::TransitionCommitted,
        act(W1, Act::Wait { version: 4 }),
        Input::CancelReached(5),
        claimed(W2),
        answer(W2, 6, false),
        act(W2, Act::ToolResult),
        act(W2, Act::CommitResults),
        act(W2, Act::Close),
        act(W2, Act::End { completed: false }),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    inputs.truncate(16);
    inputs.push(act(W2, Act::PrepareRun));
    refused_at(inputs, 16, "heard of the cancel");
}

#[test]
fn h5_a_step_s_policy_in_flight_finishes_for_every_call() {
    let mut inputs = first_step(None);
    inputs.extend([
        deleted(None),
        act(None, Act::Policy { step: 0 }),
        act(None, Act::Policy { step: 0 }),
        act(None, Act::ToolResult),
        act(None, Act::CommitResults),
        act(None, Act::Close),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    inputs.truncate(12);
    inputs.push(act(None, Act::ToolStart));
    refused_at(inputs, 12, "heard of the delete");
}

#[test]
fn k6_hooks_may_run_after_a_heard_cancel_but_no_model_call_or_tool_starts() {
    let mut inputs = first_step(None);
    inputs.truncate(4);
    inputs.extend([
        Input::CancelReached(3),
        Input::Heard {
            by: None,
            news: News::Cancel,
            how: "the cancel",
        },
        act(None, Act::PrepareStep),
        act(None, Act::Close),
    ]);
    assert_eq!(run(inputs.clone()), Ok(()));
    for next in [Act::ModelCall, Act::ToolStart, Act::Compaction { step: 0 }] {
        let mut late = inputs.clone();
        late.truncate(7);
        late.push(act(None, next));
        refused_at(late, 7, "heard of the cancel");
    }
}

#[test]
fn h5_a_resolver_in_flight_may_finish_but_no_later_hook_of_the_step_runs() {
    let inputs = vec![
        claimed(W1),
        act(W1, Act::PrepareRun),
        act(W1, Act::Compaction { step: 0 }),
        deleted(W1),
        act(
            W1,
            Act::Resolve {
                step: 0,
                done: false,
            },
        ),
        act(W1, begin(0)),
        act(W1, Act::PrepareStep),
    ];
    refused_at(inputs, 6, "heard of the delete");
}

#[test]
fn the_phase_in_flight_is_the_one_after_where_the_holder_was() {
    // Heard right after prepare_model_step: the model call is not in flight.
    let inputs = vec![
        claimed(None),
        act(None, Act::PrepareRun),
        act(None, begin(0)),
        act(None, Act::PrepareStep),
        deleted(None),
        act(None, Act::ModelCall),
    ];
    refused_at(inputs, 5, "heard of the delete");
    // Heard while the model streamed: its commit may still land.
    let mut inputs = first_step(None);
    inputs.insert(7, deleted(None));
    assert_eq!(run(inputs.clone()), Ok(()));
    inputs.push(act(None, Act::Policy { step: 0 }));
    refused_at(inputs, 10, "heard of the delete");
}

#[test]
fn an_act_of_a_worker_that_never_claimed_the_run_is_not_judged() {
    let inputs = vec![act(W2, Act::ModelCall), act(W2, begin(3))];
    assert_eq!(run(inputs), Ok(()));
}
