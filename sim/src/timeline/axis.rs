//! The horizontal axis: virtual time, stretched so that things happening at
//! the same virtual millisecond still stand apart.
//!
//! Every item on the page sits at a [`Pos`]: its virtual time and its rank
//! among the items of its family at that time (runtime events are ranked
//! by their order in the event log, over all runs; each watcher ranks its
//! own live events). Each distinct time is a *column* wide enough for the
//! largest rank at that time (one [`SLOT_PX`] per rank); between two columns
//! lies a gap of [`MIN_GAP_PX`] plus a share of [`TIME_PX`] proportional to
//! the virtual time that passed, so the whole run's virtual duration is
//! spread linearly over `TIME_PX` pixels. Within an instant the x position
//! follows event order; across instants it follows time, and a tick labels
//! each column with its millisecond.

use std::collections::BTreeMap;

/// Width of one rank inside a column.
pub(super) const SLOT_PX: u64 = 16;
/// The least gap between two columns.
const MIN_GAP_PX: u64 = 10;
/// The pixels the whole virtual duration is spread over, besides the columns.
const TIME_PX: u64 = 720;
/// Room before the first column.
const PAD_PX: u64 = 8;

/// A place on the axis: virtual time, then rank at that time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Pos {
    pub(super) at: u64,
    pub(super) rank: u32,
}

/// Ranks items of one family by their order at each virtual time.
#[derive(Debug, Default)]
pub(super) struct Ranker(BTreeMap<u64, u32>);

impl Ranker {
    /// The position of the next item of this family at `at`.
    pub(super) fn next(&mut self, at: u64) -> Pos {
        let n = self.0.entry(at).or_insert(0);
        let pos = Pos { at, rank: *n };
        *n += 1;
        pos
    }
}

/// Where each column starts, and how wide the whole axis is.
#[derive(Debug)]
pub(super) struct Axis {
    /// Column start (px) and width in slots, by virtual time.
    columns: BTreeMap<u64, (u64, u64)>,
    width: u64,
}

impl Axis {
    /// An axis for these positions over a run of `duration` virtual ms
    /// (which gets a column of its own, so the axis reaches the end).
    pub(super) fn new(positions: impl IntoIterator<Item = Pos>, duration: u64) -> Axis {
        let mut slots: BTreeMap<u64, u64> = BTreeMap::from([(0, 1), (duration, 1)]);
        for p in positions {
            let n = slots.entry(p.at).or_insert(1);
            *n = (*n).max(u64::from(p.rank) + 1);
        }
        let span = slots.keys().next_back().copied().unwrap_or(0).max(1);
        let mut columns = BTreeMap::new();
        let (mut x, mut before) = (PAD_PX, None::<u64>);
        for (&at, &n) in &slots {
            if let Some(prev) = before {
                x += MIN_GAP_PX + (at - prev) * TIME_PX / span;
            }
            columns.insert(at, (x, n));
            x += n * SLOT_PX;
            before = Some(at);
        }
        Axis {
            columns,
            width: x + PAD_PX,
        }
    }

    /// The x of a position (px from the start of a track).
    pub(super) fn x(&self, p: Pos) -> u64 {
        let (start, _) = self.columns.get(&p.at).copied().unwrap_or_default();
        start + u64::from(p.rank) * SLOT_PX
    }

    /// The whole axis width in px.
    pub(super) fn width(&self) -> u64 {
        self.width
    }

    /// One tick per column: its virtual time, x and width in px.
    pub(super) fn ticks(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.columns
            .iter()
            .map(|(&at, &(x, n))| (at, x, n * SLOT_PX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_spread_by_rank_and_time_adds_a_gap() {
        let mut r = Ranker::default();
        let (a, b, c) = (r.next(0), r.next(0), r.next(100));
        let axis = Axis::new([a, b, c], 100);
        assert_eq!(axis.x(a), PAD_PX);
        assert_eq!(axis.x(b), PAD_PX + SLOT_PX);
        assert_eq!(axis.x(c), PAD_PX + 2 * SLOT_PX + MIN_GAP_PX + TIME_PX);
        assert_eq!(axis.width(), axis.x(c) + SLOT_PX + PAD_PX);
        assert!(axis.x(b) < axis.x(c));
    }

    #[test]
    fn an_empty_run_still_has_an_axis() {
        let axis = Axis::new([], 0);
        assert_eq!(axis.ticks().count(), 1);
        assert!(axis.width() > 0);
    }
}
