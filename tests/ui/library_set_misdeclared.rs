// A library's set of constants is checked where the library is declared, with the library's
// own constants: a derived constant naming one it does not have, a repeated value, fields, a
// set the importing modules could not name.

#[tessera::device]
pub mod tiling {
    pub const LANES: u32 = 2;

    #[constants(TILE = [8, 8], SPAN = TILE * LANES * WIDTH)]
    pub struct Tiling;

    #[constants(REG = [4])]
    pub struct Blocking {
        pub reg: u32,
    }

    #[constants(WAYS = [2, 4])]
    struct Hidden;
}

fn main() {}
