//! The one integration-test binary of `pai-suite`: the scenario suite against
//! its snapshots, the published schemas, and the README's checks.

mod readme;
mod scenarios;
mod schema;
