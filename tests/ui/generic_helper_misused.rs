// Calls of generic helpers (`fn f<E>(..)`): each call's arguments say what `E` is. Arguments
// that disagree, a call no argument settles, and a copy whose body does not hold for the
// type a call passes are reported at the user's tokens.

#[tessera::kernels]
mod k {
    #[device]
    use tessera_test_library::elementwise;

    fn add<E>(a: E, b: E) -> E {
        a + b
    }

    fn zero<E>() -> E {
        0 as E
    }

    fn halve<E>(v: E) -> E {
        v >> 1u32
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn uses(x: &[f32], x4: &[Vec4<f32>], out: &mut [f32]) {
        out[0] = add(x[0], x4[0]).x;
        out[1] = zero();
        out[2] = halve(x[0]);
        out[3] = largest(x4, 0, 4.0);
    }
}

fn main() {}
