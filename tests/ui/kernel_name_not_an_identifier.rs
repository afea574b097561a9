// A kernel's launcher is its name in CamelCase; names that give no Rust type name are refused
// at the name. A raw identifier is fine: `r#match` gives `Match`.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1])]
    pub fn _3x3(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn __(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn self_(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn r#match(y: &mut [f32]) {
        y[global_id().x] = 1.0;
    }
}

fn main() {
    let _ = k::Match::new;
}
