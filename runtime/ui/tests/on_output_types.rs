//! SPEC T6: `on_output` is typed against its own tool at compile time. One
//! case compiles; the other, a handler typed for another tool, must fail
//! with the checked-in compiler message (`tests/ui/*.stderr`), so a typo
//! or an unrelated error cannot pass for the type check.

#[test]
fn t6_on_output_is_typed_per_tool() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/on_output_for_its_tool.rs");
    t.compile_fail("tests/ui/on_output_for_another_tool.rs");
}
