//! The trusted writer's timeline actions (SPEC H2–H5, R1, K4): played
//! through the runtime's admin API, a second writer beside the runs.

use std::collections::BTreeMap;

use pai_runtime::{
    Role, Runtime,
    facade::AdminThread,
    message::Visibility,
    store::{Expect, StoredThread},
};

use crate::hooks::SimContext;
use crate::scenario::{Action, ExpectSpec, MutateSpec, VisibilitySpec};

/// What trusted writers last read of each thread (`read_thread`), and the
/// handles `bind_thread` bound, by name (SPEC H5).
#[derive(Default)]
pub(crate) struct Snapshots {
    read: BTreeMap<String, StoredThread>,
    handles: BTreeMap<String, AdminThread<SimContext>>,
}

/// Plays one facade action, through the handle it names (bound by an
/// earlier `bind_thread`) or an unbound one; `Ok(Some(..))` names what it did.
pub(crate) async fn facade(
    runtime: &Runtime<SimContext>,
    client: &str,
    thread: &str,
    action: &Action,
    handle: Option<&str>,
    snapshots: &mut Snapshots,
) -> Result<Option<String>, String> {
    if let Action::Bind(name) = action {
        let bound = runtime
            .admin()
            .bind(thread)
            .await
            .map_err(|e| e.to_string())?;
        let t = bound.read().await.map_err(|e| e.to_string())?;
        let i = t.incarnation;
        snapshots.handles.insert(name.clone(), bound);
        return Ok(Some(format!("handle {name} bound to incarnation {i}")));
    }
    let Snapshots { read, handles } = snapshots;
    let unbound;
    let admin = match handle.map(|h| (h, handles.get(h))) {
        Some((_, Some(bound))) => bound,
        Some((h, None)) => {
            return Err(format!(
                "handle {h} was never bound (its bind_thread failed)"
            ));
        }
        None => {
            unbound = runtime.admin().thread(thread);
            &unbound
        }
    };
    let snapshots = read;
    match action {
        Action::ReadThread => {
            let t = admin.read().await.map_err(|e| e.to_string())?;
            let v = t.version;
            snapshots.insert(thread.to_string(), t);
            Ok(Some(format!("read version {v}")))
        }
        Action::Mutate(spec) => mutate(admin, thread, spec, snapshots).await,
        Action::DeleteThread => match admin.delete().await.map_err(|e| e.to_string())? {
            Some(d) => Ok(Some(format!("deleted incarnation {}", d.incarnation))),
            None => Err(format!("thread {thread} does not exist")),
        },
        Action::CreateThread => {
            let i = admin.create(client).await.map_err(|e| e.to_string())?;
            Ok(Some(format!("incarnation {i}")))
        }
        Action::Regenerate(n) => regenerate(admin, thread, *n).await,
        Action::SetVisibility(v) => set_visibility(admin, thread, v).await,
        _ => Err(format!("{} is not a facade action", action.name())),
    }
}

/// Regenerates from the thread's `n`th user message (SPEC R1); names the
/// run it started.
async fn regenerate(
    admin: &AdminThread<SimContext>,
    thread: &str,
    n: usize,
) -> Result<Option<String>, String> {
    let t = admin.read().await.map_err(|e| e.to_string())?;
    let users: Vec<&str> = t
        .messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.id.as_str())
        .collect();
    let from = users
        .get(n - 1)
        .ok_or_else(|| format!("thread {thread} has no user message #{n}"))?;
    let r = admin.regenerate(from).await.map_err(|e| e.to_string())?;
    Ok(Some(r.run.to_string()))
}

/// Sets one message's visibility (SPEC R1); names the version it committed.
async fn set_visibility(
    admin: &AdminThread<SimContext>,
    thread: &str,
    v: &VisibilitySpec,
) -> Result<Option<String>, String> {
    let t = admin.read().await.map_err(|e| e.to_string())?;
    let m = t
        .messages
        .get(v.message - 1)
        .ok_or_else(|| format!("thread {thread} has no message #{}", v.message))?;
    let vis = Visibility {
        transcript: v.transcript,
        context: v.context,
    };
    let done = admin
        .set_visibility(vec![(m.id.clone(), vis)], Expect::Nothing)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(format!("version {}", done.version)))
}

/// A trusted writer's mutation with the expectation the scenario names.
async fn mutate(
    admin: &AdminThread<SimContext>,
    thread: &str,
    spec: &MutateSpec,
    snapshots: &BTreeMap<String, StoredThread>,
) -> Result<Option<String>, String> {
    let seen = match snapshots.get(thread) {
        Some(t) => Ok(t.clone()),
        None => admin.read().await.map_err(|e| e.to_string()),
    };
    let expect = match (spec.expect, seen) {
        // A bound handle's mutation goes to the facade even when the read
        // was refused (its incarnation deleted, SPEC H5): the facade must
        // refuse it too.
        (ExpectSpec::Nothing, Err(_)) if admin.incarnation().is_some() => Expect::Nothing,
        (_, Err(e)) => return Err(e),
        (ExpectSpec::Nothing, Ok(_)) => Expect::Nothing,
        (ExpectSpec::Version, Ok(seen)) => Expect::version_of(&seen),
        (ExpectSpec::Private, Ok(seen)) => Expect::private_metadata_of(&seen),
    };
    let spec = spec.clone();
    let done = admin
        .mutate(expect, move |s| {
            for text in &spec.append {
                s.append(Role::System, text.clone(), Visibility::ALL);
            }
            for (k, v) in &spec.metadata {
                s.set_metadata(k.clone(), v.clone());
            }
            for (k, v) in &spec.private {
                s.set_private(k.clone(), v.clone());
            }
            if spec.panic {
                panic!(
                    "{} the scenario's mutation panics after staging",
                    crate::planted::PLANTED_PANIC
                );
            }
            match spec.fail {
                true => Err("the scenario's mutation fails after staging".to_string()),
                false => Ok(()),
            }
        })
        .await;
    let (_, m) = done.map_err(|e| e.to_string())?;
    Ok(Some(format!("version {}", m.version)))
}
