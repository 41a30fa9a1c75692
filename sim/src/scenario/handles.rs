//! The checks of trusted handles (SPEC H5): a `bind_thread` names a handle
//! once, and a `handle` names one bound earlier (in time order) on the same
//! thread, on an action a bound handle can take.

use std::collections::BTreeMap;

use super::field::{CheckError, Segment, fail};
use super::spec::TimelineEntry;

/// Where each handle is bound: its entry's index, time and thread.
struct Bound<'a> {
    index: usize,
    at: u64,
    thread: &'a str,
}

pub(super) fn check(entries: &[TimelineEntry]) -> Result<(), CheckError> {
    let keys = super::play_order::play_keys(entries);
    let mut bound: BTreeMap<&str, Bound<'_>> = BTreeMap::new();
    for (i, t) in entries.iter().enumerate() {
        let Some(name) = &t.bind_thread else { continue };
        let at = [
            Segment::Key("timeline"),
            Segment::Index(i),
            Segment::Key("bind_thread"),
        ];
        if name.is_empty() {
            return fail(&at, "a trusted handle needs a name");
        }
        if t.handle.is_some() {
            return fail(&at, "a `bind_thread` binds a new handle: drop `handle`");
        }
        let b = Bound {
            index: i,
            at: keys[i],
            thread: &t.thread,
        };
        if let Some(first) = bound.insert(name, b) {
            let message = format!(
                "handle {name:?} is already bound by timeline[{}]",
                first.index
            );
            return fail(&at, message);
        }
    }
    for (i, t) in entries.iter().enumerate() {
        let Some(name) = &t.handle else { continue };
        use_of((i, keys[i]), t, name, &bound)?;
    }
    Ok(())
}

/// One entry's `handle`: an action a handle can take, a handle bound on its
/// thread before it (same time: earlier in the file, as the timeline runs;
/// an entry placed after a moment runs where the entry before it does).
fn use_of(
    (i, key): (usize, u64),
    t: &TimelineEntry,
    name: &str,
    bound: &BTreeMap<&str, Bound<'_>>,
) -> Result<(), CheckError> {
    let at = [
        Segment::Key("timeline"),
        Segment::Index(i),
        Segment::Key("handle"),
    ];
    let acts = t.read_thread
        || t.mutate.is_some()
        || t.delete_thread
        || t.regenerate.is_some()
        || t.set_visibility.is_some();
    if !acts {
        return fail(
            &at,
            "a trusted handle acts with read_thread, mutate, delete_thread, regenerate or set_visibility",
        );
    }
    let Some(b) = bound.get(name) else {
        return fail(&at, format!("no `bind_thread` binds a handle {name:?}"));
    };
    if b.thread != t.thread {
        let message = format!(
            "handle {name:?} is bound to thread {:?} (timeline[{}]), not {:?}",
            b.thread, b.index, t.thread
        );
        return fail(&at, message);
    }
    if (b.at, b.index) >= (key, i) {
        let message = format!(
            "handle {name:?} is bound at {}ms by timeline[{}], after this entry runs",
            b.at, b.index
        );
        return fail(&at, message);
    }
    Ok(())
}

#[cfg(test)]
#[path = "handles_tests.rs"]
mod tests;
