//! `pai-sim show --html`: the self-contained timeline page of one run. The
//! page is polyglot HTML5, so these tests read it as XML with roxmltree.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use roxmltree::{Document, Node, ParsingOptions};

pub(super) fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pai-sim"))
}

pub(super) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

pub(super) fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pai-show-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `pai-sim show SCENARIO --html OUT [extra…]`; the output and the page.
fn show(scenario: &str, name: &str, extra: &[&str]) -> (Output, String) {
    let dir = temp(name);
    let page = dir.join("timeline.html");
    let out = bin()
        .arg("show")
        .arg(root().join(scenario))
        .arg("--html")
        .arg(&page)
        .args(extra)
        .output()
        .unwrap();
    let html = std::fs::read_to_string(&page).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (out, html)
}

/// The page as XML; its only DTD is the `<!DOCTYPE html>` line.
fn parse(html: &str) -> Document<'_> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(html, options)
        .unwrap_or_else(|e| panic!("the page is not well-formed: {e}"))
}

fn has_class(n: Node<'_, '_>, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|w| w == class))
}

fn all<'a, 'i>(doc: &'a Document<'i>, pred: impl Fn(Node<'a, 'i>) -> bool) -> Vec<Node<'a, 'i>> {
    doc.descendants().filter(|n| pred(*n)).collect()
}

/// All text under a node (roxmltree has already decoded the entities).
fn text(n: Node<'_, '_>) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect()
}

fn header(doc: &Document<'_>) -> String {
    let header = doc.descendants().find(|n| n.has_tag_name("header"));
    text(header.expect("a header"))
}

fn kind<'a, 'i>(doc: &'a Document<'i>, kind: &str) -> Vec<Node<'a, 'i>> {
    all(doc, |n| n.attribute("data-kind") == Some(kind))
}

fn by_id<'a, 'i>(doc: &'a Document<'i>, id: &str) -> Node<'a, 'i> {
    doc.descendants()
        .find(|n| n.attribute("id") == Some(id))
        .unwrap_or_else(|| panic!("no element #{id}"))
}

/// The runs a transcript lists at the end of each thread.
fn transcript_runs(transcript: &str) -> usize {
    let mut runs = 0;
    let mut in_runs = false;
    for line in transcript.lines() {
        if line == "runs:" {
            in_runs = true;
        } else if in_runs && line.starts_with("    ") {
            runs += 1;
        } else {
            in_runs = false;
        }
    }
    runs
}

fn assert_offline(html: &str) {
    let lower = html.to_lowercase();
    for banned in [
        "http://", "https://", "src=", "<script", "<link", "@import", "url(",
    ] {
        assert!(!lower.contains(banned), "the page refers to {banned:?}");
    }
    assert!(html.starts_with("<!DOCTYPE html>\n"));
}

/// Five steps of one run: the page has its lane with every kind of mark,
/// the oracle section, the transcript the command printed, and nothing
/// that needs a network.
#[test]
fn five_steps_show_every_kind_of_mark_in_one_lane() {
    let (out, html) = show("scenarios/basics/five_steps.toml", "five", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("scenario: "), "{stdout}");
    assert_offline(&html);
    let doc = parse(&html);
    assert_eq!(doc.root_element().tag_name().name(), "html");
    let pre = by_id(&doc, "transcript")
        .descendants()
        .find(|n| n.has_tag_name("pre"))
        .expect("the transcript");
    assert!(
        text(pre) == stdout,
        "the page carries the printed transcript"
    );

    let runs = transcript_runs(&stdout);
    assert_eq!(runs, 1);
    let lanes = all(&doc, |n| has_class(n, "lane") && has_class(n, "run"));
    assert_eq!(lanes.len(), runs, "one lane per run");
    for lane in &lanes {
        assert_eq!(lane.attribute("data-worker"), Some("local"));
        assert!(text(*lane).contains("worker local"));
        let group = lane.parent().unwrap();
        assert_eq!(group.attribute("data-thread"), Some("main"));
    }
    assert_five_steps_marks(lanes[0]);

    let verdicts = by_id(&doc, "verdicts");
    assert!(text(verdicts).contains("all quiet"), "{}", text(verdicts));
    let header = header(&doc);
    for fact in [
        "five steps with hooks in every phase",
        "L2, A2, T1, T2",
        "31",
        "260 ms",
    ] {
        assert!(header.contains(fact), "{fact} missing from {header}");
    }
}

