// Tint refuses arrays of 65536 elements or more, even where the declared workgroup memory
// would allow them.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 1048576))]
    pub fn hungry(out: &mut [f32], #[workgroup] big: &mut [f32; 262144]) {
        big[local_index()] = 1.0;
        workgroup_barrier();
        out[local_index()] = big[63 - local_index()];
    }

    #[kernel(workgroup = [64], grid = [1], limits(workgroup_memory = 262144), constants(N = [1024, 65536]))]
    pub fn by_instance(out: &mut [f32], #[workgroup] words: &mut [u32; N]) {
        words[local_index()] = 1;
        workgroup_barrier();
        out[local_index()] = words[0] as f32;
    }
}

fn main() {}
