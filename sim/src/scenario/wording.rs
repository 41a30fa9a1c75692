//! The wording of load errors (SPEC X1), in one place: serde's messages
//! about a scenario's values said in the words of the scenario format (a
//! time in virtual ms, a whole number, a table) rather than Rust's (`u64`,
//! `struct AgentSpec`), and a name close to a misspelt one ("did you mean").

/// The candidate closest to `word`, when it is close enough to be what a
/// typo meant: a Damerau–Levenshtein distance of 1 (2 for words of five
/// characters or more), or a normalized similarity of 0.8 or more, and
/// closer than any other candidate (a tie suggests nothing).
pub(crate) fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let len = word.chars().count();
    let allowed = if len >= 5 { 2 } else { 1 };
    let mut best: Option<(usize, &str)> = None;
    let mut tied = false;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = strsim::damerau_levenshtein(word, c);
        let close =
            (d <= allowed && d < len) || strsim::normalized_damerau_levenshtein(word, c) >= 0.8;
        if !close {
            continue;
        }
        match best {
            Some((b, _)) if d > b => {}
            Some((b, _)) if d == b => tied = true,
            _ => {
                best = Some((d, c));
                tied = false;
            }
        }
    }
    best.filter(|_| !tied).map(|(_, c)| c)
}

/// serde's `message` about a scenario value, reworded: an unknown field
/// or variant gets the closest known name; a value of the wrong type says
/// what the field takes. `key`: the key the value stands at, when the file
/// tells (it decides whether a number is a time).
pub(super) fn reword(message: &str, key: Option<&str>) -> String {
    if let Some(out) = suggest(message) {
        return out;
    }
    match message.rsplit_once(", expected ") {
        Some((head, expected)) => match takes(expected, key) {
            Some(words) => format!("{head}, expected {words}"),
            None => message.to_string(),
        },
        None => message.to_string(),
    }
}

/// "unknown field `sedn`, expected one of `at`, `send`" with the closest
/// expected name: "unknown field `sedn`: did you mean `send`? (expected
/// one of ...)"; `None` when nothing is close.
fn suggest(message: &str) -> Option<String> {
    let rest = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.strip_prefix(p))?;
    let (word, tail) = rest.split_once('`')?;
    let expected = tail.strip_prefix(", ")?;
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    // The timeline's time is `at`; faults name theirs `at_ms` (their `at`
    // is a store request), so one is often written for the other.
    let best = match (word, names.contains(&"at")) {
        ("at_ms", true) => "at",
        _ => closest(word, names.iter().copied())?,
    };
    let head = &message[..message.len() - tail.len()];
    Some(format!("{head}: did you mean `{best}`? ({expected})"))
}

/// What a value of serde's `expected` type is, in the format's words.
fn takes(expected: &str, key: Option<&str>) -> Option<String> {
    let unsigned = ["u8", "u16", "u32", "u64", "u128", "usize"];
    let words = match expected {
        t if unsigned.contains(&t) && key.is_some_and(is_time) => {
            "a time in virtual ms, 0 or more".to_string()
        }
        "u8" => "a whole number from 0 to 255".into(),
        "u16" => "a whole number from 0 to 65535".into(),
        "u32" => "a whole number from 0 to 4294967295".into(),
        "u64" | "u128" | "usize" => "a whole number, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a sequence" => "a list (`[...]`)".into(),
        "a map" => "a table (`{ ... }`)".into(),
        // A fault's `at` names a store request; its time is `at_ms`.
        "struct RequestAt" => "a store request to place the fault at, a table such as \
             `at = { request = \"claim\", nth = 1 }` (a fault's time in virtual ms is `at_ms`)"
            .into(),
        t if t.starts_with("struct ") => "a table (`{ ... }`)".into(),
        "internally tagged enum HookSpec" => "a table with `hook = \"...\"`".into(),
        t if t.starts_with("internally tagged enum ") => "a table with `kind = \"...\"`".into(),
        _ => return None,
    };
    Some(words)
}

/// Whether a field holds a virtual time: `at`, `ms`, or a name in `_ms`.
fn is_time(key: &str) -> bool {
    key == "at" || key == "ms" || key.ends_with("_ms")
}

/// The key a value at byte `offset` of TOML `text` stands at, read back
/// from the value's start: `key = value`, also inside an inline table.
/// `None` inside an array, or where the text does not tell.
pub(super) fn toml_key_before(text: &str, offset: usize) -> Option<&str> {
    let before = text.get(..offset.min(text.len()))?;
    let key = before.trim_end().strip_suffix('=')?.trim_end();
    let key = match key.strip_suffix('"') {
        Some(quoted) => &quoted[quoted.rfind('"')? + 1..],
        None => {
            let start = key
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .map_or(0, |i| i + 1);
            &key[start..]
        }
    };
    Some(key).filter(|k| !k.is_empty())
}

