//! Every example runs as a test, so none of them rots.

#[path = "../examples/quickstart.rs"]
#[allow(dead_code)]
mod quickstart;

#[test]
fn quickstart_runs_and_checks_its_result() {
    quickstart::run().expect("the quickstart example must succeed");
}
