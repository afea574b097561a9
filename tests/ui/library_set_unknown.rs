// A kernel names a set that neither its module nor the libraries it imports declare: the
// message names the imports, or says how to import the library that declares the set.

#[tessera::kernels]
mod imports_another {
    #[device]
    use tessera_test_library::windows;

    #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
    pub fn k(y: &mut [f32]) {
        y[local_index()] = 1.0;
    }
}

#[tessera::kernels]
mod imports_none {
    #[kernel(workgroup = [TILE], constants = Tiling, grid = [1])]
    pub fn k(y: &mut [f32]) {
        y[local_index()] = 1.0;
    }
}

fn main() {}
