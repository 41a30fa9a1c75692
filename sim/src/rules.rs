//! The rule catalogue (`sim/rules.toml`, embedded and parsed once): every
//! SPEC rule with its section and a one-line statement.

use std::sync::OnceLock;

use serde::Deserialize;

/// One rule of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The rule's id: a letter for the SPEC section and a number (`K2`), as
    /// scenarios name it in `rules = [...]`.
    pub id: String,
    /// The SPEC section the rule belongs to (`Phase order`).
    pub section: String,
    /// What the rule says, in one line of the project's own words.
    pub statement: String,
    /// Checked against a reference model by a property test.
    #[serde(default)]
    pub property: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Catalogue {
    #[allow(dead_code)]
    format: u32,
    rule: Vec<Rule>,
}

const SOURCE: &str = include_str!("../rules.toml");

/// Every rule, in catalogue order.
pub fn rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| match toml::from_str::<Catalogue>(SOURCE) {
        Ok(c) => c.rule,
        // The catalogue is part of the build; its unit test keeps it valid.
        Err(e) => unreachable!("sim/rules.toml does not parse: {e}"),
    })
}

/// The rule with this id.
pub fn rule(id: &str) -> Option<&'static Rule> {
    rules().iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::scenario::OracleId;

    #[test]
    fn the_catalogue_parses_with_unique_ids() {
        let ids: Vec<&str> = rules().iter().map(|r| r.id.as_str()).collect();
        let unique: BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(ids.len(), unique.len(), "duplicate ids in {ids:?}");
        let spec = "L1 L2 L3 L4 L13 L14 L5 L6 L7 L8 L9 L10 L11 L12 P1 P2 P3 P4 P5 P6 P7 P8 \
                    M1 M2 M3 M4 M5 S1 S2 S3 S4 S5 S6 T1 T2 T3 T4 T5 T6 T7 T8 T9 A1 A2 A3 A4 \
                    H1 H2 H3 H4 H5 H6 H7 K1 K2 K3 K4 K5 K6 R1 R2 R3 C1 C2 C3 \
                    D1 D2 D3 D4 D5 D6 D7 D8 X1 X2 X3";
        assert_eq!(
            ids,
            spec.split_whitespace().collect::<Vec<_>>(),
            "every SPEC rule, once, in SPEC order"
        );
        for r in rules() {
            assert!(!r.statement.is_empty() && !r.section.is_empty(), "{r:?}");
            assert!(!r.statement.contains('\n'), "one line: {}", r.id);
        }
    }

    #[test]
    fn every_oracle_judges_catalogued_rules() {
        for o in OracleId::ALL {
            for id in o.judges() {
                assert!(rule(id).is_some(), "oracle {o} judges unknown rule {id}");
            }
        }
    }
}