/// The marks and spans of the one run of `five_steps.toml`, in its lane.
fn assert_five_steps_marks(lane: Node<'_, '_>) {
    let of = |k: &str| -> Vec<Node<'_, '_>> {
        lane.descendants()
            .filter(|n| n.attribute("data-kind") == Some(k))
            .collect()
    };
    let count = |k: &str| of(k).len();
    assert_eq!(count("episode"), 1);
    assert_eq!(count("step"), 5);
    assert_eq!(count("attempt"), 5);
    assert_eq!(count("tool"), 5);
    assert_eq!(count("commit"), 9, "5 steps and 4 tool results");
    assert_eq!(count("end"), 1);
    assert!(count("phase") >= 5 * 5);
    assert!(count("hook") > 0);
    let commits: Vec<String> = of("commit").into_iter().map(text).collect();
    // The claim is version 2 (every root change is a commit, H1).
    assert_eq!(commits.first().map(String::as_str), Some("v3"));
    assert_eq!(commits.last().map(String::as_str), Some("v11"));
    let episode = text(of("episode")[0]);
    assert!(episode.contains("token 1"), "{episode}");
    let attempt = of("attempt")[4];
    assert!(has_class(attempt, "ok"));
    assert!(text(attempt).contains("stop"), "{}", text(attempt));
    let tools: Vec<String> = of("tool").into_iter().map(text).collect();
    assert!(tools.iter().all(|t| t.contains("output")), "{tools:?}");
    assert!(text(of("end")[0]).contains("completed"));
}

