#[tessera::kernels]
mod k {
    #[kernel(workgroup = [32], grid = [1], features(f16))]
    pub fn product(a: &[f16], c: &mut [f32]) {
        let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
        let fb: FragB16<f16> = coop_load_row_major(&a[256], 16);
        let acc: FragC16<f32> = coop_zero();
        coop_store_row_major(coop_multiply_add(fa, fb, acc), &mut c[0], 16);
    }
}

fn main() {}
