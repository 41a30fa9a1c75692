//! A fuzz campaign over compositions of the agent's hooks with the
//! simulator's library: every case judged twice by every oracle. A find
//! is shrunk into `tests/fuzz-finds/`; `PAI_SIM_FUZZ_CASES=2000 cargo
//! test -p support-agent fuzz` runs a longer campaign.

use crate::harness::harness;

#[test]
fn compositions_of_the_agents_hooks_pass_every_oracle() {
    harness().fuzz(60, 2026);
}
