// A library's kernel is compiled in the kernels module that imports it: its mistake is
// reported once, at the library's tokens, and its name may not clash with the module's own.

#[tessera::device]
mod passes {
    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn scale(x: &[f32]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] = 2.0 * x[i];
        }
    }

    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn clear(x: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] = 0.0;
        }
    }
}

#[tessera::kernels]
mod module {
    #[device]
    use super::passes;

    #[kernel(workgroup = [64], grid = [ceil_div(x.len(), 64)])]
    pub fn clear(x: &mut [f32]) {
        let i = global_id().x;
        if i < x.len() {
            x[i] = 1.0;
        }
    }
}

fn main() {}
