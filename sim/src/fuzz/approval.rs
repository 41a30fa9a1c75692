//! Approval decided per call in generated cases (SPEC T7, D8): some
//! approval tools of a case ask only when a predicate on the call's input
//! holds, and the scripts' calls of them carry inputs on both sides of it,
//! its boundary included (the bound, one either side, or anywhere). From a
//! stream of its own, so the case's other draws keep their values.

use serde_json::{Value, json};

use crate::scenario::{ApprovalSpec, ScenarioSpec, ToolEntry};
use crate::world::Rng;

/// Turns half of `spec`'s scripted approval tools into tools that ask when
/// a predicate on `amount` holds, and gives each call of them an amount
/// drawn around the predicate's bound.
pub(super) fn approval(case_seed: u64, spec: &mut ScenarioSpec) {
    let mut rng = Rng::new(case_seed ^ 0x0A99_0FA1_5EED_0007);
    let mut bounds = Vec::new();
    for t in spec
        .agent
        .tools
        .iter_mut()
        .filter_map(ToolEntry::scripted_mut)
    {
        if t.approval != ApprovalSpec::Flag(true) || rng.below(2) == 0 {
            continue;
        }
        let bound = rng.below(1000) as i64;
        let predicate = match rng.below(4) {
            0 => format!("amount > {bound}"),
            1 => format!("amount >= {bound}"),
            2 => format!("amount < {bound}"),
            _ => format!("not amount <= {bound} or q == \"refund\""),
        };
        t.approval = ApprovalSpec::when(predicate);
        bounds.push((t.name.clone(), bound));
    }
    let scripts = std::iter::once(&mut spec.model).chain(spec.models.values_mut());
    let calls = scripts.flat_map(|m| m.turns.iter_mut().flat_map(|t| t.tool_calls.iter_mut()));
    for call in calls {
        let Some((_, bound)) = bounds.iter().find(|(name, _)| *name == call.tool) else {
            continue;
        };
        let amount = match rng.below(4) {
            0 => bound - 1,
            1 => *bound,
            2 => bound + 1,
            _ => rng.below(1000) as i64,
        };
        match &mut call.input {
            Value::Object(fields) => {
                fields.insert("amount".into(), json!(amount));
            }
            other => *other = json!({ "amount": amount }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Predicate;

    /// SPEC T7, D8: generated calls land on both sides of their tool's
    /// predicate, and on its boundary.
    #[test]
    fn t7_calls_are_drawn_on_both_sides_of_the_predicate() {
        let (mut held, mut not_held, mut boundary) = (0, 0, 0);
        for seed in 0..400 {
            let spec = crate::fuzz::case(seed);
            for t in spec.agent.tools.iter().filter_map(ToolEntry::scripted) {
                let ApprovalSpec::When(w) = &t.approval else {
                    continue;
                };
                let p = Predicate::parse(&w.when).unwrap();
                let bound = p.bounds()[0].1 as i64;
                let calls = spec.model.turns.iter().flat_map(|t| &t.tool_calls);
                for c in calls.filter(|c| c.tool == t.name) {
                    match p.holds(&c.input) {
                        true => held += 1,
                        false => not_held += 1,
                    }
                    let amount = c.input["amount"].as_i64().unwrap();
                    boundary += usize::from((amount - bound).abs() <= 1);
                }
            }
        }
        assert!(
            held > 20 && not_held > 20 && boundary > 20,
            "{held} {not_held} {boundary}"
        );
    }
}
