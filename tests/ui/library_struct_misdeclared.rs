// A library's struct is a kernel's parameter type in every module that imports the library:
// it derives `Params`, and it and its fields are visible there.

#[tessera::device]
pub mod shapes {
    pub struct Plain {
        pub n: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    struct Hidden {
        pub n: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Sealed {
        pub n: u32,
        width: u32,
    }
}

fn main() {}
