//! Compile-fail tests: each file in `tests/ui` is a mistake tessera must reject, and its
//! `.stderr` pins the message and the span (`tests/ui/pass` holds correct kernels near a rule,
//! which must compile). Regenerate with `TRYBUILD=overwrite` and read the diff before
//! committing.

#[test]
fn rejected_kernels_report_at_the_users_tokens() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}

/// Kernels near a rule that must still compile (each file in `tests/ui/pass` says which rule).
#[test]
fn correct_kernels_near_a_rule_compile() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
}
