#[tessera::kernels]
mod k {
    // The lists of `zip(..)` go together value by value, so they need one length.
    #[constants(zip(BLOCK = [128, 64], GROUP = [512, 256, 128]))]
    pub struct Uneven;

    // `zip(..)` takes lists only; a derived constant comes after it.
    #[constants(zip(BLOCK = [128, 64], GROUP = BLOCK * 4))]
    pub struct Derived;

    // It needs at least one list.
    #[constants(zip())]
    pub struct Empty;

    // The same combination twice would make the same instances twice.
    #[constants(zip(BLOCK = [128, 64, 128], GROUP = [512, 256, 512]), DEPTH = [16, 32])]
    pub struct Repeated;

    // A name is declared once, in `zip(..)` or out of it.
    #[constants(BLOCK = [128], zip(BLOCK = [64], GROUP = [256]))]
    pub struct Twice;
}

fn main() {}
