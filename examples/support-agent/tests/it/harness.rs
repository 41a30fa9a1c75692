//! The harness every test uses: the agent's hooks registered under the
//! names scenario files `use`, with the configurations the fuzzer draws,
//! and the agent's own oracles.

use pai_runtime::Lifecycle;
use pai_runtime::message::ToolStatus;
use pai_runtime::{Part, Role};
use pai_sim::Harness;
use pai_sim::hooks::UserHook;
use pai_sim::observe::{Finding, Observation};
use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;

use pai_runtime::Tool;
use pai_runtime::event::EventKind;
use pai_runtime::store::Answer;
use pai_sim::UserTool;
use support_agent::{
    KnowledgeBase, LedgerKeeper, PiiRedactor, RefundInput, RefundLedger, RefundLimit, RefundPolicy,
    RefundTool, SupportContext,
};

/// A hook of the agent as a scenario entry: the same configuration type,
/// read from the entry's fields (a newtype, because `UserHook` and the
/// agent's types both live in other crates).
macro_rules! entry {
    ($entry:ident, $config:ty) => {
        #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $entry(pub $config);

        impl UserHook<SupportContext, RefundLedger> for $entry {
            fn build(&self, name: &str) -> Box<dyn Lifecycle<SupportContext>> {
                Box::new(self.0.hook(name))
            }
        }
    };
}

entry!(Pii, PiiRedactor);
entry!(Policy, RefundPolicy);
entry!(Limit, RefundLimit);
entry!(Knowledge, KnowledgeBase);
entry!(Ledger, LedgerKeeper);

/// The agent's refund tool as a scenario entry (`use = "refund_tool"`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Refund(pub RefundTool);

impl UserTool for Refund {
    fn build(&self, name: &str) -> Arc<dyn Tool> {
        self.0.tool(name)
    }
}

/// The refund tool's configurations: any approval limit up to $500.
pub fn refund_configs() -> impl Strategy<Value = Refund> {
    (20u64..500).prop_map(|approval_over| Refund(RefundTool { approval_over }))
}

/// What the model asks to refund: any order, any amount up to $10,000 (a
/// drawn amount rarely lands on a limit: the fuzzer adds the boundary).
pub fn refund_inputs() -> impl Strategy<Value = RefundInput> {
    (1u64..1000, 0u64..10_000).prop_map(|(order, amount)| RefundInput { order, amount })
}

/// The redactor's configurations: account numbers always, sometimes
/// phone numbers too, any replacement.
fn pii_configs() -> impl Strategy<Value = Pii> {
    let patterns = prop_oneof![
        Just(vec!["ACCT-[0-9]+"]),
        Just(vec!["ACCT-[0-9]+", "\\+44[0-9]+"]),
    ];
    (patterns, "\\[[a-z]{1,8}\\]").prop_map(|(patterns, replacement)| {
        let text = serde_json::json!({ "patterns": patterns, "replacement": replacement });
        serde_json::from_value(text).expect("valid patterns")
    })
}

fn policy_configs() -> impl Strategy<Value = Policy> {
    (1u64..500, "[A-Za-z ]{1,20}")
        .prop_map(|(max_amount, reply)| Policy(RefundPolicy { max_amount, reply }))
}

fn limit_configs() -> impl Strategy<Value = Limit> {
    (prop_oneof![Just("refund"), Just("lookup")], 1u64..500).prop_map(|(tool, max_amount)| {
        Limit(RefundLimit {
            tool: tool.into(),
            max_amount,
        })
    })
}

/// The ledger keeps the refunds of the scenarios' tool (`refund`) or of
/// the registered tool under its own name.
fn ledger_configs() -> impl Strategy<Value = Ledger> {
    prop_oneof![Just("refund"), Just("refund_tool")]
        .prop_map(|tool| Ledger(LedgerKeeper { tool: tool.into() }))
}

fn knowledge_configs() -> impl Strategy<Value = Knowledge> {
    proptest::collection::btree_map("[a-z]{3,6}", "[A-Za-z ]{1,30}", 0..3)
        .prop_map(|articles| Knowledge(KnowledgeBase { articles }))
}

/// The context each runtime of the simulator hands the agent's hooks:
/// the desk a deployment would configure.
pub fn desk() -> SupportContext {
    SupportContext {
        desk: "EU".into(),
        refund_cap: 300,
    }
}

/// The agent's hooks, its fuzz words and its oracles, on a harness of
/// the agent's own context and run metadata types.
pub fn harness() -> Harness<SupportContext, RefundLedger> {
    let mut h = Harness::with_context(desk);
    h.hook_with("pii", pii_configs)
        .hook_with("refund_ledger", ledger_configs)
        .hook_with("refund_policy", policy_configs)
        .hook_with("refund_limit", limit_configs)
        .hook_with("knowledge", knowledge_configs)
        .tool_with("refund_tool", refund_configs, refund_inputs)
        .fuzz_words([
            "ACCT-4417",
            "ACCT-90210",
            "a refund of $120",
            "a refund of $900",
        ])
        .oracle(
            "no_account_number_from_the_model",
            no_account_number_from_the_model,
        )
        .oracle("no_refund_over_the_limit", no_refund_over_the_limit)
        .oracle(
            "the_ledger_holds_each_refund_once",
            the_ledger_holds_each_refund_once,
        )
        .oracle(
            "no_large_refund_without_approval",
            no_large_refund_without_approval,
        );
    h
}

