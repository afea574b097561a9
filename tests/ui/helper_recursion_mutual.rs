#[tessera::kernels]
mod k {
    fn is_even(n: u32) -> bool {
        if n == 0 {
            true
        } else {
            is_odd(n - 1)
        }
    }

    fn is_odd(n: u32) -> bool {
        if n == 0 {
            false
        } else {
            is_even(n - 1)
        }
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [u32]) {
        y[0] = if is_even(4) { 1 } else { 0 };
    }
}

fn main() {}
