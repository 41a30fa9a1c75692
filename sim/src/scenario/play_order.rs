//! The order a timeline is played in: entries at a time by their time,
//! an entry placed `after` a moment of a run right behind the entry before
//! it in the file (the timeline's check and its handles' check share it).

use super::spec::TimelineEntry;

/// Where each entry is played, as a time to sort by: an entry placed
/// `after` a moment keeps its place behind the entry before it in the
/// file; the others are played in time order.
pub(super) fn play_keys(entries: &[TimelineEntry]) -> Vec<u64> {
    play_keys_of(entries.iter().map(|e| e.after.is_none().then_some(e.at)))
}

/// [`play_keys`] of entries by their times (`None`: placed after a moment).
pub(super) fn play_keys_of(times: impl Iterator<Item = Option<u64>>) -> Vec<u64> {
    let mut key = 0;
    times
        .map(|at| {
            if let Some(at) = at {
                key = at;
            }
            key
        })
        .collect()
}
