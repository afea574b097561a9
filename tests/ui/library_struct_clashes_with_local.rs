// An imported library's `Params` struct is the module's by that name: a struct of the module's
// own with the same name, or a `use` bringing one, cannot stand beside it.

#[tessera::kernels]
mod clash {
    #[device]
    use tessera_test_library::windows;

    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct WindowParams {
        pub n: u32,
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn k(p: &WindowParams, #[len(p.n)] y: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            y[i] = 1.0;
        }
    }
}

#[tessera::kernels]
mod through_use {
    // `epilogues` brings `windows`' struct too, which a `use` already names here.
    #[device]
    use tessera_test_library::epilogues;
    #[allow(unused_imports)]
    use tessera_test_library::windows::WindowParams;
}

fn main() {}
