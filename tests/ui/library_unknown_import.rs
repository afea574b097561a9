// `#[device] use` of a path that is no device library.

#[tessera::kernels]
mod missing {
    #[device]
    use tessera_test_library::no_such_library;
}

mod plain {}

#[tessera::kernels]
mod not_a_library {
    #[device]
    use super::plain;
}

fn main() {}
