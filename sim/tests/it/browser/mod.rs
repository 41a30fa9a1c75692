//! `pai-sim show --html` pages opened in a real headless Chromium: each
//! renders without console messages, and the DOM the browser built has
//! every run of the transcript in a lane under its thread and every
//! episode in its run's lane, naming the worker that held it. A screenshot
//! of a multi-worker run is kept as a CI artifact:
//! `target/ci-artifacts/timeline-workers.png` (under `CARGO_TARGET_DIR` if
//! set).
//!
//! The browser: `PAI_BROWSER` (a path), else the first of chromium,
//! chromium-browser, google-chrome, google-chrome-stable on `PATH`. Without
//! one these tests skip with a message, unless `PAI_REQUIRE_BROWSER=1`
//! (`.ci/run` sets it after installing Debian's `chromium`) makes them fail.

mod dom;

use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dom::{Dom, Node};

use super::show::{root, show_ok, temp, transcript_holders};

const NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// Headless, and nothing that reaches for the network on its own (this
/// machine's network is closed); the page's console goes to the log.
const FLAGS: [&str; 11] = [
    "--headless",
    "--disable-gpu",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--dump-dom",
];

/// A browser that does not finish by then has hung.
const DEADLINE: Duration = Duration::from_secs(60);

/// The screenshot's window, in CSS pixels (scale factor 1).
const WINDOW: (u32, u32) = (1600, 1600);

const S4: &str = "scenarios/streams/s4_abort_after_live_release.toml";
const K3: &str = "scenarios/workers/k3_three_workers_under_faults.toml";
const K5: &str = "scenarios/workers/k5_a_crash_before_the_result_commits_runs_the_call_again.toml";

/// Where the browser is: `pai_browser` if given, else the first of
/// [`NAMES`] on `path`. `None` when there is none and none is required.
fn locate(
    pai_browser: Option<&OsStr>,
    path: Option<&OsStr>,
    require: bool,
) -> Result<Option<PathBuf>, String> {
    if let Some(named) = pai_browser.filter(|b| !b.is_empty()) {
        let named = PathBuf::from(named);
        return match named.is_file() {
            true => Ok(Some(named)),
            false => Err(format!("PAI_BROWSER={}: no such file", named.display())),
        };
    }
    let found = std::env::split_paths(path.unwrap_or_default())
        .flat_map(|dir| NAMES.map(|n| dir.join(n)))
        .find(|p| p.is_file());
    match (found, require) {
        (Some(browser), _) => Ok(Some(browser)),
        (None, false) => Ok(None),
        (None, true) => Err(format!(
            "PAI_REQUIRE_BROWSER is set, but no headless browser was found: PAI_BROWSER \
             is unset and none of {} is on PATH; install Debian's chromium package \
             (apt-get install chromium), point PAI_BROWSER at a Chromium or Chrome \
             binary, or unset PAI_REQUIRE_BROWSER to skip",
            NAMES.join(", ")
        )),
    }
}

