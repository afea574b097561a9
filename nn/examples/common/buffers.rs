//! Buffers whose length follows the data: what the examples upload each step.

use tessera::{GpuBuffer, Result, Runtime};

/// Writes `data` into `buffer`, replaced by a new one when the length differs.
pub fn upload<T: bytemuck::Pod>(buffer: &mut GpuBuffer<T>, rt: &Runtime, data: &[T]) -> Result<()> {
    if buffer.len() == data.len() {
        buffer.write(rt, data)
    } else {
        *buffer = rt.upload(data)?;
        Ok(())
    }
}
