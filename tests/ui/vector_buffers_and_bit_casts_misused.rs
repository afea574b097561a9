#[tessera::kernels]
mod k {
    /// `Vec3` is padded to 16 bytes in storage: not a buffer element.
    #[kernel(workgroup = [64], grid = [1])]
    pub fn points(p: &mut [Vec3<f32>]) {
        p[global_id().x] = vec3(0.0, 0.0, 0.0);
    }

    #[kernel(workgroup = [64], grid = [1], features(f16))]
    pub fn casts(x: &[Vec2<f32>], words: &mut [u32], halves: &mut [f16]) {
        let i = global_id().x;
        // Eight bytes into four.
        words[i] = bitcast::<u32>(x[i]);
        // naga cannot bit-cast between f16 and 32-bit types.
        halves[i] = bitcast::<Vec2<f16>>(words[i]).x;
        // A missing target type.
        words[i] = bitcast(x[i].x);
    }
}

fn main() {}