/// The browser these tests use; `None` (the test skips, and says so) when
/// there is none and `PAI_REQUIRE_BROWSER` does not ask for one.
fn browser() -> Option<PathBuf> {
    let var = std::env::var_os;
    let require = var("PAI_REQUIRE_BROWSER").is_some_and(|v| !v.is_empty() && v != "0");
    let path = var("PATH");
    match locate(var("PAI_BROWSER").as_deref(), path.as_deref(), require) {
        Ok(Some(browser)) => Some(browser),
        Ok(None) => {
            eprintln!(
                "skipped: no headless browser found (PAI_BROWSER unset, none of {NAMES:?} on \
                 PATH); PAI_REQUIRE_BROWSER=1 fails instead"
            );
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// What the browser gave for one page: the DOM it built, and its log.
struct Opened {
    dom: String,
    log: String,
}

/// Opens `page` in a headless browser with a fresh profile (two browsers
/// on one profile would be one browser); with `screenshot`, also saves
/// the window ([`WINDOW`]) there as a PNG.
fn open(browser: &Path, page: &Path, screenshot: Option<&Path>) -> Opened {
    let dir = page.parent().expect("the page's folder");
    let (dom_file, log_file) = (dir.join("dom.html"), dir.join("browser.log"));
    let mut command = Command::new(browser);
    command
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", dir.join("profile").display()));
    if let Some(png) = screenshot {
        let (w, h) = WINDOW;
        command.args(["--hide-scrollbars", "--force-device-scale-factor=1"]);
        command.arg(format!("--window-size={w},{h}"));
        command.arg(format!("--screenshot={}", png.display()));
    }
    command
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(File::create(&dom_file).unwrap())
        .stderr(File::create(&log_file).unwrap());
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish in {DEADLINE:?}", browser.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |f: &Path| String::from_utf8_lossy(&std::fs::read(f).unwrap()).into_owned();
    let opened = Opened {
        dom: read(&dom_file),
        log: read(&log_file),
    };
    assert!(
        status.success(),
        "{} {status}:\n{}",
        browser.display(),
        opened.log
    );
    opened
}

/// The console messages in a Chromium log (`--enable-logging=stderr`):
/// `[pid:tid:time:INFO:CONSOLE:1] "…", source: file:///… (1)`, or
/// `CONSOLE(1)` in older builds. The log gives every message the level
/// INFO, whatever the console's level was.
fn console_messages(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| {
            let header = line.strip_prefix('[').and_then(|l| l.split(']').next());
            header.is_some_and(|h| h.contains(":CONSOLE:") || h.contains(":CONSOLE("))
        })
        .collect()
}

/// The timeline has no script: any console message is the browser's own
/// complaint (an error, a failed load, a warning), and fails the page.
fn console_check(log: &str) -> Result<(), String> {
    match console_messages(log)[..] {
        [] => Ok(()),
        ref messages => Err(format!(
            "{} console message(s):\n{}",
            messages.len(),
            messages.join("\n")
        )),
    }
}

/// The runs the transcript lists at the end of each thread: (thread, run).
fn transcript_runs(transcript: &str) -> Vec<(String, String)> {
    let (mut runs, mut thread, mut in_runs) = (Vec::new(), "", false);
    for line in transcript.lines() {
        if let Some(rest) = line.strip_prefix("== thread ") {
            thread = rest.split_whitespace().next().unwrap_or_default();
        }
        if line == "runs:" {
            in_runs = true;
        } else if in_runs && line.starts_with("    ") {
            let run = line.split_whitespace().next().unwrap_or_default();
            runs.push((thread.to_string(), run.to_string()));
        } else {
            in_runs = false;
        }
    }
    runs
}

/// Who acquired each episode: (run, episode, worker), from the workers'
/// `[w1] run lease_acquired episode=N` lines, or, in one process, from
/// `run lease_acquired episode=N` (the worker is `local`).
fn holders(transcript: &str) -> Vec<(String, String, String)> {
    let among_workers = transcript_holders(transcript);
    if !among_workers.is_empty() {
        return among_workers;
    }
    let local = transcript.lines().filter_map(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let [_, run, "lease_acquired", episode, ..] = words[..] else {
            return None;
        };
        let episode = episode.strip_prefix("episode=")?;
        Some((run.to_string(), episode.to_string(), "local".to_string()))
    });
    local.collect()
}

fn run_lanes<'a>(dom: &'a Dom) -> Vec<Node<'a>> {
    let lanes = dom.elements().filter(|n| n.has_class("lane"));
    lanes.filter(|n| n.has_class("run")).collect()
}

/// The page of `scenario` (which must pass) opened in `browser`: the
/// transcript `pai-sim show` printed and what the browser gave.
fn open_scenario(
    browser: &Path,
    scenario: &str,
    name: &str,
    screenshot: Option<&Path>,
) -> (String, Opened) {
    let (transcript, html) = show_ok(scenario, name);
    let dir = temp(&format!("browser-{name}"));
    let page = dir.join("timeline.html");
    std::fs::write(&page, html).unwrap();
    let opened = open(browser, &page, screenshot);
    let _ = std::fs::remove_dir_all(&dir);
    (transcript, opened)
}

