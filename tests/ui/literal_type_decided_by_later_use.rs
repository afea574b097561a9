// An integer literal's type may be decided by a use after the one that needs it to be signed:
// the macro checks such uses again once the type is known, as rustc does.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [1], grid = [1])]
    pub fn run(y: &mut [u32]) {
        let v = 0;
        let s = v.signum();
        match v {
            -1 => y[0] = s,
            _ => {}
        }
        y[1] = bitcast::<u32>(v);
    }
}

fn main() {}
