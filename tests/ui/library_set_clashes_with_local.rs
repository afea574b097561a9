// An imported library's set of constants is the module's by that name: a set of the module's
// own with the same name cannot stand beside it, nor one of a library importing it.

#[tessera::kernels]
mod clash {
    #[device]
    use tessera_test_library::tiling;

    #[constants(TILE = [16, 64])]
    pub struct Tiling;

    #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
    pub fn k(y: &mut [f32]) {
        y[local_index()] = 1.0;
    }
}

#[tessera::device]
mod wider {
    #[device]
    use tessera_test_library::tiling;

    #[constants(TILE = [128])]
    pub struct Tiling;
}

fn main() {}
