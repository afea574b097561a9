// A workgroup value (`#[workgroup] s: &mut f32`) is declared `&mut`, read and written whole,
// and is not an array a helper could borrow.
#[tessera::kernels]
mod k {
    fn add(a: &mut [f32; 1], v: f32) {
        a[0] += v;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(x: &mut [f32], #[workgroup] s: &mut f32, #[workgroup] q: &f32) {
        add(&mut s, 1.0);
        s[0] = 1.0;
        x[0] = *s;
    }
}

fn main() {}
