// A derived constant must have a `u32` value in every instance: the error names the instance
// where it has none, and why.
#[tessera::kernels]
mod k {
    #[kernel(workgroup = [64], grid = [1], constants(A = [0, 2], B = 8 / A))]
    pub fn divided(x: &mut [u32]) {
        x[0] = B;
    }

    #[kernel(workgroup = [64], grid = [1], constants(ROWS = [4, 8], zip(SPAN = [2, 16], REG = [1, 2]), REST = ROWS - SPAN))]
    pub fn rest(x: &mut [u32]) {
        x[0] = REST;
    }

    #[kernel(workgroup = [64], grid = [1], constants(BLOCK = [1, 65536], AREA = BLOCK * BLOCK))]
    pub fn area(x: &mut [u32]) {
        x[0] = AREA;
    }
}

fn main() {
    let rt = tessera::Runtime::new().unwrap();
    let _ = k::Divided::with_constants(&rt, k::DividedConstants { a: 2 });
    let _ = k::Area::with_constants(&rt, k::AreaConstants { block: 1 }).unwrap().constants().area();
}
