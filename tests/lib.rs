//! `pai-suite` has no code of its own: it is the package that owns the
//! scenario suite (`scenarios/`, `snapshots/`) and `tests/it/scenarios.rs`.
