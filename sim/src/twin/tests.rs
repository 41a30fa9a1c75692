//! The twin's comparison: renaming, per-run comparison, each allowance,
//! the masks, the first differing line.

use pai_runtime::message::{
    Outcome as End, PaiMeta, Producer, ResultSource, ToolStatus, Visibility,
};
use pai_runtime::store::{RunRecord, RunStatus, StoredThread};
use pai_runtime::{Message, Part, Role};
use serde_json::{Value, json};

use super::compare::{Allowed, compare};
use super::outcome::{Outcome, rename_for_test};
use crate::scenario::Scenario;

fn scenario(extra: &str) -> Scenario {
    let text = format!("name = \"t\"\nrules = [\"K3\"]\n{extra}\n[[timeline]]\nsend = \"hi\"\n");
    Scenario::parse(std::path::Path::new("t.toml"), &text).expect("a valid scenario")
}

fn msg(id: &str, seq: u64, role: Role, run: &str, parts: Vec<Part>) -> Message {
    let producer = match role {
        Role::User => Producer::User,
        Role::Tool => Producer::Tool,
        _ => Producer::Model,
    };
    Message {
        id: id.into(),
        seq,
        role,
        parts,
        visibility: Visibility::ALL,
        pai: PaiMeta::new(producer, Some(run), None, seq * 10),
    }
}

fn text(t: &str) -> Part {
    Part::text(t)
}

fn call(id: &str) -> Part {
    Part::ToolCall {
        call_id: id.into(),
        tool: "charge".into(),
        input: json!({ "amount": 3 }),
    }
}

fn result(id: &str, source: ResultSource) -> Part {
    let (status, output) = match source {
        ResultSource::Tool => (ToolStatus::Output, json!({ "ok": true })),
        _ => (ToolStatus::Error, json!("cancelled")),
    };
    Part::ToolResult {
        call_id: id.into(),
        tool: "charge".into(),
        status,
        source,
        output,
    }
}

fn run(id: &str, trigger: &str, status: RunStatus, steps: u32) -> RunRecord {
    let outcome = match status {
        RunStatus::Completed => Some(End::Completed),
        RunStatus::Cancelled => Some(End::Cancelled),
        _ => None,
    };
    RunRecord {
        id: id.into(),
        status,
        outcome,
        reason: (status == RunStatus::Cancelled).then(|| "cancelled by the client".to_string()),
        steps,
        trigger: trigger.into(),
        episodes: 1,
        metadata: None,
        waiting: Vec::new(),
        cancel_requested: false,
        calls_closed: false,
        handed_over: None,
    }
}

fn thread(messages: Vec<Message>, runs: Vec<RunRecord>) -> StoredThread {
    StoredThread {
        id: "main".into(),
        agent: "assistant".into(),
        owner: "alice".into(),
        incarnation: 1,
        version: 99,
        messages,
        metadata: Default::default(),
        private_metadata: Default::default(),
        runs,
        lease_holder: None,
        lease_token: Default::default(),
    }
}

fn outcome(s: &Scenario, t: StoredThread) -> Outcome {
    Outcome::of(s, &[t], &[])
}

/// Two runs, each a user message and an answer, with the second run's
/// user message stored at `second_sent` among the first run's messages.
fn two_runs(ids: [&str; 6], second_sent: usize) -> StoredThread {
    let [r1, r2, m1, m2, m3, m4] = ids;
    let mut first = vec![
        msg(m1, 0, Role::User, r1, vec![text("one")]),
        msg(m2, 0, Role::Assistant, r1, vec![text("One.")]),
    ];
    let second = msg(m3, 0, Role::User, r2, vec![text("two")]);
    first.insert(second_sent, second);
    first.push(msg(m4, 0, Role::Assistant, r2, vec![text("Two.")]));
    for (i, m) in first.iter_mut().enumerate() {
        m.seq = i as u64 + 1;
    }
    let runs = vec![
        run(r1, m1, RunStatus::Completed, 1),
        run(r2, m3, RunStatus::Completed, 1),
    ];
    thread(first, runs)
}

/// Ids are renamed by where they first appear, within their scope: an
/// id seen again keeps its name, another scope counts afresh.
#[test]
fn ids_are_renamed_by_first_appearance_within_their_scope() {
    let got = rename_for_test(&[
        ("msg7_00aa call3_0b0b", "R1"),
        ("msg2_1234 msg7_00aa", "R1"),
        ("msg9_ffff call1_0000", "R2"),
        ("thr1_abcd", "T"),
    ]);
    assert_eq!(got, ["R1/m1 R1/c1", "R1/m2 R1/m1", "R2/m1 R2/c1", "T/t1"]);
}

