// `conv2d` and `conv_2d` both make the launcher `Conv2d`: one error, at the second kernel.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn conv2d(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn conv_2d(y: &mut [f32]) {
        y[global_id().x] = 2.0;
    }
}

fn main() {
    let _ = k::Conv2d::new;
}