/// Two runs queued on one thread get a lane each, in order.
#[test]
fn each_run_has_its_own_lane() {
    let (out, html) = show("scenarios/basics/queued_runs.toml", "queued", &[]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let doc = parse(&html);
    let lanes = all(&doc, |n| has_class(n, "lane") && has_class(n, "run"));
    assert_eq!(lanes.len(), transcript_runs(&stdout));
    assert!(lanes.len() >= 2);
    let ids: Vec<&str> = lanes
        .iter()
        .filter_map(|l| l.attribute("data-run"))
        .collect();
    let first = stdout.find(ids[0]).unwrap();
    let second = stdout.find(ids[1]).unwrap();
    assert!(first < second, "lanes follow the order runs appear");
}

/// A watcher gets a lane with the text it received, joined, and marks for
/// the abort, the refreshes and the run's end.
#[test]
fn a_watcher_lane_shows_its_live_text() {
    let scenario = "scenarios/streams/s4_abort_after_live_release.toml";
    let (out, html) = show(scenario, "watch", &[]);
    assert!(out.status.success());
    let doc = parse(&html);
    let lane = doc
        .descendants()
        .find(|n| has_class(*n, "watcher") && n.attribute("data-watcher") == Some("phone"))
        .expect("a lane for watcher phone");
    assert_eq!(lane.attribute("data-thread"), Some("main"));
    let texts: Vec<String> = lane
        .descendants()
        .filter(|n| n.attribute("data-kind") == Some("live-text"))
        .map(text)
        .collect();
    assert_eq!(texts, ["Sure. Run: rm -"]);
    let marks: Vec<String> = lane
        .descendants()
        .filter(|n| n.attribute("data-kind") == Some("live"))
        .map(text)
        .collect();
    assert!(marks.iter().any(|m| m == "aborted"), "{marks:?}");
    assert!(marks.iter().any(|m| m == "refresh v2"), "{marks:?}");
    assert!(
        marks.iter().any(|m| m.ends_with("ended: blocked")),
        "{marks:?}"
    );
    let live = text(by_id(&doc, "live"));
    assert!(live.contains("Sure. Run: rm -"), "{live}");
    assert!(live.contains("aborted: unsafe_output"), "{live}");
    let attempt = kind(&doc, "attempt")[0];
    assert!(has_class(attempt, "aborted"));
}

/// A violation scenario names the oracle in the verdicts.
#[test]
fn a_violation_is_named_in_the_verdicts() {
    let scenario = "scenarios/violations/k2_catches_a_stale_token.toml";
    let (out, html) = show(scenario, "violation", &[]);
    assert!(out.status.success(), "the violation is expected");
    let doc = parse(&html);
    let verdicts = by_id(&doc, "verdicts");
    let found: Vec<Node<'_, '_>> = verdicts
        .descendants()
        .filter(|n| has_class(*n, "violation"))
        .collect();
    assert!(!found.is_empty());
    // The stale token also breaks the thread's versions (H1).
    assert!(
        found
            .iter()
            .any(|v| v.attribute("data-oracle") == Some("K2"))
    );
    assert!(
        found
            .iter()
            .all(|v| matches!(v.attribute("data-oracle"), Some("K2" | "H1")))
    );
    let said = text(verdicts);
    assert!(said.contains("K2"), "{said}");
    assert!(!said.contains("all quiet"));
}

/// The same run gives the same bytes; another seed is another run.
#[test]
fn pages_are_deterministic_and_any_seed_works() {
    let scenario = "scenarios/basics/five_steps.toml";
    let (a, first) = show(scenario, "det-a", &[]);
    let (b, second) = show(scenario, "det-b", &[]);
    assert!(a.status.success() && b.status.success());
    assert!(!first.is_empty());
    assert!(first == second, "two runs gave different pages");
    let (c, other) = show(scenario, "det-seed", &["--seed", "7"]);
    assert!(c.status.success());
    let doc = parse(&other);
    let header = header(&doc);
    assert!(header.contains("7 (the scenario's own is 31)"), "{header}");
    assert_eq!(kind(&doc, "step").len(), 5);
}

/// Scenario text is user input: markup in it stays text, and characters
/// XML cannot carry are replaced.
#[test]
fn user_text_is_escaped() {
    // A TOML string: quotes, markup, an ampersand and a control character.
    let nasty = r#""<script>alert(\"x\")</script> & 'quotes' \u0001""#;
    let source = format!(
        "name = {nasty}\nrules = [\"L1\"]\ndescription = {nasty}\n\
         [[timeline]]\nsend = {nasty}\n\
         [[timeline]]\nwatch = {nasty}\n"
    );
    let scenario = pai_sim::Scenario::parse(Path::new("x.toml"), &source).unwrap();
    assert_eq!(
        scenario.name,
        "<script>alert(\"x\")</script> & 'quotes' \u{1}"
    );
    let report = pai_sim::simulate(&scenario, 3).unwrap();
    let html = pai_sim::timeline_html(&scenario, 3, &report);
    assert_offline(&html);
    let doc = parse(&html);
    let h1 = doc.descendants().find(|n| n.has_tag_name("h1")).unwrap();
    assert_eq!(text(h1), scenario.name.replace('\u{1}', "\u{fffd}"));
    let pre = by_id(&doc, "transcript")
        .descendants()
        .find(|n| n.has_tag_name("pre"))
        .unwrap();
    assert!(text(pre).contains("<script>alert"));
    assert!(
        html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;")
    );
    assert!(!doc.descendants().any(|n| n.has_tag_name("script")));
    let watcher = doc
        .descendants()
        .find(|n| has_class(*n, "watcher"))
        .expect("a watcher lane");
    assert_eq!(
        watcher.attribute("data-watcher"),
        Some(text(h1).as_str()),
        "attributes round-trip"
    );
}

/// `pai-sim show` on a scenario that must pass; its stdout and its page.
pub(super) fn show_ok(scenario: &str, name: &str) -> (String, String) {
    let (out, html) = show(scenario, name, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (String::from_utf8(out.stdout).unwrap(), html)
}

/// Who acquired each episode, from the transcript's `[w1] run
/// lease_acquired episode=N` lines: (run, episode, worker), in order.
pub(super) fn transcript_holders(transcript: &str) -> Vec<(String, String, String)> {
    transcript
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [_, worker, run, "lease_acquired", episode, ..] = words[..] else {
                return None;
            };
            let worker = worker.strip_prefix('[')?.strip_suffix(']')?;
            let episode = episode.strip_prefix("episode=")?;
            Some((run.to_string(), episode.to_string(), worker.to_string()))
        })
        .collect()
}

/// The faults the transcript lists (`150ms ! crash w1`): (worker, label
/// the page should show).
fn transcript_faults(transcript: &str) -> Vec<(String, String)> {
    transcript
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [at, "!", action, worker] = words[..] else {
                return None;
            };
            let at = at.strip_suffix("ms")?;
            Some((worker.to_string(), format!("{action} at_ms={at}")))
        })
        .collect()
}

/// Every episode on the page in the run lanes: (run, episode, worker).
fn page_holders(doc: &Document<'_>) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for lane in all(doc, |n| has_class(n, "lane") && has_class(n, "run")) {
        let run = lane.attribute("data-run").unwrap_or_default();
        for ep in lane
            .descendants()
            .filter(|n| n.attribute("data-kind") == Some("episode"))
        {
            found.push((
                run.to_string(),
                ep.attribute("data-episode").unwrap_or("?").to_string(),
                ep.attribute("data-worker").unwrap_or("?").to_string(),
            ));
        }
    }
    found
}

