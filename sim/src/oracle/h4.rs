//! SPEC H4: metadata is client-readable; private metadata never leaves the
//! server side. Judged from what each thread's owner read through the
//! client API at the end, what every watcher received, and the store tap's
//! record of the metadata values commits wrote:
//!
//! - a client's view of a thread holds exactly the stored metadata and the
//!   stored transcript-visible messages, in order;
//! - no private metadata value that a commit wrote (a string of at least
//!   four characters) appears in a client's view or in a live event, unless
//!   it is public anyway: a metadata write wrote it too, or it is part of a
//!   stored message or run the client may see.

use std::collections::BTreeSet;

use pai_runtime::store::StoredThread;
use serde_json::Value;

use super::observed::{Observed, Violation};
use crate::scenario::OracleId;
use crate::world::ClientView;

/// Private values shorter than this are too common to tell a leak by.
const DISTINCT: usize = 4;

pub(super) fn check(o: &Observed<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    for view in o.client_views {
        let Some(stored) = o.threads.iter().find(|t| t.id == view.state.id) else {
            continue;
        };
        out.extend(projection(view, stored));
    }
    let secrets = secrets(o);
    for view in o.client_views {
        let seen = format!("{:?}", view.state);
        out.extend(leaks(
            &secrets,
            &seen,
            &format!("{}'s client view of {}", view.owner, view.state.id),
        ));
    }
    for (watcher, event) in o.live {
        let seen = format!("{event:?}");
        out.extend(leaks(&secrets, &seen, &format!("watcher {watcher}")));
    }
    out
}

/// A view must be the stored thread's public projection.
fn projection(view: &ClientView, stored: &StoredThread) -> Vec<Violation> {
    let mut out = Vec::new();
    let thread = &stored.id;
    if view.state.metadata != stored.metadata {
        out.push(Violation::new(
            OracleId::H4,
            None,
            format!(
                "{}'s client read metadata {} of {thread}, but the thread holds {}",
                view.owner,
                Value::Object(view.state.metadata.clone()),
                Value::Object(stored.metadata.clone())
            ),
        ));
    }
    let shown: Vec<&str> = view.state.messages.iter().map(|m| m.id.as_str()).collect();
    let visible: Vec<&str> = stored
        .messages
        .iter()
        .filter(|m| m.visibility.transcript)
        .map(|m| m.id.as_str())
        .collect();
    if shown != visible {
        out.push(Violation::new(
            OracleId::H4,
            None,
            format!(
                "{}'s client read messages {shown:?} of {thread}, but its transcript is {visible:?}",
                view.owner
            ),
        ));
    }
    out
}

/// The private string values commits wrote that nothing public holds.
fn secrets(o: &Observed<'_>) -> BTreeSet<String> {
    let strings = |private: bool| -> BTreeSet<String> {
        o.tap
            .written
            .iter()
            .filter(|w| w.private == private)
            .filter_map(|w| match &w.value {
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            })
            .collect()
    };
    let public_writes = strings(false);
    let public: String = o
        .threads
        .iter()
        .map(|t| {
            let shown: Vec<_> = t
                .messages
                .iter()
                .filter(|m| m.visibility.transcript)
                .collect();
            format!("{shown:?}{:?}", t.runs)
        })
        .collect();
    strings(true)
        .into_iter()
        .filter(|s| s.chars().count() >= DISTINCT)
        .filter(|s| !public_writes.contains(s) && !public.contains(s.as_str()))
        .collect()
}

fn leaks(secrets: &BTreeSet<String>, seen: &str, whom: &str) -> Vec<Violation> {
    secrets
        .iter()
        .filter(|s| seen.contains(s.as_str()))
        .map(|s| {
            Violation::new(
                OracleId::H4,
                None,
                format!("{whom} received the private metadata value {s:?}"),
            )
        })
        .collect()
}
