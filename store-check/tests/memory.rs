//! The suite against MemoryStore, the runtime's own store.

use std::sync::Arc;

use pai_runtime::{Clock, MemoryStore};
use pai_store_check::{Config, assert_store};

fn memory(clock: Arc<dyn Clock>) -> MemoryStore {
    MemoryStore::new(Some(clock))
}

/// H1–H5, K1–K4, K6 (with T7, T9, A4): random sequences on MemoryStore
/// agree with the reference model. `PAI_STORE_CHECK_CASES` raises the count.
#[test]
fn memory_store_conforms() {
    let config = Config {
        regressions: Some(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/memory.proptest-regressions"
        )),
        ..Config::default()
    };
    assert_store(memory, &config);
}
