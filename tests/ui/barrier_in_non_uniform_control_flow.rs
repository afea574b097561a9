#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn stage(y: &mut [f32], #[workgroup] tile: &mut [f32; 64]) {
        let i = local_index();
        if i < 32 {
            tile[i] = 1.0;
            workgroup_barrier();
        }
        y[i] = tile[i];
    }

    /// Reads a buffer other invocations write: its result differs between invocations.
    fn first(y: &[f32]) -> f32 {
        y[0]
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn through_helper(y: &mut [f32]) {
        if first(y) > 0.0 {
            workgroup_barrier();
        }
        y[local_index()] = 1.0;
    }
}

fn main() {}
