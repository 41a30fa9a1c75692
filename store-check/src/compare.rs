//! Comparing a thread as the store's `Inspect` returns it with the model.

use std::fmt::Debug;

use pai_runtime::store::FencingToken;
use pai_runtime::store::{RunRecord, RunStatus, StoredThread};

use crate::model::thread::{Reason, RunModel, ThreadModel};

/// One field where the store's thread differs from the model's.
#[derive(Debug, Clone)]
pub(crate) struct Diff {
    pub(crate) field: String,
    pub(crate) rule: &'static str,
    pub(crate) expected: String,
    pub(crate) got: String,
}

fn same<T: PartialEq + Debug>(
    field: &str,
    rule: &'static str,
    want: &T,
    got: &T,
) -> Result<(), Diff> {
    match want == got {
        true => Ok(()),
        false => Err(Diff {
            field: field.to_string(),
            rule,
            expected: format!("{want:?}"),
            got: format!("{got:?}"),
        }),
    }
}

/// Compares the store's view of a thread with the model's; a token the
/// model did not know (after a delete) is learnt here if it did not go back.
pub(crate) fn compare_thread(
    model: &mut ThreadModel,
    got: Option<&StoredThread>,
) -> Result<(), Diff> {
    let exists = |t: Option<&StoredThread>| t.map(|t| t.incarnation);
    let Some(got) = got else {
        return match model.live() {
            true => same(
                "exists (incarnation)",
                "H5",
                &Some(model.incarnation),
                &None,
            ),
            false => Ok(()),
        };
    };
    if !model.live() {
        return same("exists (incarnation)", "H5", &None, &exists(Some(got)));
    }
    same("id", "H4", &model.id.as_str(), &got.id.as_str())?;
    same(
        "agent",
        "H4",
        &crate::model::thread::AGENT.to_string(),
        &got.agent,
    )?;
    same("owner", "H4", &model.owner, &got.owner)?;
    same("incarnation", "H5", &model.incarnation, &got.incarnation)?;
    same("version", "H1", &model.version, &got.version)?;
    compare_messages(model, got)?;
    same("metadata", "H2", &model.metadata, &got.metadata)?;
    same(
        "private_metadata",
        "H2",
        &model.private_metadata,
        &got.private_metadata,
    )?;
    let ids = |runs: &[String]| runs.to_vec();
    let want_ids: Vec<String> = model.runs.iter().map(|r| r.id.clone()).collect();
    let got_ids: Vec<String> = got.runs.iter().map(|r| r.id.to_string()).collect();
    same(
        "runs (ids, in admission order)",
        "K1",
        &ids(&want_ids),
        &got_ids,
    )?;
    for (want, run) in model.runs.iter().zip(&got.runs) {
        compare_run(want, run)?;
    }
    let holder = got.lease_holder.as_ref().map(|h| h.to_string());
    same("lease_holder", "K2", &model.lease.holder, &holder)?;
    compare_token(model, got.lease_token)
}

fn compare_messages(model: &ThreadModel, got: &StoredThread) -> Result<(), Diff> {
    let ids =
        |m: &[pai_runtime::Message]| m.iter().map(|m| (m.id.clone(), m.seq)).collect::<Vec<_>>();
    same(
        "messages (id, seq)",
        "H1",
        &ids(&model.messages),
        &ids(&got.messages),
    )?;
    for (want, m) in model.messages.iter().zip(&got.messages) {
        same(&format!("message {}", want.id), "H2", want, m)?;
    }
    Ok(())
}

fn compare_run(want: &RunModel, got: &RunRecord) -> Result<(), Diff> {
    let field = |f: &str| format!("run {}: {f}", want.id);
    let status_rule = match want.cancel_requested || want.status == RunStatus::Cancelled {
        true => "K6",
        false => "K1",
    };
    same(&field("status"), status_rule, &want.status, &got.status)?;
    same(&field("outcome"), status_rule, &want.outcome, &got.outcome)?;
    if let Reason::Exact(reason) = &want.reason {
        let rule = match reason.as_deref() == Some(pai_runtime::store::DELETED) {
            true => "H5",
            false => status_rule,
        };
        same(&field("reason"), rule, reason, &got.reason)?;
    }
    same(
        &field("cancel_requested"),
        "K6",
        &want.cancel_requested,
        &got.cancel_requested,
    )?;
    same(
        &field("trigger"),
        "K1",
        &want.trigger.as_str(),
        &got.trigger.as_str(),
    )?;
    same(&field("steps"), "K3", &want.steps, &got.steps)?;
    same(&field("episodes"), "K3", &want.episodes, &got.episodes)?;
    same(&field("metadata"), "H1", &want.metadata, &got.metadata)?;
    same(&field("waiting"), "T9", &want.waiting, &got.waiting)?;
    same(
        &field("calls_closed"),
        "T9",
        &want.calls_closed,
        &got.calls_closed,
    )?;
    same(
        &field("handed_over"),
        "K3",
        &want.handed_over,
        &got.handed_over,
    )
}

fn compare_token(model: &mut ThreadModel, got: FencingToken) -> Result<(), Diff> {
    let lease = &mut model.lease;
    if lease.token_known {
        return same("lease_token", "K2", &lease.token, &got);
    }
    match got >= lease.token {
        true => {
            lease.token = got;
            lease.token_known = true;
            Ok(())
        }
        false => Err(Diff {
            field: "lease_token".into(),
            rule: "K2",
            expected: format!(">= {} (tokens only grow)", lease.token),
            got: got.to_string(),
        }),
    }
}