/// The page rendered without a console message; every run the transcript
/// lists has a lane under its thread, every episode is in its run's lane
/// naming its holder, and each lane names its holders in order.
fn assert_rendered(scenario: &str, transcript: &str, opened: &Opened) -> Dom {
    if let Err(e) = console_check(&opened.log) {
        panic!("{scenario}: {e}");
    }
    let dom = Dom::parse(&opened.dom).unwrap_or_else(|e| panic!("{scenario}: the DOM: {e}"));
    let lanes = run_lanes(&dom);
    let thread = |n: &Node<'_>| {
        let holder = n.ancestors().find_map(|a| a.attribute("data-thread"));
        holder.unwrap_or("?").to_string()
    };
    let mut found: Vec<(String, String)> = lanes
        .iter()
        .map(|l| (thread(l), l.attribute("data-run").unwrap_or("?").into()))
        .collect();
    let mut want = transcript_runs(transcript);
    assert!(!want.is_empty(), "{scenario}: no runs in the transcript");
    found.sort();
    want.sort();
    assert_eq!(found, want, "{scenario}: the runs and their threads");

    let want = holders(transcript);
    let mut found = Vec::new();
    for lane in &lanes {
        let run = lane.attribute("data-run").unwrap_or_default();
        let episodes = lane
            .descendants()
            .filter(|n| n.attribute("data-kind") == Some("episode"));
        // In one process only the lane names the holder: `local`.
        let local = lane.attribute("data-worker").filter(|w| *w == "local");
        for ep in episodes {
            let episode = ep.attribute("data-episode").unwrap_or("?");
            let worker = ep.attribute("data-worker").or(local).unwrap_or("?");
            found.push((run.into(), episode.into(), worker.into()));
        }
        assert_lane_holders(scenario, *lane, &want);
    }
    let mut want = want;
    found.sort();
    want.sort();
    assert_eq!(found, want, "{scenario}: the episodes and their holders");
    dom
}

/// A run lane names the workers that held the run, in order, in its
/// `data-worker` and its text.
fn assert_lane_holders(scenario: &str, lane: Node<'_>, holders: &[(String, String, String)]) {
    let run = lane.attribute("data-run").unwrap_or_default();
    let mut workers: Vec<&str> = Vec::new();
    for (r, _, w) in holders {
        if r == run && !workers.contains(&w.as_str()) {
            workers.push(w);
        }
    }
    assert_eq!(
        lane.attribute("data-worker"),
        Some(workers.join(" ").as_str()),
        "{scenario}: {run}"
    );
    let text = lane.text();
    for w in workers {
        let said = match w {
            "local" => "worker local".to_string(),
            _ => format!("{w} (episode"),
        };
        assert!(
            text.contains(&said),
            "{scenario}: {run} does not say {said:?}: {text}"
        );
    }
}

fn worker_lanes<'a>(dom: &'a Dom) -> Vec<Node<'a>> {
    let lanes = dom.elements().filter(|n| n.has_class("lane"));
    lanes.filter(|n| n.has_class("worker")).collect()
}

/// With a headless browser installed, a one-process page and a takeover
/// among workers render, their lanes in the DOM.
#[test]
fn a_headless_browser_renders_the_lanes() {
    let Some(browser) = browser() else { return };
    let (transcript, opened) = open_scenario(&browser, S4, "s4", None);
    let dom = assert_rendered(S4, &transcript, &opened);
    assert_eq!(run_lanes(&dom).len(), 1);
    let watcher = dom.elements().find(|n| n.has_class("watcher"));
    assert_eq!(
        watcher.and_then(|w| w.attribute("data-watcher")),
        Some("phone")
    );
    assert!(
        dom.elements()
            .any(|n| n.attribute("id") == Some("verdicts"))
    );

    let (transcript, opened) = open_scenario(&browser, K5, "k5", None);
    let dom = assert_rendered(K5, &transcript, &opened);
    assert_eq!(worker_lanes(&dom).len(), 2);
    assert_eq!(run_lanes(&dom)[0].attribute("data-worker"), Some("w1 w2"));
    let faults: Vec<String> = dom
        .elements()
        .filter(|n| n.attribute("data-kind") == Some("fault"))
        .map(|n| n.text())
        .collect();
    assert!(
        faults.iter().any(|f| f.contains("crash at_ms=150")),
        "{faults:?}"
    );
    assert!(!opened.dom.contains("worker local"));
}

