//! The predicate language of `approval = { when = "..." }` (SPEC T7: a
//! tool needs approval when a predicate on the call's input holds):
//! comparisons of input fields with literals, joined by `and` / `or`
//! (`and` binds tighter), each optionally negated with `not`.
//!
//! ```text
//! amount > 500
//! amount >= 100 and currency == "EUR"
//! not urgent == true or booking.fare > 500
//! ```
//!
//! A field is a dotted path into the input object (`booking.fare`); a
//! literal is a number, a string in double quotes, `true`, `false` or
//! `null`. `<`, `<=`, `>`, `>=` compare numbers only; `==` and `!=` any
//! value (numbers by value: `1 == 1.0`). A comparison whose field is
//! missing, or whose field is not a number under an ordering, is false
//! (`not` then makes it true). The simulator evaluates it twice and
//! independently of the runtime: in the scripted tool the runtime asks,
//! and in the T7 oracle that judges the run.

use std::fmt;

use serde_json::Value;

/// A parsed predicate, with the text it was written as.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicate {
    text: String,
    /// Alternatives (`or`) of conjunctions (`and`) of comparisons.
    any: Vec<Vec<Comparison>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Comparison {
    negated: bool,
    path: Vec<String>,
    op: Op,
    literal: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Op {
    fn ordering(self) -> bool {
        matches!(self, Op::Lt | Op::Le | Op::Gt | Op::Ge)
    }
}

/// The schema's pattern for a predicate: the same grammar, read by a
/// regular expression (the loader also refuses an ordering of a
/// non-number, which the pattern lets through).
pub const PATTERN: &str = r#"^\s*(not\s+)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\s*(<=|>=|==|!=|<|>)\s*(-?[0-9]+(\.[0-9]+)?|"[^"]*"|true|false|null)(\s+(and|or)\s+(not\s+)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\s*(<=|>=|==|!=|<|>)\s*(-?[0-9]+(\.[0-9]+)?|"[^"]*"|true|false|null))*\s*$"#;

impl Predicate {
    /// Reads `text`; an error says what was expected where.
    pub fn parse(text: &str) -> Result<Predicate, String> {
        let tokens = tokens(text)?;
        let mut at = 0;
        let mut any = vec![Vec::new()];
        loop {
            let c = comparison(&tokens, &mut at)?;
            if let Some(last) = any.last_mut() {
                last.push(c);
            }
            match tokens.get(at).map(String::as_str) {
                None => break,
                Some("and") => {}
                Some("or") => any.push(Vec::new()),
                Some(t) => return Err(format!("expected `and`, `or` or the end, found `{t}`")),
            }
            at += 1;
        }
        Ok(Predicate {
            text: text.trim().to_string(),
            any,
        })
    }

    /// Whether the predicate holds on `input`.
    pub fn holds(&self, input: &Value) -> bool {
        self.any
            .iter()
            .any(|all| all.iter().all(|c| c.holds(input)))
    }

    /// The numbers the predicate compares with, for a fuzzer to draw
    /// inputs on both sides of it: each with the field path it is
    /// compared at.
    pub fn bounds(&self) -> Vec<(Vec<String>, f64)> {
        let all = self.any.iter().flatten();
        let numbers = all.filter_map(|c| c.literal.as_f64().map(|n| (c.path.clone(), n)));
        numbers.collect()
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Comparison {
    fn holds(&self, input: &Value) -> bool {
        let found = self.path.iter().try_fold(input, |v, key| v.get(key));
        let result = match found {
            None => false,
            Some(value) => compare(value, self.op, &self.literal),
        };
        result != self.negated
    }
}

fn compare(value: &Value, op: Op, literal: &Value) -> bool {
    if op.ordering() {
        let (Some(a), Some(b)) = (value.as_f64(), literal.as_f64()) else {
            return false;
        };
        return match op {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            _ => a >= b,
        };
    }
    let equal = match (value.as_f64(), literal.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => value == literal,
    };
    equal == (op == Op::Eq)
}

/// One comparison from `tokens[*at..]`.
fn comparison(tokens: &[String], at: &mut usize) -> Result<Comparison, String> {
    let mut next = |what: &str| {
        let t = tokens.get(*at).cloned();
        *at += 1;
        t.ok_or_else(|| format!("expected {what}, found the end"))
    };
    let mut field = next("a field")?;
    let negated = field == "not";
    if negated {
        field = next("a field after `not`")?;
    }
    let path = path(&field)?;
    let op = match next("a comparison (<, <=, >, >=, ==, !=)")?.as_str() {
        "<" => Op::Lt,
        "<=" => Op::Le,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "==" => Op::Eq,
        "!=" => Op::Ne,
        t => {
            return Err(format!(
                "expected a comparison after `{field}`, found `{t}`"
            ));
        }
    };
    let literal = literal(&next("a value")?)?;
    if op.ordering() && !literal.is_number() {
        return Err(format!(
            "`{field}` can be ordered against a number only, not {literal}"
        ));
    }
    Ok(Comparison {
        negated,
        path,
        op,
        literal,
    })
}

fn path(field: &str) -> Result<Vec<String>, String> {
    let keys: Vec<String> = field.split('.').map(str::to_string).collect();
    let word = |k: &String| {
        k.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let keyword = ["and", "or", "not", "true", "false", "null"].contains(&field);
    match keys.iter().all(word) && !keyword {
        true => Ok(keys),
        false => Err(format!(
            "expected a field (a name, or names joined by dots), found `{field}`"
        )),
    }
}

fn literal(token: &str) -> Result<Value, String> {
    if let Some(s) = token.strip_prefix('"') {
        return Ok(Value::String(s.trim_end_matches('"').to_string()));
    }
    match token {
        "true" => return Ok(Value::Bool(true)),
        "false" => return Ok(Value::Bool(false)),
        "null" => return Ok(Value::Null),
        _ => {}
    }
    let number: Option<serde_json::Number> = token.parse().ok();
    number.map(Value::Number).ok_or_else(|| {
        format!("expected a number, a \"string\", true, false or null, found `{token}`")
    })
}

/// The text cut into words, comparisons and quoted strings (kept with
/// their opening quote).
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut s = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => s.push(c),
                    None => return Err(format!("the string \"{s} has no closing quote")),
                }
            }
            out.push(format!("\"{s}\""));
        } else if "<>=!".contains(c) {
            let mut op = String::from(c);
            chars.next();
            if chars.peek() == Some(&'=') {
                op.push('=');
                chars.next();
            }
            if op == "=" || op == "!" {
                return Err(format!("`{op}` is not a comparison: write == or !="));
            }
            out.push(op);
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || "<>=!\"".contains(c) {
                    break;
                }
                word.push(c);
                chars.next();
            }
            out.push(word);
        }
    }
    if out.is_empty() {
        return Err("an empty predicate: write a comparison such as `amount > 500`".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn holds(p: &str, input: Value) -> bool {
        Predicate::parse(p).unwrap().holds(&input)
    }

    /// SPEC T7: the predicate on a call's input, both sides of it.
    #[test]
    fn t7_comparisons_hold_on_their_side_only() {
        assert!(!holds("amount > 500", json!({"amount": 500})));
        assert!(holds("amount > 500", json!({"amount": 501})));
        assert!(holds("amount >= 500", json!({"amount": 500})));
        assert!(holds("amount<=1.5", json!({"amount": 1.5})));
        assert!(holds("b.fare == 3", json!({"b": {"fare": 3.0}})));
        assert!(holds("city != \"Oslo\"", json!({"city": "Rome"})));
        assert!(!holds("amount > 5", json!({"amount": "9"})));
        assert!(!holds("amount > 5", json!({})));
        assert!(holds("not amount > 5", json!({})));
        let p = "amount > 500 and currency == \"EUR\" or vip == true";
        assert!(holds(p, json!({"amount": 600, "currency": "EUR"})));
        assert!(!holds(p, json!({"amount": 600, "currency": "USD"})));
        assert!(holds(p, json!({"vip": true})));
    }

    #[test]
    fn nonsense_is_refused_with_what_was_expected() {
        let err = |p: &str| Predicate::parse(p).unwrap_err();
        assert!(err("").contains("empty"));
        assert!(err("amount > \"x\"").contains("ordered against a number"));
        assert!(err("amount = 5").contains("write == or !="));
        assert!(err("amount 5").contains("expected a comparison"));
        assert!(err("amount >").contains("found the end"));
        assert!(err("amount > 5 also").contains("expected `and`"));
        assert!(err("amount > five").contains("expected a number"));
        assert!(err("1x > 5").contains("expected a field"));
        assert!(err("and > 5").contains("expected a field"));
        assert!(err("city == \"Oslo").contains("no closing quote"));
    }

    #[test]
    fn the_schema_pattern_reads_what_the_parser_reads() {
        let pattern = regex::Regex::new(PATTERN).unwrap();
        for p in [
            "amount > 500",
            "not a.b == \"x y\" and c != null or d<=-2.5",
        ] {
            assert!(pattern.is_match(p) && Predicate::parse(p).is_ok(), "{p}");
        }
        for p in ["", "amount = 5", "amount 5", "amount > 5 also"] {
            assert!(!pattern.is_match(p) && Predicate::parse(p).is_err(), "{p}");
        }
    }

    #[test]
    fn bounds_name_the_numbers_and_their_fields() {
        let p = Predicate::parse("amount > 500 or b.c <= 2 and x == \"y\"").unwrap();
        let want = vec![
            (vec!["amount".to_string()], 500.0),
            (vec!["b".to_string(), "c".to_string()], 2.0),
        ];
        assert_eq!(p.bounds(), want);
        assert_eq!(p.to_string(), "amount > 500 or b.c <= 2 and x == \"y\"");
    }
}