/// The same runs with other ids, and the second run's message stored
/// at another place among the first run's (a send that queued behind a
/// slower run): the outcomes are equal, run by run.
#[test]
fn outcomes_compare_per_run_whatever_the_ids_and_the_storage_order() {
    let s = scenario("");
    let a = outcome(
        &s,
        two_runs(
            [
                "run1_aaaa",
                "run2_aaaa",
                "msg1_aaaa",
                "msg2_aaaa",
                "msg3_aaaa",
                "msg4_aaaa",
            ],
            2,
        ),
    );
    let b = outcome(
        &s,
        two_runs(
            [
                "run1_bbbb",
                "run2_bbbb",
                "msg1_bbbb",
                "msg2_bbbb",
                "msg3_bbbb",
                "msg4_bbbb",
            ],
            1,
        ),
    );
    assert_eq!(compare(&a, &b), Ok(vec![]));
}

/// A run with one more answer than its twin's: the violation names the
/// first differing line and shows it in a small diff.
#[test]
fn a_difference_names_the_first_differing_line() {
    let s = scenario("");
    let twin = two_runs(
        [
            "run1_000a",
            "run2_000a",
            "msg1_000a",
            "msg2_000a",
            "msg3_000a",
            "msg4_000a",
        ],
        2,
    );
    let mut mine = twin.clone();
    mine.messages.insert(
        2,
        msg(
            "msg9_9999",
            3,
            Role::Assistant,
            "run1_000a",
            vec![text("Again.")],
        ),
    );
    let err = compare(&outcome(&s, mine), &outcome(&s, twin)).unwrap_err();
    assert!(!err.after_cut);
    let err = err.message;
    assert!(err.contains("at line 8"), "{err}");
    assert!(
        err.contains("this run has `R1/m3 assistant by model"),
        "{err}"
    );
    assert!(err.contains("+      text \"Again.\""), "{err}");
}

/// One run cut by its cancel: the tool's result cancelled in this run,
/// an output and one more step in the twin's. Allowed on a thread the
/// timeline cancels (K6); a violation on any other.
fn cut(cancels: bool, extra: Option<Part>) -> Result<Vec<Allowed>, super::compare::Difference> {
    let timeline = if cancels {
        "[[timeline]]\nat = 5\ncancel = true\n"
    } else {
        ""
    };
    let s = scenario(timeline);
    let head = |r: &str| {
        vec![
            msg("msg1_0001", 1, Role::User, r, vec![text("charge")]),
            msg("msg2_0002", 2, Role::Assistant, r, vec![call("call1_0001")]),
        ]
    };
    let mut mine = head("run1_0001");
    let mut results = vec![result("call1_0001", ResultSource::Cancelled)];
    results.extend(extra);
    mine.push(msg("msg3_0003", 3, Role::Tool, "run1_0001", results));
    let mut twin = head("run1_0001");
    twin.push(msg(
        "msg3_0003",
        3,
        Role::Tool,
        "run1_0001",
        vec![result("call1_0001", ResultSource::Tool)],
    ));
    twin.push(msg(
        "msg4_0004",
        4,
        Role::Assistant,
        "run1_0001",
        vec![text("Charged.")],
    ));
    let mine = thread(
        mine,
        vec![run("run1_0001", "msg1_0001", RunStatus::Cancelled, 1)],
    );
    let twin = thread(
        twin,
        vec![run("run1_0001", "msg1_0001", RunStatus::Completed, 2)],
    );
    compare(&outcome(&s, mine), &outcome(&s, twin))
}

#[test]
fn a_cancel_may_cut_a_run_at_another_point() {
    let allowed = cut(true, None).expect("a cancel's lateness is allowed");
    assert_eq!(
        allowed,
        [Allowed::Cut(
            "thread main, incarnation 1".into(),
            "R1".into()
        )]
    );
    assert!(
        cut(false, None).is_err(),
        "no cancel on the thread: nothing to allow"
    );
    let more = Some(text("and more"));
    assert!(
        cut(true, more).is_err(),
        "a cut run holds nothing after where it stopped"
    );
}