/// Three workers, four runs: every run and episode is in the DOM with its
/// holder, and the page's screenshot is kept for CI (a PNG of [`WINDOW`]).
#[test]
fn every_run_and_episode_among_workers_is_on_the_page_with_its_holder() {
    let Some(browser) = browser() else { return };
    let folder = artifacts();
    std::fs::create_dir_all(&folder).unwrap();
    let png = folder.join("timeline-workers.png");
    let _ = std::fs::remove_file(&png);
    let (transcript, opened) = open_scenario(&browser, K3, "k3", Some(&png));
    let dom = assert_rendered(K3, &transcript, &opened);
    assert_eq!(run_lanes(&dom).len(), 4);
    assert!(holders(&transcript).len() >= 6, "{transcript}");
    let workers: Vec<&str> = worker_lanes(&dom)
        .iter()
        .filter_map(|n| n.attribute("data-worker"))
        .collect();
    assert_eq!(workers, ["w1", "w2", "w3"]);
    assert_png(&png, WINDOW);
}

/// `target/ci-artifacts`, or `ci-artifacts` under `CARGO_TARGET_DIR`.
fn artifacts() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    root().join(target).join("ci-artifacts")
}

/// A PNG file of `size` pixels (its IHDR chunk says so), with content.
fn assert_png(path: &Path, size: (u32, u32)) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{}: not a PNG",
        path.display()
    );
    assert!(
        bytes.len() > 10_000,
        "{}: {} bytes",
        path.display(),
        bytes.len()
    );
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(
        (be(16), be(20)),
        size,
        "{}: width and height",
        path.display()
    );
}

/// The console check fails on a page with a script error, in a real
/// browser: the check can fail. (The broken image alone would not fail it:
/// Chromium logs a failed load to DevTools only, not to its log. The
/// timeline loads nothing: `show::assert_offline`.)
#[test]
fn a_script_error_fails_the_console_check() {
    let Some(browser) = browser() else { return };
    let dir = temp("browser-error");
    let page = dir.join("broken.html");
    let html = "<!DOCTYPE html>\n<html><head><title>broken</title></head><body>\
                <p>a deliberate error</p><img src=\"missing.png\" alt=\"\">\
                <script>throw new Error(\"deliberate\");</script></body></html>\n";
    std::fs::write(&page, html).unwrap();
    let opened = open(&browser, &page, None);
    let _ = std::fs::remove_dir_all(&dir);
    let err = console_check(&opened.log).expect_err("a script error is a console message");
    assert!(err.contains("Uncaught Error: deliberate"), "{err}");
    assert!(Dom::parse(&opened.dom).is_ok(), "{}", opened.dom);
}

#[test]
fn console_messages_are_told_from_the_browser_s_own_log() {
    let log = "\
[1:2:1206/021930.153916:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n\
/usr/bin/chromium: 9: [: 25274056704: unexpected operator\n\
[1:1:1206/021930.624261:INFO:CONSOLE:1] \"Uncaught Error: x\", source: file:///t.html (1)\n\
[1:1:1206/021930.624262:INFO:CONSOLE(7)] \"a warning\", source: file:///t.html (7)\n\
182531 bytes written to file /tmp/k3.png\n";
    let messages = console_messages(log);
    assert_eq!(messages.len(), 2, "{messages:?}");
    let err = console_check(log).unwrap_err();
    assert!(err.starts_with("2 console message(s):\n"), "{err}");
    assert!(err.contains("Uncaught Error: x") && err.contains("a warning"));
    let quiet = log
        .lines()
        .filter(|l| !l.contains("CONSOLE"))
        .collect::<Vec<_>>();
    assert_eq!(console_check(&quiet.join("\n")), Ok(()));
}

#[test]
fn a_required_browser_that_is_missing_is_an_error() {
    let empty = temp("browser-none");
    let path = Some(empty.as_os_str());
    assert_eq!(locate(None, path, false), Ok(None), "skips");
    let err = locate(None, path, true).unwrap_err();
    assert!(
        err.starts_with("PAI_REQUIRE_BROWSER is set, but no headless browser"),
        "{err}"
    );
    assert!(err.contains("apt-get install chromium"), "{err}");
    let fake = empty.join("chromium");
    std::fs::write(&fake, "").unwrap();
    assert_eq!(locate(None, path, true), Ok(Some(fake.clone())));
    let missing = empty.join("nothing");
    let err = locate(Some(missing.as_os_str()), path, false).unwrap_err();
    assert!(err.ends_with("nothing: no such file"), "{err}");
    assert_eq!(locate(Some(fake.as_os_str()), None, true), Ok(Some(fake)));
    let _ = std::fs::remove_dir_all(&empty);
}
