//! Library mode, registered tools (issue 28 item 1): tools the test
//! registers with `Harness::tool`, named by `[[agent.tools]] use = "..."`
//! entries of the scenarios in `sim/tests/harness/scenarios/` (which
//! `harness.rs` runs with every oracle against their snapshots).

use std::path::Path;
use std::sync::Arc;

use pai_runtime::{Tool, ToolError, tool_fn, typed_tool};
use pai_sim::{Behaviour, Harness, UserTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Refunds an order in `currency`, up to `limit`: the output is computed
/// from the call's input; an amount over the limit is a deliberate failure.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Refund {
    currency: String,
    limit: u64,
}

#[derive(Deserialize)]
struct RefundInput {
    order: u64,
    amount: u64,
}

impl UserTool for Refund {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let (currency, limit) = (self.currency.clone(), self.limit);
        tool_fn(
            name,
            "Refunds an order, up to a limit.",
            move |_cx, i: RefundInput| {
                let currency = currency.clone();
                async move {
                    if i.amount > limit {
                        let over = json!({ "error": "over the limit", "limit": limit });
                        return Err(ToolError::Fail(over));
                    }
                    let refunded = format!("{} {currency}", i.amount);
                    Ok(json!({ "order": i.order, "refunded": refunded }))
                }
            },
        )
    }
}

/// A ledger that is down: every call throws `message`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Ledger {
    message: String,
}

impl UserTool for Ledger {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let message = self.message.clone();
        tool_fn(name, "Records an order.", move |_cx, _: Value| {
            let message = message.clone();
            async move { Err::<Value, _>(ToolError::Throw(message)) }
        })
    }
}

/// A note written by the tool's code: `prefix` and the call's number.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Lookup {
    prefix: String,
}

#[derive(Deserialize)]
struct LookupInput {
    n: u64,
}

impl UserTool for Lookup {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let prefix = self.prefix.clone();
        tool_fn(name, "Looks a number up.", move |_cx, i: LookupInput| {
            let note = format!("{prefix}{}", i.n);
            async move { Ok::<_, ToolError>(json!({ "note": note })) }
        })
    }
}

/// A tool that asks for approval itself (a `typed_tool` with approval).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Payout {}

impl UserTool for Payout {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        let t = typed_tool(name, "Pays out.", true, |_cx, i: Value| async move {
            Ok::<_, ToolError>(i)
        });
        t.tool()
    }
}

/// A client tool: the simulator refuses to register it under a scenario.
#[derive(Debug, Deserialize, JsonSchema)]
struct Pick {}

impl UserTool for Pick {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        pai_runtime::client_tool::<Value, Value>(name, "The user picks.").tool()
    }
}

/// Registers the tools the scenarios of the folder use.
pub(crate) fn register_tools(h: &mut Harness) {
    h.tool::<Refund>("refund")
        .tool::<Ledger>("ledger")
        .tool::<Lookup>("lookup")
        .tool::<Payout>("payout")
        .tool::<Pick>("pick");
}

fn harness() -> Harness {
    let mut h = Harness::new();
    register_tools(&mut h);
    h
}

fn run(file: &str) -> (pai_sim::Scenario, pai_sim::Report) {
    crate::harness::run_with(&harness(), file)
}

