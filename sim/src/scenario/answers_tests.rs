//! The checks of answers that name a call: by `tool` (and `nth`) or by
//! `call`, exactly one way; each refusal names the entry's field.

use std::path::Path;

use crate::scenario::{Action, CallName, Scenario};

/// A client tool `t` the script calls twice: the calls the answers name.
const HEAD: &str = "name = \"x\"\nrules = [\"T9\"]\n[[agent.tools]]\nname = \"t\"\nclient = true\n[[model.turns]]\ntool_calls = [{ tool = \"t\" }, { tool = \"t\" }]\n[[timeline]]\nsend = \"hi\"\n";

fn parse(entry: &str) -> Result<Scenario, String> {
    let text = format!("{HEAD}[[timeline]]\nat = 5\n{entry}\n");
    Scenario::parse(Path::new("a.toml"), &text).map_err(|e| e.message)
}

#[test]
fn t9_a_call_is_named_by_tool_or_by_id() {
    let s = parse("approve = { call = \"#2\" }").unwrap();
    assert_eq!(s.timeline[1].action, Action::Approve(CallName::Seen(2)));
    let s = parse("deny = { call = \"call7_ab12\", reason = \"no\" }").unwrap();
    let id = CallName::Id("call7_ab12".into());
    assert_eq!(s.timeline[1].action, Action::Deny(id, "no".into()));
    let s = parse("submit_result = { tool = \"t\", output = 1 }").unwrap();
    let nth = CallName::Nth {
        tool: "t".into(),
        nth: 1,
    };
    assert_eq!(s.timeline[1].action, Action::Submit(nth, 1.into()));
    assert!(!s.timeline[1].action.names_call_by_id());
}

#[test]
fn t9_a_call_named_two_ways_or_none_is_refused_at_its_field() {
    let e = parse("approve = { tool = \"t\", call = \"#1\" }").unwrap_err();
    assert_eq!(
        e,
        "timeline[1].approve: names its call two ways: give `tool` (with `nth`) or `call`, not both"
    );
    let e = parse("deny = { call = \"#1\", nth = 2 }").unwrap_err();
    assert_eq!(
        e,
        "timeline[1].deny: `nth` counts a tool's calls: it goes with `tool`, not `call`"
    );
    let e = parse("submit_result = { output = 1 }").unwrap_err();
    assert_eq!(
        e,
        "timeline[1].submit_result: needs the call it names: `tool` (with `nth`) or `call`"
    );
}

#[test]
fn t9_a_call_number_from_zero_or_not_a_number_is_refused() {
    let e = parse("approve = { call = \"#0\" }").unwrap_err();
    assert_eq!(
        e,
        "timeline[1].approve: `call = \"#0\"`: #N counts the thread's calls from 1"
    );
    let e = parse("expect_waiting = [{ call = \"#x\" }]").unwrap_err();
    assert!(
        e.starts_with("timeline[1].expect_waiting: `call = \"#x\"`"),
        "{e}"
    );
    let e = parse("approve = { call = \"\" }").unwrap_err();
    assert_eq!(e, "timeline[1].approve: `call` needs a call id, or #N");
}
