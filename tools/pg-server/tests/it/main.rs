//! The one integration-test binary of `pai-pg-server`, shaped like the
//! other crates' (`tests/it/main.rs`, one module per area).

mod server;
