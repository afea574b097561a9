// WebGPU's default maxUniformBuffersPerShaderStage is 12; a kernel takes one `Params` struct
// (plus, when it uses invocation ids, the hidden grid uniform), so it never gets near: the
// second `Params` parameter is already refused.
#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct P {
        pub a: f32,
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn many(
        p0: &P, p1: &P, p2: &P, p3: &P, p4: &P, p5: &P, p6: &P,
        p7: &P, p8: &P, p9: &P, p10: &P, p11: &P, p12: &P,
        y: &mut [f32],
    ) {
        y[global_id().x] = p0.a + p12.a;
    }
}

fn main() {}
