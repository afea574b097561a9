//! [`GpuBuffer`]: a typed storage buffer on the device, and the upload, zeroing, overwrite and
//! read-back paths between it and host memory.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::error::{Error, Result};
use crate::runtime::Runtime;

/// A storage buffer of `len` elements of `T` on the device.
///
/// A kernel's read-only binding takes `&GpuBuffer<T>` and a read-write binding
/// `&mut GpuBuffer<T>`, so one buffer cannot be bound as both, and a buffer of the wrong element
/// type does not compile.
///
/// ```no_run
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// # let rt = kernel_runtime::Runtime::new()?;
/// let mut x = rt.upload(&[1u32, 2, 3])?;
/// x.write(&rt, &[4, 5, 6])?;
/// assert_eq!(x.read(&rt)?, vec![4, 5, 6]);
/// let zeros = rt.zeros::<f32>(1024)?;
/// assert_eq!(zeros.len(), 1024);
/// # Ok(()) }
/// ```
pub struct GpuBuffer<T: Pod> {
    buffer: wgpu::Buffer,
    len: usize,
    element: PhantomData<T>,
}

/// wgpu copies and writes in multiples of 4 bytes; buffers are never empty so they can be bound.
fn padded_size(bytes: u64) -> u64 {
    bytes.max(1).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT)
}

const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl<T: Pod> GpuBuffer<T> {
    /// Uploads `data` into a new buffer (same as [`Runtime::upload`]).
    pub fn from_slice(rt: &Runtime, data: &[T]) -> Result<Self> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let size = Self::checked_size(rt, data.len())?;
        let mut contents = bytes.to_vec();
        contents.resize(size as usize, 0);
        let buffer = rt.scoped("creating a buffer", || {
            rt.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("tessera buffer"),
                    contents: &contents,
                    usage: USAGE,
                })
        })?;
        Ok(GpuBuffer {
            buffer,
            len: data.len(),
            element: PhantomData,
        })
    }

    /// A new buffer of `len` zeroed elements (same as [`Runtime::zeros`]).
    pub fn zeroed(rt: &Runtime, len: usize) -> Result<Self> {
        let size = Self::checked_size(rt, len)?;
        let buffer = rt.scoped("creating a buffer", || {
            rt.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("tessera buffer"),
                size,
                usage: USAGE,
                mapped_at_creation: false,
            })
        })?;
        Ok(GpuBuffer {
            buffer,
            len,
            element: PhantomData,
        })
    }

    /// The allocation size for `len` elements, checked against the device's limits.
    fn checked_size(rt: &Runtime, len: usize) -> Result<u64> {
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        let limits = &rt.info().limits;
        let checks = [
            (limits.max_buffer_size, "max_buffer_size"),
            (
                limits.max_storage_buffer_binding_size,
                "max_storage_buffer_binding_size",
            ),
        ];
        for (limit, limit_name) in checks {
            if bytes > limit {
                return Err(Error::BufferTooLarge {
                    bytes,
                    limit,
                    limit_name,
                });
            }
        }
        Ok(padded_size(bytes))
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The size of the elements in bytes (the allocation may be up to 3 bytes larger).
    pub fn size_in_bytes(&self) -> u64 {
        (self.len * size_of::<T>()) as u64
    }

    /// The underlying wgpu buffer, for interoperation. Its usages are `STORAGE | COPY_SRC | COPY_DST`.
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Overwrites the whole buffer with `data`, which must have the buffer's length.
    ///
    /// The write takes effect in program order: after every dispatch issued before it
    /// (queued, or recorded in a [`Batch`](crate::Batch) not yet submitted: those are
    /// submitted first) and before every dispatch issued after it.
    pub fn write(&mut self, rt: &Runtime, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len,
                given: data.len(),
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        let mut bytes = bytemuck::cast_slice::<T, u8>(data).to_vec();
        bytes.resize(padded_size(bytes.len() as u64) as usize, 0);
        // The write must not overtake queued dispatches that read the buffer.
        rt.flush()?;
        rt.scoped("writing a buffer", || {
            rt.raw_queue().write_buffer(&self.buffer, 0, &bytes)
        })
    }

    /// Copies the buffer back to the host, waiting for every dispatch issued before (queued or
    /// recorded in a batch not yet submitted: those are submitted first).
    pub fn read(&self, rt: &Runtime) -> Result<Vec<T>> {
        let staging = self.copy_to_staging(rt)?;
        let slot = MapSlot::default();
        staging.map_async(wgpu::MapMode::Read, .., slot.callback());
        rt.wait()?;
        match slot.take() {
            Some(result) => result?,
            None => {
                return Err(Error::Internal {
                    operation: "reading a buffer back".into(),
                    message: "the buffer was not mapped after the GPU finished".into(),
                })
            }
        }
        self.collect_mapped(&staging)
    }

    /// Copies the buffer back to the host without blocking the calling thread.
    ///
    /// On native backends the returned future drives the device itself: it checks for
    /// completion each time it is polled and asks to be polled again until the copy is done.
    pub fn read_async<'a>(&'a self, rt: &'a Runtime) -> impl Future<Output = Result<Vec<T>>> + 'a {
        let started = self.copy_to_staging(rt).map(|staging| {
            let slot = MapSlot::default();
            staging.map_async(wgpu::MapMode::Read, .., slot.callback());
            (staging, slot)
        });
        async move {
            let (staging, slot) = started?;
            MapFuture { rt, slot }.await?;
            self.collect_mapped(&staging)
        }
    }

    fn copy_to_staging(&self, rt: &Runtime) -> Result<wgpu::Buffer> {
        rt.flush()?;
        rt.scoped("reading a buffer back", || {
            let size = self.buffer.size();
            let staging = rt.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("tessera read-back"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&self.buffer, 0, &staging, 0, size);
            rt.raw_queue().submit([encoder.finish()]);
            staging
        })
    }

    fn collect_mapped(&self, staging: &wgpu::Buffer) -> Result<Vec<T>> {
        let bytes = self.size_in_bytes() as usize;
        let values = bytemuck::pod_collect_to_vec(&staging.get_mapped_range(..)?[..bytes]);
        staging.unmap();
        Ok(values)
    }
}

