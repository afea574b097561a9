// Imports that cannot be: a glob, a name the module already has, and a library inside the
// module that imports it.

#[tessera::kernels]
mod grouped {
    #[device]
    use tessera_test_library::{elementwise, tiles::*};
}

#[tessera::kernels]
mod clash {
    #[device]
    use tessera_test_library::elementwise;

    fn axpy(x: f32) -> f32 {
        x
    }

    #[kernel(workgroup = [1], grid = [1])]
    pub fn k(x: &mut [f32]) {
        x[0] = axpy(x[0]);
    }
}

#[tessera::kernels]
mod inside {
    #[device]
    use self::nested;
}

fn main() {}
