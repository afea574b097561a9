// WebGPU's default maxStorageBuffersPerShaderStage is 8: the ninth is refused here rather
// than by `new` at run time.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn sum9(
        a: &[f32],
        b: &[f32],
        c: &[f32],
        d: &[f32],
        e: &[f32],
        f: &[f32],
        g: &[f32],
        h: &[f32],
        y: &mut [f32],
    ) {
        let i = global_id().x;
        y[i] = a[i] + b[i] + c[i] + d[i] + e[i] + f[i] + g[i] + h[i];
    }
}

fn main() {}
