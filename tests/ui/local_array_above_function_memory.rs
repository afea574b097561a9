// WGSL allows 8192 bytes of local variables per function; each function is counted on its
// own, and an `#[unroll]`ed loop declares its locals once per iteration.
#[tessera::kernels]
mod k {
    fn smooth(x: f32) -> f32 {
        let mut window = [0.0f32; 1024];
        window[0] = x;
        let mut more = [x; 1024];
        window[1] + more[2]
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn big_local(y: &mut [f32]) {
        let mut t = [0.0f32; 4096];
        t[global_id().x] = 1.0;
        y[global_id().x] = t[3] + smooth(1.0);
    }

    #[kernel(workgroup = [64], grid = [1], constants(N = [256, 512]))]
    pub fn unrolled(y: &mut [f32]) {
        #[unroll]
        for i in 0..8 {
            let mut row = [0.0f32; N];
            row[global_id().x] = 1.0;
            y[i] += row[1];
        }
    }
}

fn main() {}
