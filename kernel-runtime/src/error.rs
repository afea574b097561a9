//! The runtime's error type. Every failure a caller can cause or meet (no adapter, a wgpu
//! validation or out-of-memory error, a lost device, a grid or buffer that does not fit) is a
//! value of [`Error`]; nothing in the runtime panics on them.

use std::fmt;

/// What went wrong in the runtime.
///
/// Each message says what happened and, where there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No adapter could be found, or none matched `TESSERA_ADAPTER`.
    #[error("{}", no_adapter_message(.requested.as_deref(), .available))]
    NoAdapter {
        /// The value of `TESSERA_ADAPTER`, when it was set.
        requested: Option<String>,
        /// Names of the adapters that were found, with their backends.
        available: Vec<String>,
    },

    /// The adapter refused to create a device.
    #[error("the adapter `{adapter}` could not create a device: {source}")]
    RequestDevice {
        /// The adapter's name.
        adapter: String,
        /// wgpu's reason.
        #[source]
        source: wgpu::RequestDeviceError,
    },

    /// wgpu rejected an operation as invalid (a wgpu validation error, captured in an error scope).
    #[error("wgpu rejected {operation}: {message}")]
    Validation {
        /// What the runtime was doing, e.g. "creating the pipeline `saxpy`".
        operation: String,
        /// wgpu's description of the problem.
        message: String,
    },

    /// The device ran out of memory during an operation.
    #[error("out of GPU memory while {operation}; free buffers or use smaller shapes")]
    OutOfMemory {
        /// What the runtime was doing.
        operation: String,
    },

    /// wgpu or the driver failed in a way WebGPU does not classify.
    #[error("internal wgpu error while {operation}: {message}")]
    Internal {
        /// What the runtime was doing.
        operation: String,
        /// wgpu's description of the problem.
        message: String,
    },

    /// The device was lost (destroyed, reset by the driver, or the GPU went away).
    /// Every later operation on this runtime returns this error; create a new [`Runtime`](crate::Runtime).
    #[error("the GPU device was lost ({reason:?}): {message}; create a new Runtime")]
    DeviceLost {
        /// wgpu's reason.
        reason: wgpu::DeviceLostReason,
        /// The driver's message, possibly empty.
        message: String,
    },

    /// A dispatch asked for more workgroups in one dimension than the device allows.
    #[error(
        "`{kernel}` asks for a grid of {grid:?} workgroups, but this device allows at most {limit} \
         per dimension; split the work over more dimensions or launches"
    )]
    GridTooLarge {
        /// The kernel or pipeline label.
        kernel: String,
        /// The requested grid.
        grid: [u32; 3],
        /// The device's `max_compute_workgroups_per_dimension`.
        limit: u32,
    },

    /// A buffer bound to a kernel is shorter than the kernel needs.
    #[error(
        "binding `{binding}` of `{kernel}` needs at least {needed} elements, but the buffer has {given}"
    )]
    BufferTooShort {
        /// The kernel or pipeline label.
        kernel: String,
        /// The binding's name.
        binding: String,
        /// Elements the kernel's parameters imply.
        needed: u64,
        /// Elements the buffer holds.
        given: u64,
    },

    /// A buffer would exceed what the device can allocate.
    #[error(
        "a buffer of {bytes} bytes exceeds this device's limit of {limit} bytes ({limit_name}); \
         split the data over several smaller buffers"
    )]
    BufferTooLarge {
        /// Requested size in bytes.
        bytes: u64,
        /// The limit in bytes.
        limit: u64,
        /// Which device limit it is.
        limit_name: &'static str,
    },

    /// A buffer bound to a kernel is larger than the device binds to one storage binding
    /// (`max_storage_buffer_binding_size`). Such a buffer can be made, written, copied and
    /// read; only binding it whole is refused, before anything is recorded.
    #[error(
        "`{kernel}` cannot bind `{binding}`: its buffer of {bytes} bytes exceeds this device's \
         limit of {limit} bytes for one storage binding (max_storage_buffer_binding_size); \
         split the data over buffers within the limit and run `{kernel}` once for each part"
    )]
    BindingTooLarge {
        /// The kernel (a launcher's Rust name) or pipeline label.
        kernel: String,
        /// The binding: the kernel's parameter (a launcher's), or `binding N` for a dispatch
        /// of a pipeline.
        binding: String,
        /// The buffer's size in bytes.
        bytes: u64,
        /// The device's `max_storage_buffer_binding_size`.
        limit: u64,
    },

    /// Data written to a buffer does not have the buffer's length.
    #[error("cannot write {given} elements into a buffer of {expected}; the lengths must match")]
    LengthMismatch {
        /// The buffer's length in elements.
        expected: usize,
        /// The data's length in elements.
        given: usize,
    },

    /// A range of elements is not within a buffer.
    #[error(
        "elements {start}..{end} are not within the buffer `{buffer}` of {len} elements; ranges \
         end at most at the buffer's length"
    )]
    RangeOutOfBounds {
        /// The buffer's label.
        buffer: String,
        /// The first element of the range.
        start: usize,
        /// The element after the last of the range.
        end: usize,
        /// The buffer's length in elements.
        len: usize,
    },

    /// The arguments of a dispatch do not match the pipeline's bindings.
    #[error("`{kernel}`: {problem}")]
    Bindings {
        /// The kernel or pipeline label.
        kernel: String,
        /// What does not match.
        problem: String,
    },

    /// A buffer was used with a runtime other than the one that made it (see
    /// [`Runtime`](crate::Runtime)). Nothing was read, written or recorded.
    #[error(
        "{operation}: the buffer `{buffer}` was made by another Runtime; a buffer can only be \
         used with the Runtime that made it (read it back and upload it to this one)"
    )]
    ForeignBuffer {
        /// What was refused: the method, e.g. `` `GpuBuffer::read` ``, or the binding, e.g.
        /// `` binding 1 of `saxpy` `` (a dispatch) or `` binding `x` of `saxpy` `` (a
        /// generated launcher).
        operation: String,
        /// The buffer's label.
        buffer: String,
    },

    /// A pipeline, or a kernel's launcher, was used on a runtime other than the one that
    /// made it (see [`Runtime`](crate::Runtime)). Nothing was recorded.
    #[error(
        "`{kernel}`: its pipeline or launcher was made by another Runtime, and runs only on \
         that one; make the kernel's launcher (or build the pipeline) on this Runtime"
    )]
    ForeignPipeline {
        /// The kernel or pipeline label.
        kernel: String,
    },

    /// Mapping a buffer for reading failed.
    #[error("reading a buffer back failed: {0}")]
    Map(#[from] wgpu::BufferAsyncError),

    /// A mapped buffer could not be viewed.
    #[error("reading a buffer back failed: {0}")]
    MapRange(#[from] wgpu::MapRangeError),

    /// Waiting for the GPU failed.
    #[error("waiting for the GPU failed: {0}")]
    Poll(#[from] wgpu::PollError),

    /// A kernel needs a device feature this device does not have.
    #[error(
        "`{kernel}` needs the device feature {feature}, which this device lacks: its adapter \
         does not offer it, or the device was created without it (`Runtime::new` asks for every \
         optional feature the adapter offers; a device handed to `Runtime::from_wgpu` must have \
         been requested with it)"
    )]
    MissingFeature {
        /// The kernel or pipeline label.
        kernel: String,
        /// The feature's name.
        feature: String,
    },

    /// A launcher was asked for an instance of its constants that the kernel does not declare.
    #[error("`{kernel}` has no instance {requested}; it declares {}", .available.join(", "))]
    UnknownInstance {
        /// The kernel.
        kernel: String,
        /// The constants asked for.
        requested: String,
        /// The instances the kernel declares.
        available: Vec<String>,
    },

    /// An operation was given arguments it cannot work with (shapes, sizes).
    #[error("{operation}: {problem}")]
    InvalidArgument {
        /// The operation, e.g. `gemm`.
        operation: String,
        /// What is wrong with the arguments.
        problem: String,
    },

    /// The sanitizer ([`Runtime::with_sanitizer`](crate::Runtime::with_sanitizer)) found a
    /// data race or an index out of bounds in a dispatch of the submission that returned it.
    /// The dispatch ran to its end; what it wrote is as the kernel left it.
    #[error("{0}")]
    Hazard(Box<crate::sanitizer::Hazard>),

    /// A kernel needs more of a device limit than this device has.
    #[error("`{kernel}` needs {limit} of at least {needed}, but this device has {available}")]
    LimitExceeded {
        /// The kernel or pipeline label.
        kernel: String,
        /// The limit's name, as wgpu spells it.
        limit: &'static str,
        /// What the kernel needs.
        needed: u64,
        /// What the device has.
        available: u64,
    },
}

