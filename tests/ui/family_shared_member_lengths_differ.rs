// A kernel may serve several families, but its launcher checks one length per binding: the
// families must declare its bindings alike.

#[tessera::kernels]
mod m {
    #[repr(C)]
    #[derive(Clone, Copy, tessera::Params)]
    pub struct Len {
        pub n: u32,
    }

    #[family(first, finish)]
    pub struct Short {
        p: &Len,
        #[len(p.n)]
        t: &mut [f32],
    }

    #[family(second, finish)]
    pub struct Long {
        p: &Len,
        #[len(2 * p.n)]
        t: &mut [f32],
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn first(p: &Len, t: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            t[i] = 1.0;
        }
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn second(p: &Len, t: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            t[i] = 2.0;
        }
    }

    #[kernel(workgroup = [64], grid = [ceil_div(p.n, 64)])]
    pub fn finish(p: &Len, t: &mut [f32]) {
        let i = global_id().x;
        if i < p.n {
            t[i] += 1.0;
        }
    }
}

fn main() {}
