// A library's helper that names its callers' constants is checked where a kernel calls it, but
// the functions it calls are the library's to name: a call of a helper the library neither
// defines nor imports is an error in the library, not resolved in whichever module imports it.

#[tessera::device]
mod tiles {
    fn tile_row(t: u32) -> u32 {
        pixel_row(t) * BLOCK
    }
}

fn main() {}
