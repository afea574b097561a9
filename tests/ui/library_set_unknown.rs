// A kernel names a set that neither its module nor the libraries it imports declare: the
// message names the imports, or says how to import the library that declares the set. A kernel
// that names no set calls a library helper over the set's constants: the message, at the
// kernel, names the set.

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

#[tessera::kernels]
mod without_the_set {
    #[device]
    use tessera_test_library::tiling;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn k(x: &[f32], y: &mut [f32]) {
        y[local_index()] = lane_sum(x, x.len(), 0, local_index());
    }
}

fn main() {}
