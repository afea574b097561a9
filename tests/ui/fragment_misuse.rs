// Each kernel makes one mistake with matrix fragments.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
    pub fn roles_swapped(a: &[f16], c: &mut [f32]) {
        let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
        let fb: FragB16<f16> = coop_load_row_major(&a[256], 16);
        let acc: FragC16<f32> = coop_zero();
        coop_store_row_major(coop_multiply_add(fb, fa, acc), &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
    pub fn sizes_differ(a: &[f16], c: &mut [f32]) {
        let fa: FragA16<f16> = coop_load_row_major(&a[0], 16);
        let fb: FragB8<f16> = coop_load_row_major(&a[256], 8);
        let acc: FragC16<f32> = coop_zero();
        coop_store_row_major(coop_multiply_add(fa, fb, acc), &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(f16, cooperative_matrix))]
    pub fn loaded_from_f32(x: &[f32], c: &mut [f32]) {
        let fa: FragA16<f16> = coop_load_row_major(&x[0], 16);
        let fb: FragB16<f16> = coop_load_row_major(&x[256], 16);
        let acc: FragC16<f32> = coop_zero();
        coop_store_row_major(coop_multiply_add(fa, fb, acc), &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn stored_to_read_only(c: &[f32]) {
        let acc: FragC16<f32> = coop_zero();
        coop_store_row_major(acc, &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn type_not_given(x: &[f32], c: &mut [f32]) {
        let acc = coop_load_row_major(&x[0], 16);
        coop_store_row_major(acc, &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn fragments_multiplied(x: &[f32], c: &mut [f32]) {
        let acc: FragC16<f32> = coop_load_row_major(&x[0], 16);
        coop_store_row_major(acc * acc, &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn scaled_by_an_integer(x: &[f32], c: &mut [f32]) {
        let acc: FragC16<f32> = coop_load_row_major(&x[0], 16);
        coop_store_row_major(acc * 2u32, &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn scaled_in_a_branch(c: &mut [f32]) {
        let mut acc: FragC16<f32> = coop_zero();
        if local_index() < 16 {
            acc = acc * 2.0;
        }
        coop_store_row_major(acc, &mut c[0], 16);
    }

    #[kernel(workgroup = [32], grid = [1], features(cooperative_matrix))]
    pub fn store_in_a_branch(c: &mut [f32]) {
        let acc: FragC16<f32> = coop_zero();
        if local_index() < 16 {
            coop_store_row_major(acc, &mut c[0], 16);
        }
    }
}

fn main() {}
