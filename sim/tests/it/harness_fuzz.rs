//! Library mode's oracles and fuzzing (issue 28): an author's oracle is
//! reported like a built-in one, and `Harness::fuzz` mixes the author's
//! hooks into generated cases, finds what their oracle sees, and shrinks
//! it into a scenario file that fails the same way.

use pai_sim::fuzz::Failure;
use pai_sim::observe::Finding;
use pai_sim::{Harness, OracleName};
use proptest::prelude::*;

use crate::harness::Inject;

/// Mostly harmless lines; now and then the secret.
fn inject_configs() -> impl Strategy<Value = Inject> {
    prop_oneof![
        4 => "[a-z]{1,8}".prop_map(|text| Inject { text }),
        1 => Just(Inject { text: "SECRET".into() }),
    ]
}

/// Never the secret.
fn harmless_configs() -> impl Strategy<Value = Inject> {
    "[a-z]{1,8}".prop_map(|text| Inject { text })
}

/// The author's oracle: no model call is sent the secret.
fn no_secret(h: &mut Harness) -> &mut Harness {
    h.oracle("no_secret_in_model_calls", |obs| {
        for call in obs.model_calls() {
            if call.text().contains("SECRET") {
                let m = format!("model call {} was sent the secret", call.index() + 1);
                return Err(Finding::in_run(call.run(), m));
            }
        }
        Ok(())
    })
}

const LEAKS: &str = r#"
name = "the injected line reaches the model"
rules = ["L5"]

[[lifecycle]]
use = "inject"
text = "SECRET"

[[model.turns]]
text = ["Done."]

[[timeline]]
send = "Hello."
"#;

#[test]
fn an_authors_oracle_is_reported_under_its_name() {
    let mut h = Harness::new();
    h.hook::<Inject>("inject");
    no_secret(&mut h);
    let s = h.parse("leaks.toml", LEAKS).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let names: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.oracle.as_str())
        .collect();
    assert_eq!(names, ["no_secret_in_model_calls"], "{}", report.transcript);
    let run = report.violations[0]
        .run
        .clone()
        .expect("the finding names its run");
    let line =
        format!("VIOLATION no_secret_in_model_calls run={run}: model call 1 was sent the secret");
    assert!(report.transcript.contains(&line), "{}", report.transcript);
    let verdict = pai_sim::verdict(&s, &report).unwrap_err();
    assert!(verdict.contains("no_secret_in_model_calls"), "{verdict}");
    // Without the oracle, the same run passes: the finding is the oracle's.
    let mut quiet = Harness::new();
    quiet.hook::<Inject>("inject");
    let s = quiet.parse("leaks.toml", LEAKS).unwrap();
    assert!(pai_sim::simulate(&s, s.seed).unwrap().violations.is_empty());
}

#[test]
fn a_panicking_oracle_is_a_finding_not_a_crash() {
    let mut h = Harness::new();
    h.hook::<Inject>("inject");
    h.oracle("fragile", |obs| -> Result<(), String> {
        let calls = obs.model_calls().count();
        assert!(calls > 5, "only {calls} model calls");
        Ok(())
    });
    let s = h.parse("leaks.toml", LEAKS).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    let v = &report.violations[0];
    assert_eq!(v.oracle, OracleName::User("fragile".into()));
    assert_eq!(v.message, "the oracle panicked: only 1 model calls");
}

#[test]
#[should_panic(expected = "names a built-in oracle")]
fn an_oracle_may_not_take_a_built_in_name() {
    Harness::new().oracle("L1", |_| Ok::<(), String>(()));
}

#[test]
fn fuzz_finds_what_the_authors_oracle_sees_and_writes_it_shrunk() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::new();
    h.hook_with("inject", inject_configs).finds_dir(dir.path());
    no_secret(&mut h);
    let outcome = h.check_fuzz(40, 7);
    assert!(!outcome.passed(), "{}", outcome.report());
    let find = &outcome.summary.finds[0];
    let oracle = OracleName::User("no_secret_in_model_calls".into());
    assert_eq!(
        find.failure,
        Failure::Oracle(oracle.clone()),
        "{}",
        find.message
    );
    // Shrunk: the injecting hook is all that is left of the composition.
    assert_eq!(
        find.shrunk.lifecycle.len(),
        1,
        "{:#?}",
        find.shrunk.lifecycle
    );
    // The file loads with the harness and fails the same way.
    let file = outcome.written[0].as_ref().unwrap();
    let s = h.load(file).unwrap();
    let report = pai_sim::simulate(&s, s.seed).unwrap();
    assert!(report.violations.iter().any(|v| v.oracle == oracle));
    let text = outcome.report();
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(
        text.contains("PAI_SIM_FUZZ_SEED=7 cargo test -p pai-sim"),
        "{text}"
    );
}

#[test]
fn fuzz_mixes_the_authors_hooks_into_the_runtimes_crossings() {
    let mut h = Harness::new();
    h.hook_with("inject", harmless_configs);
    no_secret(&mut h);
    let outcome = h.check_fuzz(80, 3);
    assert!(outcome.passed(), "{}", outcome.report());
    let mixed = &outcome.summary.mixed;
    assert_eq!(mixed.count_of("inject", "cases"), 80, "{}", mixed.table());
    for crossing in [
        "waiting", "steering", "queueing", "cancel", "workers", "faults",
    ] {
        assert!(
            mixed.count_of("inject", crossing) > 0,
            "no case with the hook reached {crossing}\n{}",
            mixed.table()
        );
    }
}

#[test]
fn one_seed_gives_one_campaign() {
    let mut h = Harness::new();
    h.hook_with("inject", harmless_configs);
    no_secret(&mut h);
    let (a, b) = (h.check_fuzz(20, 11), h.check_fuzz(20, 11));
    assert_eq!(a.report(), b.report());
    assert_ne!(a.report(), h.check_fuzz(20, 12).report());
}

#[test]
fn a_failed_scenario_links_its_timeline_page() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(scenarios.join("leaks.toml"), LEAKS).unwrap();
    let mut h = Harness::new();
    h.hook::<Inject>("inject");
    no_secret(&mut h);
    let outcome = h.check_dir(&scenarios);
    assert!(!outcome.passed());
    let page = &outcome.pages[&scenarios.join("leaks.toml")];
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("no_secret_in_model_calls"), "{html}");
    let report = outcome.report();
    assert!(
        report.contains(&format!("timeline: file://{}", page.display())),
        "{report}"
    );
}

/// `hook_arbitrary`: the configuration type's own strategy draws it.
impl Arbitrary for Inject {
    type Parameters = ();
    type Strategy = BoxedStrategy<Inject>;

    fn arbitrary_with((): ()) -> BoxedStrategy<Inject> {
        "[a-z]{1,8}".prop_map(|text| Inject { text }).boxed()
    }
}

#[test]
fn an_arbitrary_configuration_type_is_drawn_by_its_own_strategy() {
    let mut h = Harness::new();
    h.hook_arbitrary::<Inject>("inject");
    let outcome = h.check_fuzz(10, 5);
    assert!(outcome.passed(), "{}", outcome.report());
    assert_eq!(outcome.summary.mixed.count_of("inject", "cases"), 10);
}
