// WGSL keywords, reserved words and predeclared names are fine as names: the WGSL gets other
// spellings. Only a message shows a name, and then the user's. Here the one mistake (an `f32`
// added to a `u32`) is reported with the user's names.
#[tessera::kernels]
mod k {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Window {
        pub target: u32,
        pub sampler: f32,
    }

    fn texture(var: f32) -> f32 {
        var * 2.0
    }

    #[kernel(workgroup = [64], grid = [1])]
    pub fn filter(r#let: &Window, storage: &mut [f32]) {
        let read_write = texture(r#let.sampler);
        storage[global_id().x] = read_write + r#let.target;
    }
}

fn main() {}