/// With the refund tool in the agent, no refund over its `approval_over`
/// runs without a person's approval before it: the agent's policy, said
/// once more, apart from the tool's own code.
pub fn no_large_refund_without_approval(obs: &Observation<'_>) -> Result<(), Finding> {
    for (name, config) in obs.tool_configs("refund_tool") {
        let tool: RefundTool = serde_json::from_value(config.clone().into())
            .map_err(|e| Finding::from(format!("unreadable refund_tool config: {e}")))?;
        let mut approved = BTreeSet::new();
        for e in obs.events() {
            match &e.kind {
                EventKind::Answered {
                    call_id,
                    answer: Answer::Approved,
                    ..
                } => {
                    approved.insert(call_id.clone());
                }
                EventKind::ToolStart {
                    tool: t,
                    call_id,
                    input,
                    ..
                } if t == name && !approved.contains(call_id) => {
                    let amount = input.get("amount").and_then(|a| a.as_u64()).unwrap_or(0);
                    if amount > tool.approval_over {
                        let message = format!(
                            "{name} refunded ${amount} without an approval (over ${})",
                            tool.approval_over
                        );
                        return Err(Finding::in_run(&e.run_id, message));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// With the redactor in the composition, nothing the model wrote that is
/// stored, heard by a watcher or sent back to a model holds an account
/// number (customers may type theirs; the model must not repeat it).
pub fn no_account_number_from_the_model(obs: &Observation<'_>) -> Result<(), Finding> {
    if obs.configs("pii").next().is_none() {
        return Ok(());
    }
    for thread in obs.threads() {
        for m in thread.messages.iter().filter(|m| m.role == Role::Assistant) {
            if let Some(at) = account_number(&m.text()) {
                let message = format!("stored assistant message {} holds {at:?}", m.seq);
                return Err(Finding {
                    run: m.pai.run_id.as_ref().map(|r| r.to_string()),
                    message,
                });
            }
        }
    }
    for call in obs.model_calls() {
        let said = call.messages().iter().filter(|m| m.role == Role::Assistant);
        if let Some(at) = said.filter_map(|m| account_number(&m.text())).next() {
            let message = format!(
                "model call {} was sent {at:?} in an assistant message",
                call.index() + 1
            );
            return Err(Finding::in_run(call.run(), message));
        }
    }
    Ok(())
}

/// With the limit in the composition, no call of its tool over the limit
/// ever starts.
pub fn no_refund_over_the_limit(obs: &Observation<'_>) -> Result<(), Finding> {
    for config in obs.configs("refund_limit") {
        let limit: RefundLimit = serde_json::from_value(config.clone().into())
            .map_err(|e| Finding::from(format!("unreadable refund_limit config: {e}")))?;
        for e in obs.events() {
            let pai_runtime::event::EventKind::ToolStart { tool, input, .. } = &e.kind else {
                continue;
            };
            let amount = input.get("amount").and_then(|a| a.as_u64());
            if *tool == limit.tool && amount.is_some_and(|a| a > limit.max_amount) {
                let message = format!(
                    "{tool} started with amount {amount:?} over {}",
                    limit.max_amount
                );
                return Err(Finding::in_run(&e.run_id, message));
            }
        }
    }
    Ok(())
}

/// Each run's typed [`RefundLedger`] holds exactly the refunds whose
/// successful results the thread holds for that run: none counted twice
/// (a refund run again after a crash), none that never committed, none
/// missed; said again from the stored thread, apart from the hook. A
/// thread whose history a rewrite changed is left aside (a regeneration
/// cuts results; the ledger keeps what the run did).
pub fn the_ledger_holds_each_refund_once(obs: &Observation<'_>) -> Result<(), Finding> {
    let tools: BTreeSet<String> = obs
        .configs("refund_ledger")
        .filter_map(|c| c.get("tool")?.as_str().map(str::to_string))
        .collect();
    let rewritten: BTreeSet<&str> = obs
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HistoryRewritten { .. }))
        .map(|e| e.thread_id.as_str())
        .collect();
    for thread in obs.threads().iter().filter(|t| !rewritten.contains(&*t.id)) {
        for run in &thread.runs {
            let ledger: RefundLedger = match &run.metadata {
                Some(v) => serde_json::from_value(v.clone())
                    .map_err(|e| Finding::in_run(&run.id, format!("unreadable ledger: {e}")))?,
                None => RefundLedger::default(),
            };
            let mut refunds: Vec<(u64, u64)> = thread
                .messages
                .iter()
                .filter(|m| m.pai.run_id.as_ref() == Some(&run.id))
                .flat_map(|m| &m.parts)
                .filter_map(|p| match p {
                    Part::ToolResult {
                        tool,
                        status: ToolStatus::Output,
                        output,
                        ..
                    } if tools.contains(tool) => {
                        let field = |k: &str| output.get(k).and_then(|v| v.as_u64());
                        Some((field("order")?, field("refunded")?))
                    }
                    _ => None,
                })
                .collect();
            refunds.sort_unstable();
            let mut orders = ledger.orders.clone();
            orders.sort_unstable();
            let committed: Vec<u64> = refunds.iter().map(|r| r.0).collect();
            let total: u64 = refunds.iter().map(|r| r.1).sum();
            if orders != committed || ledger.refunded != total {
                let message = format!(
                    "the ledger says orders {:?} for ${}, the thread holds refunds of orders {committed:?} for ${total}",
                    ledger.orders, ledger.refunded
                );
                return Err(Finding::in_run(&run.id, message));
            }
        }
    }
    Ok(())
}

/// The first account number in `text` (`ACCT-` and a digit).
fn account_number(text: &str) -> Option<String> {
    let at = text
        .match_indices("ACCT-")
        .find(|(i, _)| text[i + 5..].starts_with(|c: char| c.is_ascii_digit()))?;
    Some(text[at.0..].chars().take(12).collect())
}