fn lane_of<'a, 'i>(doc: &'a Document<'i>, class: &str, attr: &str, value: &str) -> Node<'a, 'i> {
    doc.descendants()
        .find(|n| has_class(*n, "lane") && has_class(*n, class) && n.attribute(attr) == Some(value))
        .unwrap_or_else(|| panic!("no {class} lane with {attr}={value}"))
}

fn items_in<'a, 'i>(lane: Node<'a, 'i>, kind: &str) -> Vec<Node<'a, 'i>> {
    lane.descendants()
        .filter(|n| n.attribute("data-kind") == Some(kind))
        .collect()
}

/// Among workers every episode names the worker the transcript says
/// acquired it, each worker has a lane with the faults that hit it, and
/// nothing says `worker local` (issue 25).
#[test]
fn workers_name_the_holder_of_every_episode_and_their_faults() {
    for (scenario, name) in [
        (
            "scenarios/workers/k1_two_workers_race_for_a_queued_run.toml",
            "k1",
        ),
        ("scenarios/workers/k3_three_workers_under_faults.toml", "k3"),
    ] {
        let (stdout, html) = show_ok(scenario, name);
        let doc = parse(&html);
        let expected = transcript_holders(&stdout);
        assert!(expected.len() >= 4, "{scenario}: {expected:?}");
        let mut found = page_holders(&doc);
        let mut want = expected.clone();
        found.sort();
        want.sort();
        assert_eq!(found, want, "{scenario}: episodes and their holders");
        assert!(!html.contains("worker local"), "{scenario}");
        assert!(!html.contains("data-worker=\"local\""), "{scenario}");
        for lane in all(&doc, |n| has_class(n, "lane") && has_class(n, "run")) {
            let run = lane.attribute("data-run").unwrap();
            let mut holders: Vec<&str> = Vec::new();
            for (r, _, w) in &expected {
                if r == run && !holders.contains(&w.as_str()) {
                    holders.push(w);
                }
            }
            assert_eq!(
                lane.attribute("data-worker"),
                Some(holders.join(" ").as_str())
            );
            for w in &holders {
                assert!(
                    text(lane).contains(&format!("{w} (episode")),
                    "{}",
                    text(lane)
                );
            }
        }
        let workers = all(&doc, |n| has_class(n, "lane") && has_class(n, "worker"));
        assert_eq!(workers.len(), 3, "{scenario}: one lane per worker");
        let faults = transcript_faults(&stdout);
        for (worker, label) in &faults {
            let lane = lane_of(&doc, "worker", "data-worker", worker);
            let marks: Vec<String> = items_in(lane, "fault").into_iter().map(text).collect();
            assert!(marks.contains(label), "{label} on {worker}: {marks:?}");
        }
        assert!(kind(&doc, "fault").len() >= faults.len());
        if name == "k3" {
            assert_eq!(faults.len(), 6, "{faults:?}");
        }
    }
}

/// A run taken over after its holder crashed mid-tool shows both holders;
/// the crashed worker's call is cut off, not completed, and the result the
/// other worker committed is its own span (SPEC K3, K5).
#[test]
fn a_takeover_shows_two_holders_and_a_cut_off_call() {
    let scenario =
        "scenarios/workers/k5_a_crash_before_the_result_commits_runs_the_call_again.toml";
    let (stdout, html) = show_ok(scenario, "k5");
    let doc = parse(&html);
    let holders = transcript_holders(&stdout);
    assert_eq!(holders.len(), 2, "{holders:?}");
    let run = &holders[0].0;
    let lane = lane_of(&doc, "run", "data-run", run);
    assert_eq!(lane.attribute("data-worker"), Some("w1 w2"));
    let episodes = items_in(lane, "episode");
    let workers: Vec<&str> = episodes
        .iter()
        .filter_map(|e| e.attribute("data-worker"))
        .collect();
    assert_eq!(workers, ["w1", "w2"]);
    assert!(has_class(episodes[0], "lost"));
    assert!(
        text(episodes[0]).contains("taken over by w2"),
        "{}",
        text(episodes[0])
    );
    assert!(has_class(episodes[1], "ok"));

    let tools = items_in(lane, "tool");
    assert_eq!(tools.len(), 2, "one attempt per worker");
    let first = tools[0];
    assert_eq!(first.attribute("data-worker"), Some("w1"));
    assert!(has_class(first, "cut") && !has_class(first, "output"));
    assert!(text(first).contains("no result from w1"), "{}", text(first));
    let title = first.attribute("title").unwrap();
    assert!(title.contains("w1 crashed at_ms=150"), "{title}");
    assert!(title.contains("committed by w2"), "{title}");
    let second = tools[1];
    assert_eq!(second.attribute("data-worker"), Some("w2"));
    assert!(has_class(second, "output"));

    let faults: Vec<String> = items_in(lane, "fault").into_iter().map(text).collect();
    assert_eq!(faults, ["crash at_ms=150 w1"], "the holder's crash");
    let w1 = lane_of(&doc, "worker", "data-worker", "w1");
    let marks: Vec<String> = items_in(w1, "fault").into_iter().map(text).collect();
    assert_eq!(marks, ["crash at_ms=150", "restart at_ms=900"]);
    let outage = items_in(w1, "outage");
    assert_eq!(outage.len(), 1);
    assert!(text(outage[0]).starts_with("down"), "{}", text(outage[0]));
    let held: Vec<String> = items_in(w1, "held").into_iter().map(text).collect();
    assert_eq!(held.len(), 1);
    assert!(held[0].starts_with(run.as_str()), "{held:?}");
}

