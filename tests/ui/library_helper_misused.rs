// Mistakes through imported device functions: a wrong argument is reported at the caller's
// tokens; a mistake inside a helper that only the caller's types reveal, at the helper's.

#[tessera::device]
mod local {
    /// Adds a float to a value of the caller's `T`: wrong wherever `T` is no float.
    fn nudge(x: T) -> T {
        x + 0.5
    }
}

#[tessera::kernels]
mod k {
    #[device]
    use super::local;
    #[device]
    use tessera_test_library::reductions;

    #[kernel(workgroup = [64], grid = [1], constants(GROUP = [64]))]
    pub fn sums(x: &[f32], out: &mut [f32], #[workgroup] tile: &mut [u32; GROUP]) {
        out[0] = workgroup_sum(tile, local_index(), x[0]);
    }

    #[kernel(workgroup = [64], grid = [1], types(T = [u32]))]
    pub fn nudged<T>(x: &mut [T]) {
        x[0] = nudge(x[0]);
    }
}

fn main() {}