/// The key of the innermost JSON object member that byte `offset` of
/// `text` lies in (serde_json reports a value's error at or just after
/// it); `None` inside an array.
pub(super) fn json_key_at(text: &str, offset: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let end = offset.min(bytes.len());
    // Each open container: its current key (`None` for an array).
    let mut stack: Vec<Option<&str>> = Vec::new();
    let mut last_string: Option<&str> = None;
    let mut i = 0;
    while i < end {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                last_string = text.get(start..i.min(bytes.len()));
            }
            b':' => {
                if let Some(top) = stack.last_mut() {
                    *top = last_string;
                }
            }
            b'{' | b'[' => stack.push(None),
            b'}' | b']' => drop(stack.pop()),
            _ => {}
        }
        i += 1;
    }
    stack.pop().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_name_is_suggested_only_when_close_and_alone() {
        let fields = ["at", "send", "steer", "cancel"];
        assert_eq!(closest("sedn", fields), Some("send"));
        assert_eq!(closest("sned", fields), Some("send"));
        assert_eq!(closest("ta", fields), Some("at"));
        assert_eq!(closest("hello", fields), None);
        assert_eq!(
            closest("rejekt_tool", ["reject_tool", "redact"]),
            Some("reject_tool")
        );
        // Two equally close names: no guess.
        assert_eq!(closest("K7", ["K1", "K2"]), None);
        // One letter is not a word to correct.
        assert_eq!(closest("x", ["t"]), None);
    }

    #[test]
    fn unknown_names_get_a_suggestion() {
        let m = "unknown field `sedn`, expected one of `at`, `send`, `steer`";
        assert_eq!(
            reword(m, None),
            "unknown field `sedn`: did you mean `send`? (expected one of `at`, `send`, `steer`)"
        );
        let m = "unknown variant `rejekt_tool`, expected `route` or `reject_tool`";
        assert_eq!(
            reword(m, Some("hook")),
            "unknown variant `rejekt_tool`: did you mean `reject_tool`? (expected `route` or `reject_tool`)"
        );
        let far = "unknown field `zzz`, expected `at` or `send`";
        assert_eq!(reword(far, None), far);
    }

    #[test]
    fn a_time_written_the_other_sections_way_is_pointed_to_its_name() {
        let m = "unknown field `at_ms`, expected one of `at`, `client`, `send`";
        assert!(
            reword(m, None).contains("did you mean `at`?"),
            "{}",
            reword(m, None)
        );
        let m = "invalid type: integer `5`, expected struct RequestAt";
        let out = reword(m, Some("at"));
        assert!(
            out.contains("a fault's time in virtual ms is `at_ms`"),
            "{out}"
        );
    }

    #[test]
    fn number_types_are_said_in_words() {
        let m = "invalid type: string \"soon\", expected u64";
        assert_eq!(
            reword(m, Some("at")),
            "invalid type: string \"soon\", expected a time in virtual ms, 0 or more"
        );
        assert_eq!(
            reword(m, Some("latency_ms")),
            "invalid type: string \"soon\", expected a time in virtual ms, 0 or more"
        );
        assert_eq!(
            reword(m, Some("seed")),
            "invalid type: string \"soon\", expected a whole number, 0 or more"
        );
        assert_eq!(
            reword("invalid value: integer `-1`, expected usize", None),
            "invalid value: integer `-1`, expected a whole number, 0 or more"
        );
        let s = "invalid type: integer `3`, expected a string";
        assert_eq!(reword(s, Some("name")), s);
    }

    #[test]
    fn the_key_of_a_value_is_read_back_from_it() {
        assert_eq!(toml_key_before("at = \"soon\"", 5), Some("at"));
        let inline = "approve = { tool = \"x\", nth = \"2\" }";
        let at = inline.find("\"2\"").unwrap();
        assert_eq!(toml_key_before(inline, at), Some("nth"));
        assert_eq!(toml_key_before("\"a b\" = 3", 8), Some("a b"));
        assert_eq!(toml_key_before("fail_at = [1, \"x\"]", 14), None);
        let json = "{\"at\": \"so:{n\"}";
        assert_eq!(json_key_at(json, 14), Some("at"));
        assert_eq!(json_key_at(json, 7), Some("at"));
        let nested = "{\"a\": {\"latency_ms\": -3}, \"b\": [1, \"x\"]}";
        assert_eq!(json_key_at(nested, 22), Some("latency_ms"));
        assert_eq!(json_key_at(nested, 35), None);
    }
}
