//! [`VariantInfo`]: what a generated launcher reports about each pipeline it can launch.

use std::fmt;

/// One generated variant of a kernel: an instance of its constants, general or specialized.
///
/// Every launcher has a `VARIANTS` constant listing these; its rustdoc shows the same table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VariantInfo {
    /// The entry point in the module's WGSL.
    pub entry_point: &'static str,
    /// The instance's constants, e.g. `TILE = 16`, or empty.
    pub constants: &'static str,
    /// The specialization's condition, e.g. `stride == 1`, or empty for the general body.
    pub specialization: &'static str,
    /// Invocations per workgroup in x, y, z.
    pub workgroup_size: [u32; 3],
    /// Bytes of workgroup memory.
    pub workgroup_memory: u32,
    /// The bindings, e.g. `p: uniform Params, x: read [f32], y: read_write [f32]`.
    pub bindings: &'static str,
}

impl fmt::Display for VariantInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.workgroup_size;
        write!(f, "{}", self.entry_point)?;
        if !self.constants.is_empty() {
            write!(f, " [{}]", self.constants)?;
        }
        if !self.specialization.is_empty() {
            write!(f, " when {}", self.specialization)?;
        }
        write!(
            f,
            ": workgroup {x}x{y}x{z}, {} B workgroup memory; {}",
            self.workgroup_memory, self.bindings
        )
    }
}
