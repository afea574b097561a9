#[repr(C)]
#[derive(Clone, Copy, tessera::Params)]
pub struct Params {
    pub n: u32,
    pub scale: [f32; 4],
}

fn main() {}