impl<T: Pod> std::fmt::Debug for GpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("element", &std::any::type_name::<T>())
            .field("len", &self.len)
            .finish()
    }
}

/// Where a `map_async` callback leaves its result and finds the task to wake.
#[derive(Clone, Default)]
struct MapSlot(Arc<Mutex<MapState>>);

/// The mapping's outcome once known, and the task waiting for it.
type MapState = (Option<Result<(), wgpu::BufferAsyncError>>, Option<Waker>);

impl MapSlot {
    fn callback(&self) -> impl FnOnce(Result<(), wgpu::BufferAsyncError>) + Send + 'static {
        let slot = self.clone();
        move |result| {
            if let Ok(mut state) = slot.0.lock() {
                state.0 = Some(result);
                if let Some(waker) = state.1.take() {
                    waker.wake();
                }
            }
        }
    }

    fn take(&self) -> Option<Result<(), wgpu::BufferAsyncError>> {
        self.0.lock().ok().and_then(|mut state| state.0.take())
    }

    fn register(&self, waker: &Waker) {
        if let Ok(mut state) = self.0.lock() {
            state.1 = Some(waker.clone());
        }
    }
}

struct MapFuture<'a> {
    rt: &'a Runtime,
    slot: MapSlot,
}

impl Future for MapFuture<'_> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Some(result) = self.slot.take() {
            return Poll::Ready(result.map_err(Error::from));
        }
        if let Err(error) = self.rt.check_device() {
            return Poll::Ready(Err(error));
        }
        self.slot.register(cx.waker());
        if let Err(error) = self.rt.device().poll(wgpu::PollType::Poll) {
            return Poll::Ready(Err(error.into()));
        }
        match self.slot.take() {
            Some(result) => Poll::Ready(result.map_err(Error::from)),
            None => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

impl Runtime {
    /// Uploads `data` into a new [`GpuBuffer`].
    pub fn upload<T: Pod>(&self, data: &[T]) -> Result<GpuBuffer<T>> {
        GpuBuffer::from_slice(self, data)
    }

    /// A new [`GpuBuffer`] of `len` zeroed elements.
    pub fn zeros<T: Pod>(&self, len: usize) -> Result<GpuBuffer<T>> {
        GpuBuffer::zeroed(self, len)
    }
}
