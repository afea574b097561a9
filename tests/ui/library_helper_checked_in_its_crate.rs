// A library's helper that names none of its callers' constants or types is checked where the
// library is written, once, whether or not a kernel calls it.

#[tessera::device]
mod geometry {
    const SIDE: u32 = 4;

    fn area() -> f32 {
        SIDE * SIDE
    }

    #[kernel(workgroup = [1], grid = [1])]
    fn not_here(x: &mut [f32]) {
        x[0] = 1.0;
    }
}

fn main() {}
