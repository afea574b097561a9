// One error, at the field's type: the uses of `n` below add none.
#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Sizes {
        pub n: u64,
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)], specialize(p.n == 64))]
    pub fn fill(p: &Sizes, #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = 1.0;
        }
    }
}

fn main() {
    let _: Option<k::FillArgs> = None;
    let _ = k::Sizes { n: 1 };
}
