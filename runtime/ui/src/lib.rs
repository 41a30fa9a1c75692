//! Compile-time checks of pai-runtime's typed API: `tests/ui/` holds
//! programs that must compile and programs that must fail with the
//! checked-in compiler message (SPEC T6). They live in this package, not
//! in pai-runtime's own tests, because trybuild builds the crate under test
//! with every feature the workspace turned on for it: here pai-runtime is
//! a plain dependency, built without the SQLite and Postgres stores.
