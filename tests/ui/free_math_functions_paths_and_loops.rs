#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &[f32], y: &mut [f32]) {
        let i = local_index();
        let a = vec2(x[0], x[1]);
        // Free forms of math methods.
        let d = dot(a, a);
        let m = min(x[i], 1.0);
        let c = clamp(d, 0.0, 1.0);
        // Paths: an infinity WGSL cannot spell, and a path kernels do not know.
        let big = f32::INFINITY;
        let r = std::f64::consts::PI;
        let mut total = m + c + big + r;
        // Rust cannot reverse a stepped inclusive range.
        for j in (0..=8u32).step_by(2).rev() {
            total += x[j];
        }
        y[i] = total;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn wide(x: &[f64]) {}
}

fn main() {}
