//! `TESSERA_ADAPTER` naming no adapter is an error that lists the adapters found. This test sets
//! a process-wide environment variable, so it lives alone in its own test binary.

use tessera::{Error, Runtime, ADAPTER_ENV};

#[test]
fn unknown_adapter_name_is_an_error_listing_the_adapters() {
    // SAFETY: this binary has no other test, so no other thread reads the environment.
    unsafe { std::env::set_var(ADAPTER_ENV, "no adapter is called this") };
    let error = Runtime::new().unwrap_err();
    assert!(
        matches!(&error, Error::NoAdapter { requested: Some(name), .. } if name == "no adapter is called this")
    );
    assert!(
        error
            .to_string()
            .contains("matches none of the adapters found"),
        "{error}"
    );
}
