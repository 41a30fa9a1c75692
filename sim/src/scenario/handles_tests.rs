//! The checks of trusted handles: each refusal names the entry's field.

use std::path::Path;

use crate::scenario::{Action, Scenario};

const HEAD: &str = "name = \"x\"\nrules = [\"H5\"]\n[[timeline]]\nsend = \"hi\"\n";

fn parse(timeline: &str) -> Result<Scenario, String> {
    let text = format!("{HEAD}{timeline}");
    Scenario::parse(Path::new("a.toml"), &text).map_err(|e| e.message)
}

#[test]
fn h5_a_handle_bound_earlier_is_used_later() {
    let s = parse(
        "[[timeline]]\nat = 5\nbind_thread = \"h\"\n[[timeline]]\nat = 9\nhandle = \"h\"\nread_thread = true\n",
    )
    .unwrap();
    assert_eq!(s.timeline[1].action, Action::Bind("h".into()));
    assert_eq!(s.timeline[2].handle.as_deref(), Some("h"));
}

#[test]
fn h5_a_handle_no_bind_names_is_refused_at_its_field() {
    let e = parse("[[timeline]]\nhandle = \"h\"\nread_thread = true\n").unwrap_err();
    assert_eq!(
        e,
        "timeline[1].handle: no `bind_thread` binds a handle \"h\""
    );
}

#[test]
fn h5_a_handle_bound_later_or_elsewhere_is_refused() {
    let e = parse(
        "[[timeline]]\nat = 5\nhandle = \"h\"\nread_thread = true\n[[timeline]]\nat = 9\nbind_thread = \"h\"\n",
    )
    .unwrap_err();
    assert_eq!(
        e,
        "timeline[1].handle: handle \"h\" is bound at 9ms by timeline[2], after this entry runs"
    );
    let e = parse(
        "[[timeline]]\nthread = \"side\"\nbind_thread = \"h\"\n[[timeline]]\nat = 1\nhandle = \"h\"\ndelete_thread = true\n",
    )
    .unwrap_err();
    assert_eq!(
        e,
        "timeline[2].handle: handle \"h\" is bound to thread \"side\" (timeline[1]), not \"main\""
    );
}

#[test]
fn h5_a_handle_on_an_action_it_cannot_take_or_bound_twice_is_refused() {
    let e = parse(
        "[[timeline]]\nbind_thread = \"h\"\n[[timeline]]\nat = 1\nhandle = \"h\"\nsend = \"x\"\n",
    )
    .unwrap_err();
    assert!(
        e.starts_with("timeline[2].handle: a trusted handle acts with"),
        "{e}"
    );
    let e = parse("[[timeline]]\nbind_thread = \"h\"\n[[timeline]]\nbind_thread = \"h\"\n")
        .unwrap_err();
    assert_eq!(
        e,
        "timeline[2].bind_thread: handle \"h\" is already bound by timeline[1]"
    );
    let e = parse("[[timeline]]\nbind_thread = \"\"\n").unwrap_err();
    assert_eq!(e, "timeline[1].bind_thread: a trusted handle needs a name");
}
