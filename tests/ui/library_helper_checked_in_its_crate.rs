// A library's helper that names none of its callers' constants or types is checked where the
// library is written, once, whether or not a kernel calls it.

#[tessera::device]
mod geometry {
    const SIDE: u32 = 4;

    fn area() -> f32 {
        SIDE * SIDE
    }
}

fn main() {}