/// The runtime's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Classifies an error captured from a wgpu error scope.
    pub(crate) fn from_wgpu(operation: impl fmt::Display, error: wgpu::Error) -> Self {
        let operation = operation.to_string();
        match error {
            wgpu::Error::OutOfMemory { .. } => Error::OutOfMemory { operation },
            wgpu::Error::Validation { description, .. } => Error::Validation {
                operation,
                message: description.trim_end().to_owned(),
            },
            wgpu::Error::Internal { description, .. } => Error::Internal {
                operation,
                message: description.trim_end().to_owned(),
            },
        }
    }
}

fn no_adapter_message(requested: Option<&str>, available: &[String]) -> String {
    match requested {
        Some(wanted) if !available.is_empty() => format!(
            "TESSERA_ADAPTER={wanted:?} matches none of the adapters found: {}; \
             set it to part of one of those names, or unset it",
            available.join(", ")
        ),
        _ => "no GPU adapter was found; install a Vulkan, Metal or DX12 driver, or on a machine \
              without a GPU the software Vulkan driver lavapipe (Debian/Ubuntu: \
              `apt-get install mesa-vulkan-drivers`)"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Box<dyn std::error::Error + Send + Sync> {
        "driver said no".into()
    }

    #[test]
    fn out_of_memory_is_classified() {
        let error = Error::from_wgpu(
            "creating a buffer",
            wgpu::Error::OutOfMemory { source: source() },
        );
        assert!(
            matches!(&error, Error::OutOfMemory { operation } if operation == "creating a buffer")
        );
        assert!(error
            .to_string()
            .contains("out of GPU memory while creating a buffer"));
    }

    #[test]
    fn validation_keeps_wgpu_description() {
        let error = Error::from_wgpu(
            "dispatching `k`",
            wgpu::Error::Validation {
                source: source(),
                description: "bad binding\n".into(),
            },
        );
        assert_eq!(
            error.to_string(),
            "wgpu rejected dispatching `k`: bad binding"
        );
    }

    #[test]
    fn no_adapter_says_how_to_get_one() {
        let error = Error::NoAdapter {
            requested: None,
            available: vec![],
        };
        assert!(error
            .to_string()
            .contains("apt-get install mesa-vulkan-drivers"));
        let error = Error::NoAdapter {
            requested: Some("h100".into()),
            available: vec!["llvmpipe (Vulkan)".into()],
        };
        assert!(error
            .to_string()
            .contains("matches none of the adapters found: llvmpipe (Vulkan)"));
    }
}
