// A library that imports libraries: not itself, not one declared inside it, and not one whose
// names it already has.

#[tessera::device]
mod itself {
    #[device]
    use super::itself;
}

#[tessera::device]
mod inside {
    #[device]
    use self::nested;
}

#[tessera::device]
mod clash {
    #[device]
    use tessera_test_library::activations;

    /// The library's `leaky_relu` calls `LEAK` by name: this one would shadow it.
    const LEAK: f32 = 0.5;
}

fn main() {}
