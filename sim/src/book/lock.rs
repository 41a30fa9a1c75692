//! Locks that survive a panic elsewhere: the world's records stay readable
//! after a planted panic in a hook or tool.

use std::sync::{Mutex, MutexGuard};

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
