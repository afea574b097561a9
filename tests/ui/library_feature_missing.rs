// A device function that uses subgroups, called from a kernel that does not declare them:
// reported at the kernel, whose attribute is what to change.

#[tessera::kernels]
mod k {
    #[device]
    use tessera_test_library::reductions;

    #[kernel(workgroup = [64], grid = [1])]
    pub fn totals(x: &[f32], out: &mut [f32]) {
        out[local_index()] = subgroup_total(x[local_index()]);
    }
}

fn main() {}