/// A worker cut off after its tool ended but before it committed the
/// result: the result is drawn as never committed; a paused worker's late
/// events and refused writes are on its own lane, not in the run's.
#[test]
fn results_never_committed_and_late_writes_are_drawn_as_such() {
    let scenario = "scenarios/workers/k3_a_partition_that_heals.toml";
    let (_, html) = show_ok(scenario, "k3-partition");
    let doc = parse(&html);
    let tools = kind(&doc, "tool");
    let first = tools[0];
    assert_eq!(first.attribute("data-worker"), Some("w1"));
    assert!(
        has_class(first, "uncommitted"),
        "{:?}",
        first.attribute("class")
    );
    assert!(text(first).contains("never committed"), "{}", text(first));
    let lost = kind(&doc, "episode")[0];
    assert!(text(lost).contains("lease lost"), "{}", text(lost));

    let scenario = "scenarios/workers/k2_a_paused_worker_s_late_write_is_refused.toml";
    let (_, html) = show_ok(scenario, "k2-paused");
    let doc = parse(&html);
    let w1 = lane_of(&doc, "worker", "data-worker", "w1");
    let stale: Vec<String> = items_in(w1, "stale").into_iter().map(text).collect();
    for late in ["tool_end", "refused renew", "refused append", "lease_lost"] {
        assert!(stale.iter().any(|s| s.contains(late)), "{late}: {stale:?}");
    }
    let run = all(&doc, |n| has_class(n, "lane") && has_class(n, "run"))[0];
    let w1_tools: Vec<Node<'_, '_>> = items_in(run, "tool")
        .into_iter()
        .filter(|t| t.attribute("data-worker") == Some("w1"))
        .collect();
    assert_eq!(w1_tools.len(), 1);
    let cut = w1_tools[0];
    assert!(
        has_class(cut, "cut"),
        "w1's late tool_end is not the run's story"
    );
    assert!(text(cut).contains("no result from w1"), "{}", text(cut));
}

/// Labels may be cut on screen, never in the hover text: every item's
/// title starts with its whole label; the end mark and commit labels are
/// horizontal rows (`flat`) that make room for them.
#[test]
fn every_label_is_whole_in_its_hover_text() {
    for (scenario, name) in [
        ("scenarios/basics/five_steps.toml", "labels-five"),
        (
            "scenarios/workers/k3_three_workers_under_faults.toml",
            "labels-k3",
        ),
    ] {
        let (_, html) = show_ok(scenario, name);
        let doc = parse(&html);
        let items = all(&doc, |n| n.attribute("data-kind").is_some());
        assert!(!items.is_empty());
        for i in items {
            let title = i.attribute("title").unwrap_or_default();
            assert!(title.starts_with(&text(i)), "{title:?} for {:?}", text(i));
        }
        for e in kind(&doc, "end") {
            let row = e.ancestors().find(|n| has_class(*n, "row")).unwrap();
            assert!(has_class(row, "flat"));
        }
    }
}

/// Among workers too, one scenario and seed give one page, byte for byte.
#[test]
fn worker_pages_are_deterministic() {
    let scenario = "scenarios/workers/k3_three_workers_under_faults.toml";
    let (_, first) = show_ok(scenario, "det-w-a");
    let (_, second) = show_ok(scenario, "det-w-b");
    assert!(!first.is_empty());
    assert!(first == second, "two runs gave different pages");
}