/// A count kept in `prepare_run` (once per episode) is left out and said
/// so; what `on_output` wrote about a result stays compared (K5).
#[test]
fn episode_counts_are_masked_and_result_writes_compared() {
    let s = scenario(
        "[[lifecycle]]\nhook = \"patch_metadata\"\nphase = \"prepare_run\"\ncount = \"episodes\"\n",
    );
    let with = |meta: Value| {
        let mut t = two_runs(
            [
                "run1_000c",
                "run2_000c",
                "msg1_000c",
                "msg2_000c",
                "msg3_000c",
                "msg4_000c",
            ],
            2,
        );
        t.runs[0].metadata = Some(meta);
        outcome(&s, t)
    };
    let a = with(json!({ "episodes": 2, "charged": 1 }));
    let b = with(json!({ "episodes": 1, "charged": 1 }));
    assert_eq!(compare(&a, &b), Ok(vec![]));
    assert!(
        a.masked[0].contains("run metadata `episodes`"),
        "{:?}",
        a.masked
    );
    let c = with(json!({ "episodes": 1, "charged": 2 }));
    assert!(compare(&c, &b).is_err(), "a result's count is compared");
}

/// The compaction cursor names messages by sequence number, which
/// follows storage order: compared by the messages it names.
#[test]
fn the_compaction_cursor_is_compared_by_the_messages_it_names() {
    let s = scenario("");
    let with = |second_sent: usize, m: &str| {
        let mut t = two_runs(
            [
                "run1_000d",
                "run2_000d",
                "msg1_000d",
                m,
                "msg3_000d",
                "msg4_000d",
            ],
            second_sent,
        );
        let seq = t
            .messages
            .iter()
            .find(|x| x.id == m)
            .map(|x| x.seq)
            .unwrap();
        t.private_metadata.insert(
            super::outcome::COMPACTION_KEY.into(),
            json!({ "through": seq, "summary": "msg4_000d", "covers": seq }),
        );
        outcome(&s, t)
    };
    assert_eq!(
        compare(&with(2, "msg2_000d"), &with(1, "msg2_000d")),
        Ok(vec![])
    );
}

/// A cancel that found the run queued in one run and started in the
/// other: both cancelled by the client, one before its first step.
#[test]
fn a_cancel_may_find_the_run_queued_in_one_and_started_in_the_other() {
    let s = scenario("[[timeline]]\nat = 5\ncancel = true\n");
    let user = || msg("msg1_0001", 1, Role::User, "run1_0001", vec![text("hi")]);
    let mut queued = run("run1_0001", "msg1_0001", RunStatus::Cancelled, 0);
    queued.reason = Some("cancelled while queued".into());
    let queued = thread(vec![user()], vec![queued]);
    let answer = msg(
        "msg2_0002",
        2,
        Role::Assistant,
        "run1_0001",
        vec![text("Hi.")],
    );
    let started = thread(
        vec![user(), answer],
        vec![run("run1_0001", "msg1_0001", RunStatus::Cancelled, 1)],
    );
    let allowed = compare(&outcome(&s, queued.clone()), &outcome(&s, started.clone()));
    assert_eq!(allowed.map(|a| a.len()), Ok(1));
    let quiet = scenario("");
    assert!(compare(&outcome(&quiet, queued), &outcome(&quiet, started)).is_err());
}

/// A difference past a run the rules let be cut says so: what came after
/// the cut may have been decided by it.
#[test]
fn a_difference_past_a_cut_run_says_so() {
    let s = scenario("[[timeline]]\nat = 5\ncancel = true\n");
    let user = |id: &str, seq, run: &str| msg(id, seq, Role::User, run, vec![text("hi")]);
    let mut cut_short = run("run1_0001", "msg1_0001", RunStatus::Cancelled, 0);
    cut_short.reason = Some("cancelled while queued".into());
    let mine = thread(
        vec![
            user("msg1_0001", 1, "run1_0001"),
            user("msg2_0002", 2, "run2_0002"),
        ],
        vec![
            cut_short,
            run("run2_0002", "msg2_0002", RunStatus::Completed, 0),
        ],
    );
    let twin = thread(
        vec![
            user("msg1_0001", 1, "run1_0001"),
            msg(
                "msg3_0003",
                2,
                Role::Assistant,
                "run1_0001",
                vec![text("Hi.")],
            ),
        ],
        vec![run("run1_0001", "msg1_0001", RunStatus::Completed, 1)],
    );
    let d = compare(&outcome(&s, mine), &outcome(&s, twin)).unwrap_err();
    assert!(d.after_cut, "{}", d.message);
}
