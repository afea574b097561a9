#[tessera::kernels]
mod k {
    fn factorial(n: u32) -> u32 {
        if n <= 1 {
            1
        } else {
            n * factorial(n - 1)
        }
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn run(y: &mut [u32]) {
        y[0] = factorial(5);
    }
}

fn main() {}
