//! Decoded thread records a database store keeps between requests. Each
//! entry is trusted only while its row's revision is unchanged (the store
//! checks that under its lock); this module only bounds and holds them.

use std::collections::BTreeMap;

/// At most `capacity` entries by thread id (0: none kept); when full, the
/// entry with the smallest id makes room.
#[derive(Debug)]
pub(crate) struct RecordCache<V> {
    records: BTreeMap<String, V>,
    capacity: usize,
}

impl<V> RecordCache<V> {
    pub(crate) fn new(capacity: usize) -> RecordCache<V> {
        RecordCache {
            records: BTreeMap::new(),
            capacity,
        }
    }

    /// Forgets everything: after a failed transaction, an entry may hold
    /// changes that never committed.
    pub(crate) fn clear(&mut self) {
        self.records.clear();
    }

    /// Takes thread `id`'s entry out (a request works on it, then keeps it
    /// again once its transaction committed).
    pub(crate) fn take(&mut self, id: &str) -> Option<V> {
        self.records.remove(id)
    }

    pub(crate) fn keep(&mut self, id: String, value: V) {
        if self.capacity == 0 {
            return;
        }
        if self.records.len() >= self.capacity && !self.records.contains_key(&id) {
            self.records.pop_first();
        }
        self.records.insert(id, value);
    }
}

#[cfg(test)]
mod tests {
    use super::RecordCache;

    #[test]
    fn keeps_at_most_its_capacity_and_nothing_at_zero() {
        let mut none = RecordCache::new(0);
        none.keep("a".into(), 1);
        assert_eq!(none.take("a"), None);
        let mut two = RecordCache::new(2);
        two.keep("b".into(), 1);
        two.keep("c".into(), 2);
        two.keep("b".into(), 3);
        two.keep("d".into(), 4);
        assert_eq!(
            (two.take("b"), two.take("c"), two.take("d")),
            (None, Some(2), Some(4))
        );
    }
}
