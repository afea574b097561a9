//! Compile-fail tests: each file in `tests/ui` is a mistake tessera must reject, and its
//! `.stderr` pins the message and the span. Regenerate with `TRYBUILD=overwrite` and read the
//! diff before committing.

#[test]
fn rejected_kernels_report_at_the_users_tokens() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
