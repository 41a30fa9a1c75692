//! The rule catalogue (`sim/rules.toml`, embedded): every SPEC rule with its
//! section and a one-line statement, and what checks each rule.

mod catalogue;
mod coverage;

pub use catalogue::{Rule, rule, rules};
pub use coverage::{RuleCoverage, TestRef, coverage, tests_in};