/// The registered tool computes its output from its input and its
/// configuration, under the name the entry gave it; its typed input
/// refuses a call without an amount.
#[test]
fn a_registered_tool_computes_its_output_under_its_name() {
    let (s, report) = run("a_registered_tool_computes_its_output.toml");
    let tool = &s.agent.tools[0];
    assert_eq!((tool.name.as_str(), tool.latency_ms), ("refunds", 5));
    assert!(matches!(&tool.behaviour, Behaviour::Registered(u) if u.use_name == "refund"));
    assert_eq!(tool.description, "Refunds an order, up to a limit.");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    assert!(
        t.contains("tool_end call1_")
            && t.contains(r#"refunds output {"order":7,"refunded":"40 EUR"}"#),
        "{t}"
    );
    assert!(t.contains("error(invalid_input)"), "{t}");
}

/// `approval = true`: the call waits, is approved, then the author's
/// tool runs (after its latency, in the resumed episode).
#[test]
fn a_registered_tool_with_approval_waits_and_runs_once_approved() {
    let (s, report) = run("a_registered_tool_waits_for_approval.toml");
    assert_eq!(s.agent.tools[0].approval, pai_sim::Approval::Always);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    let waits = t.find("wait on [call1_").expect("the run waits");
    let approved = t.find("approved v").expect("the call is approved");
    let ran = t
        .find(r#"refund output {"order":7,"refunded":"120 USD"}"#)
        .expect("the tool ran");
    assert!(waits < approved && approved < ran, "{t}");
    assert!(
        t.contains("15ms"),
        "the tool's latency after the approval at 10ms: {t}"
    );
}

/// A registered tool's throw is the run's tool error (the fixed message to
/// the model, the detail in the log); its deliberate failure reaches the
/// model as its value.
#[test]
fn a_registered_tool_that_fails_is_the_runs_tool_error() {
    let (_, report) = run("a_registered_tool_fails.toml");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let t = &report.transcript;
    assert!(t.contains("error(throw)"), "{t}");
    assert!(
        t.contains("ledger database is down"),
        "the log keeps the detail: {t}"
    );
    let calls = &t[t.find("== model calls ==").unwrap()..t.find("== thread").unwrap()];
    assert!(!calls.contains("ledger database is down"), "{calls}");
    assert!(
        t.contains(r#"error(fail) {"error":"over the limit","limit":100}"#),
        "{t}"
    );
}

/// T5 reads a scripted tool's output from the file and a registered
/// tool's from what it returned: a text the registered tool wrote reaches
/// the model (through on_output and the metadata overlay) though a
/// scripted tool of the scenario would throw the same text. Fails (T5:
/// "was sent what vault threw") without that stand-down.
#[test]
fn t5_does_not_read_a_registered_tools_text_as_a_leaked_throw() {
    let (_, report) = run("a_registered_tools_output_reaches_the_model.toml");
    let sent = r#"system: "run metadata: {\"last\":{\"note\":\"code 4417\"}}""#;
    assert!(report.transcript.contains(sent), "{}", report.transcript);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
}

/// A tool of kind approval waits without `approval = true`; a client tool
/// is refused where the entry names it.
#[test]
fn a_registered_tools_own_kind_counts() {
    let h = harness();
    let head = "name = \"n\"\nrules = [\"T7\"]\n[[timeline]]\nsend = \"hi\"\n\n[[agent.tools]]\n";
    let s = h
        .parse("x.toml", &format!("{head}use = \"payout\"\n"))
        .unwrap();
    assert_eq!(s.agent.tools[0].approval, pai_sim::Approval::Always);
    let e = h
        .parse("x.toml", &format!("{head}use = \"pick\"\n"))
        .unwrap_err();
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    assert!(e.message.contains("client = true"), "{}", e.message);
}

/// A name no one registered, a configuration its type refuses, and a
/// registered tool under the plain loader are located errors.
#[test]
fn unknown_tools_and_bad_tool_configurations_are_located_errors() {
    let h = harness();
    let head = "name = \"n\"\nrules = [\"T2\"]\n[[timeline]]\nsend = \"hi\"\n\n[[agent.tools]]\n";
    let err = |body: &str| h.parse("x.toml", &format!("{head}{body}")).unwrap_err();
    let e = err("use = \"refnud\"\n");
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    assert!(
        e.message.contains("no tool is registered as \"refnud\""),
        "{}",
        e.message
    );
    assert!(
        e.message
            .contains("[\"ledger\", \"lookup\", \"payout\", \"pick\", \"refund\"]"),
        "{}",
        e.message
    );
    let e = err("use = \"refund\"\ncurrency = \"EUR\"\n");
    assert!(e.message.contains("missing field `limit`"), "{}", e.message);
    assert_eq!(e.location.map(|l| l.0), Some(7), "{}", e.render(false));
    let e = err("use = \"refund\"\ncurrency = \"EUR\"\nlimit = 1\nrate = 2\n");
    assert!(e.message.contains("unknown field `rate`"), "{}", e.message);
    let e = err("use = \"refund\"\nname = \"\"\ncurrency = \"EUR\"\nlimit = 1\n");
    assert!(e.message.contains("a tool needs a name"), "{}", e.message);
    let plain = pai_sim::Scenario::parse(
        Path::new("x.toml"),
        &format!("{head}use = \"refund\"\ncurrency = \"EUR\"\nlimit = 1\n"),
    );
    let e = plain.unwrap_err();
    assert!(
        e.message
            .contains("only a pai_sim::Harness knows tools by name"),
        "{}",
        e.message
    );
}

/// The harness's schema checks each registered tool entry against its
/// configuration type, with the entry's own fields beside it.
#[test]
fn the_schema_names_each_registered_tool_with_its_fields() {
    let schema = harness().schema();
    let entries = schema["$defs"]["UseToolSpec"]["oneOf"].as_array().unwrap();
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["properties"]["use"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ledger", "lookup", "payout", "pick", "refund"]);
    let refund = &entries[4];
    assert_eq!(refund["required"][0], "use");
    assert!(
        refund["required"]
            .as_array()
            .unwrap()
            .contains(&"limit".into())
    );
    assert_eq!(refund["additionalProperties"], false, "{refund}");
    for field in ["currency", "name", "approval", "latency_ms", "on_output"] {
        assert!(refund["properties"][field].is_object(), "{field}: {refund}");
    }
    assert!(schema["$defs"]["ToolSpec"].is_object());
}
