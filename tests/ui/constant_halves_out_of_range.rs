// WGSL evaluates `unpack_2x16_float` and `pack_2x16_float` of constants, and refuses an
// infinite or NaN half and a lane that `f16` cannot hold.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn halves(x: &mut [f32], y: &mut [u32]) {
        x[0] = unpack_2x16_float(0x7c00u32).x;
        x[1] = unpack_2x16_float(0x3c00_7e00u32).y;
        x[2] = unpack_2x16_float(0x3c00_7bffu32).x;
        y[0] = pack_2x16_float(vec2(70000.0, 1.0));
        y[1] = pack_2x16_float(vec2(65504.0, -65504.0));
        y[2] = pack_2x16_float(vec2(1.0, 0.0) * -65505.0);
    }
}

fn main() {}
