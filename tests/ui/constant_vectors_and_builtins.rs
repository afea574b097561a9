// WGSL evaluates vectors and builtins of constants too, and refuses the same problems there:
// the macro finds them through constructors, swizzles, unpacking and integer builtins.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &[u32], y: &mut [u32], z: &mut [f32]) {
        let i = local_index();
        y[i] = x[i] / vec2(1u32, 0).y;
        let halves = vec2(x[0], x[1]) / vec2(2u32, 0);
        y[i] += halves.x;
        y[i] += ceil_div(x[i], 3u32.min(0));
        y[i] += ceil_div(4294967295u32, 2);
        z[i] = f32::from_bits(2147483647u32 * ceil_div(1u32, 31));
        z[i] += vec3(0.0f32, 0.0, 0.0).normalize().x;
        z[i] += unpack_4x8_unorm(0).normalize().y;
        z[i] += (vec2(3.0e38f32, 1.0) * 10.0).x;
        z[i] += vec2(2.0e19f32, 0.0).length();
        y[i] += (-2147483647i32 - 1).abs() as u32;
    }
}

fn main() {}
