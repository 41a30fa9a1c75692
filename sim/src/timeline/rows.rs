//! A lane's items sorted into rows: one row per kind of item, and spans
//! that overlap in time packed into as many rows as keep them apart.

use super::model::{Item, Kind, Row};

/// A run lane's rows, top to bottom; tools that overlap in time get rows of
/// their own. Among workers a row shows the faults that hit the holder.
pub(super) fn rows(items: Vec<Item>, workers: bool) -> Vec<Row> {
    let mut rows = vec![row("episodes", "spans", &items, &[Kind::Episode])];
    if workers {
        rows.push(row("holder's faults", "flat", &items, &[Kind::Fault]));
    }
    rows.extend([
        row("steps", "spans", &items, &[Kind::Step]),
        row(
            "phases · hooks",
            "marks tall",
            &items,
            &[Kind::Phase, Kind::Hook],
        ),
        row("model attempts", "spans", &items, &[Kind::Attempt]),
    ]);
    let tools: Vec<Item> = items
        .iter()
        .filter(|i| i.kind == Kind::Tool)
        .cloned()
        .collect();
    rows.extend(pack("tools", "spans", tools));
    rows.push(row("commits", "flat", &items, &[Kind::Commit]));
    rows.push(row("end", "flat", &items, &[Kind::End]));
    rows
}

/// The items of these kinds, in order, as one row.
pub(super) fn row(name: &str, class: &'static str, items: &[Item], kinds: &[Kind]) -> Row {
    Row {
        name: name.to_string(),
        class,
        items: items
            .iter()
            .filter(|i| kinds.contains(&i.kind))
            .cloned()
            .collect(),
    }
}

/// Items (in order of their start) packed greedily into as few rows as
/// keep them apart in time: `name`, `name 2`, … (one empty row if none).
pub(super) fn pack(name: &str, class: &'static str, items: Vec<Item>) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for item in items {
        let free = rows.iter().position(|r| {
            r.items
                .last()
                .is_none_or(|l| l.end.unwrap_or(l.start) < item.start)
        });
        let i = free.unwrap_or_else(|| {
            let name = match rows.len() {
                0 => name.to_string(),
                n => format!("{name} {}", n + 1),
            };
            rows.push(row(&name, class, &[], &[]));
            rows.len() - 1
        });
        rows[i].items.push(item);
    }
    if rows.is_empty() {
        rows.push(row(name, class, &[], &[]));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::axis::Pos;

    fn span(at: u64, end: u64) -> Item {
        let pos = |at| Pos { at, rank: 0 };
        Item::new(
            Kind::Tool,
            "ok",
            (pos(at), Some(pos(end))),
            String::new(),
            String::new(),
        )
    }

    #[test]
    fn overlapping_spans_get_rows_of_their_own() {
        let rows = pack(
            "tools",
            "spans",
            vec![span(0, 10), span(5, 20), span(11, 30)],
        );
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["tools", "tools 2"]);
        assert_eq!(rows[0].items.len(), 2);
        assert_eq!(rows[1].items.len(), 1);
    }

    #[test]
    fn the_holder_s_faults_have_a_row_only_among_workers() {
        let names = |workers| -> Vec<String> {
            rows(Vec::new(), workers)
                .into_iter()
                .map(|r| r.name)
                .collect()
        };
        assert!(!names(false).iter().any(|n| n == "holder's faults"));
        assert!(names(true).iter().any(|n| n == "holder's faults"));
    }
}
