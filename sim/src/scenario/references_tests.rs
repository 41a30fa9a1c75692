//! The names a scenario uses for its own tools and calls: each refusal
//! names the field, and what the scenario means on purpose is let be.

use std::path::Path;

use crate::scenario::Scenario;

/// Tools `search` and `send_email` (an approval tool), and a script that
/// calls `search` once, `send_email` once and `ghost` (no tool) once.
const HEAD: &str = r#"name = "x"
rules = ["T7"]
[[agent.tools]]
name = "search"
output = 1
[[agent.tools]]
name = "send_email"
approval = true
output = 2
[[model.turns]]
tool_calls = [{ tool = "search" }, { tool = "send_email" }, { tool = "ghost" }]
[[timeline]]
send = "hi"
"#;

fn parse(more: &str) -> Result<Scenario, String> {
    let text = format!("{HEAD}{more}\n");
    Scenario::parse(Path::new("a.toml"), &text).map_err(|e| e.message)
}

#[test]
fn a_tool_choice_names_a_tool_of_the_agent_or_a_provider_tool_of_its_route() {
    let route = "[[lifecycle]]\nhook = \"route\"\nat = \"run\"\n";
    let e = parse(&format!("{route}tool_choice = {{ tool = \"serch\" }}")).unwrap_err();
    assert_eq!(
        e,
        "lifecycle[0].tool_choice: route: the agent has no tool `serch`: did you mean `search`?"
    );
    assert!(parse(&format!("{route}tool_choice = {{ tool = \"search\" }}")).is_ok());
    let provider =
        "provider_tools = [{ type = \"web_search\" }]\ntool_choice = { tool = \"web_search\" }";
    assert!(parse(&format!("{route}{provider}")).is_ok());
}

#[test]
fn a_request_expectation_names_tools_the_agent_has() {
    let turn = "[[model.turns]]\ntext = [\"ok\"]\nexpect = { tools = [\"search\", \"send_mail\"] }";
    let e = parse(turn).unwrap_err();
    assert_eq!(
        e,
        "model.turns[1].expect.tools[1]: the agent has no tool `send_mail`: did you mean `send_email`?"
    );
    // A scenario that means the request oracle to report is let be.
    let violation = "expect = \"violation\"\noracle = \"request\"\n";
    let text = format!("{violation}{HEAD}{turn}\n");
    assert!(Scenario::parse(Path::new("a.toml"), &text).is_ok());
}

#[test]
fn a_tool_a_script_calls_may_be_named_though_the_agent_lacks_it() {
    // Its calls get a typed error, which after_tool_result hooks see.
    let hook = "[[lifecycle]]\nhook = \"replace_tool_output\"\ntool = \"ghost\"\noutput = 1";
    assert!(parse(hook).is_ok());
    let hook = "[[lifecycle]]\nhook = \"reject_tool\"\ntool = \"zzz\"\nmessage = \"m\"";
    assert_eq!(
        parse(hook).unwrap_err(),
        "lifecycle[0].tool: reject_tool: the agent has no tool `zzz` (tools here: `search`, `send_email`, `ghost`)"
    );
}

#[test]
fn t7_an_answer_names_a_call_the_scripts_make_unless_it_expects_an_error() {
    let answer = "[[timeline]]\nat = 5\napprove = { tool = \"send_email\", nth = 2 }";
    assert!(
        parse(answer)
            .unwrap_err()
            .starts_with("timeline[1].approve.nth: the scripts call `send_email` only once")
    );
    assert!(parse(&format!("{answer}\nexpect_error = \"has no call\"")).is_ok());
    let answer = "[[timeline]]\nat = 5\ndeny = { call = \"#4\" }";
    assert!(
        parse(answer)
            .unwrap_err()
            .starts_with("timeline[1].deny.call: the scripts make 3 tool calls in all")
    );
    assert!(parse("[[timeline]]\nat = 5\ndeny = { call = \"#3\" }").is_ok());
    // A call id comes from the seed: not judged at load.
    assert!(parse("[[timeline]]\nat = 5\ndeny = { call = \"call9_ffff\" }").is_ok());
}

#[test]
fn expect_waiting_names_tools_unless_the_check_is_meant_to_fail() {
    let check = "[[timeline]]\nat = 5\nexpect_waiting = [{ tool = \"send_emai\" }]";
    assert_eq!(
        parse(check).unwrap_err(),
        "timeline[1].expect_waiting[0].tool: the agent has no tool `send_emai`: did you mean `send_email`?"
    );
    let violation = "expect = \"violation\"\noracle = \"check\"\n";
    let text = format!("{violation}{HEAD}{check}\n");
    assert!(Scenario::parse(Path::new("a.toml"), &text).is_ok());
}
