//! [`GpuBuffer`]: a typed storage buffer on the device, and the paths between it and host
//! memory (upload, read and write, whole or in part) and between buffers (copy, fill, clear).

use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::error::{Error, Result};
use crate::runtime::{Runtime, RuntimeId};
use crate::wait::{Completion, Progress, Signal};

/// A storage buffer of `len` elements of `T` on the device.
///
/// A kernel's read-only binding takes `&GpuBuffer<T>` and a read-write binding
/// `&mut GpuBuffer<T>`, so one buffer cannot be bound as both, and a buffer of the wrong element
/// type does not compile.
///
/// Every operation on a buffer (writes, copies, fills, reads, and the dispatches that bind it)
/// takes effect in the order the program issues it.
///
/// A buffer belongs to the [`Runtime`] that made it, and so do its views
/// ([`GpuBuffer::view_as`]): every method that takes a runtime, and every dispatch that binds
/// the buffer, returns [`Error::ForeignBuffer`] when given another one, before anything is
/// read, written or recorded. To move data between runtimes, read it back and upload it.
///
/// ```no_run
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// # let rt = kernel_runtime::Runtime::new()?;
/// let mut x = rt.upload(&[1u32, 2, 3])?;
/// x.write(&rt, &[4, 5, 6])?;
/// assert_eq!(x.read(&rt)?, vec![4, 5, 6]);
/// x.write_range(&rt, 1, &[7])?;
/// assert_eq!(x.read_range(&rt, 1..)?, vec![7, 6]);
///
/// let mut y = rt.zeros_labeled::<u32>("copy of x", 3)?;
/// y.copy_from(&rt, &x)?;
/// y.fill(&rt, 9)?;
/// y.copy_range_from(&rt, &x, ..2, 1)?;
/// assert_eq!(y.read(&rt)?, vec![9, 4, 7]);
/// assert_eq!(y.label(), "copy of x");
/// # Ok(()) }
/// ```
pub struct GpuBuffer<T: Pod> {
    buffer: wgpu::Buffer,
    /// The runtime that made the buffer: the only one it can be used with.
    runtime: RuntimeId,
    len: usize,
    label: String,
    element: PhantomData<T>,
}

/// The label of buffers made without one.
const DEFAULT_LABEL: &str = "tessera buffer";

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
        Self::labeled_from_slice(rt, DEFAULT_LABEL, data)
    }

    /// Uploads `data` into a new buffer named `label` in GPU debuggers and error messages
    /// (same as [`Runtime::upload_labeled`]).
    pub fn labeled_from_slice(rt: &Runtime, label: &str, data: &[T]) -> Result<Self> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let size = Self::checked_size(rt, data.len())?;
        let mut contents = bytes.to_vec();
        contents.resize(size as usize, 0);
        let buffer = rt.scoped(format!("creating the buffer `{label}`"), || {
            rt.device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: &contents,
                    usage: USAGE,
                })
        })?;
        Ok(GpuBuffer {
            buffer,
            runtime: rt.id(),
            len: data.len(),
            label: label.to_owned(),
            element: PhantomData,
        })
    }

    /// A new buffer of `len` zeroed elements (same as [`Runtime::zeros`]).
    pub fn zeroed(rt: &Runtime, len: usize) -> Result<Self> {
        Self::labeled_zeroed(rt, DEFAULT_LABEL, len)
    }

    /// A new buffer of `len` zeroed elements named `label` (same as
    /// [`Runtime::zeros_labeled`]).
    pub fn labeled_zeroed(rt: &Runtime, label: &str, len: usize) -> Result<Self> {
        let size = Self::checked_size(rt, len)?;
        let buffer = rt.scoped(format!("creating the buffer `{label}`"), || {
            rt.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: USAGE,
                mapped_at_creation: false,
            })
        })?;
        Ok(GpuBuffer {
            buffer,
            runtime: rt.id(),
            len,
            label: label.to_owned(),
            element: PhantomData,
        })
    }

    /// The buffer's label: what GPU debuggers and this crate's error messages call it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The runtime that made the buffer, for the checks of a dispatch that binds it.
    pub(crate) fn runtime(&self) -> RuntimeId {
        self.runtime
    }

    /// Returns [`Error::ForeignBuffer`], naming `operation`, unless `rt` made the buffer.
    fn check_runtime(&self, rt: &Runtime, operation: &str) -> Result<()> {
        if self.runtime == rt.id() {
            return Ok(());
        }
        Err(Error::ForeignBuffer {
            operation: operation.to_owned(),
            buffer: self.label.clone(),
        })
    }

    /// The allocation size for `len` elements, checked against the device's largest buffer.
    /// A buffer over the limit of one storage binding can be made (and written, copied and
    /// read); binding it to a kernel is refused then, with an error naming the kernel and
    /// the binding ([`Error::BindingTooLarge`]).
    fn checked_size(rt: &Runtime, len: usize) -> Result<u64> {
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        let limit = rt.info().limits.max_buffer_size;
        if bytes > limit {
            return Err(Error::BufferTooLarge {
                bytes,
                limit,
                limit_name: "max_buffer_size",
            });
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

    /// The buffer's memory seen as elements of `U`, for a kernel that reads them: a
    /// `GpuBuffer<f32>` of 4n elements bound where a kernel takes `&[Vec4<f32>]` (a
    /// `GpuBuffer<[f32; 4]>` on the host), for instance. The view borrows the buffer and
    /// dereferences to a `GpuBuffer<U>` of the same memory and label.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// # let rt = kernel_runtime::Runtime::new()?;
    /// let x = rt.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])?;
    /// let vectors = x.view_as::<[f32; 4]>()?;
    /// assert_eq!(vectors.len(), 2);
    /// assert_eq!(vectors.read(&rt)?[1], [5.0, 6.0, 7.0, 8.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer's size in bytes is not a whole number of
    /// `U`s.
    pub fn view_as<U: Pod>(&self) -> Result<BufferView<'_, U>> {
        Ok(BufferView {
            buffer: self.reinterpreted()?,
            borrowed: PhantomData,
        })
    }

    /// [`GpuBuffer::view_as`] for a kernel that writes the elements: while the view lives, the
    /// buffer itself is borrowed, so the two cannot be bound to one dispatch by mistake.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when the buffer's size in bytes is not a whole number of
    /// `U`s.
    pub fn view_as_mut<U: Pod>(&mut self) -> Result<BufferViewMut<'_, U>> {
        Ok(BufferViewMut {
            buffer: self.reinterpreted()?,
            borrowed: PhantomData,
        })
    }

    /// A second handle on this buffer's memory, as elements of `U`.
    fn reinterpreted<U: Pod>(&self) -> Result<GpuBuffer<U>> {
        let (bytes, size) = (self.size_in_bytes(), size_of::<U>() as u64);
        if size == 0 || bytes % size != 0 {
            return Err(Error::InvalidArgument {
                operation: format!(
                    "viewing the buffer `{}` as elements of `{}`",
                    self.label,
                    std::any::type_name::<U>()
                ),
                problem: format!(
                    "its {bytes} bytes are not a whole number of {size}-byte elements"
                ),
            });
        }
        Ok(GpuBuffer {
            buffer: self.buffer.clone(),
            runtime: self.runtime,
            len: (bytes / size) as usize,
            label: self.label.clone(),
            element: PhantomData,
        })
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
        self.check_runtime(rt, "`GpuBuffer::write`")?;
        if data.len() != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len,
                given: data.len(),
            });
        }
        self.write_range(rt, 0, data)
    }

    /// Overwrites the elements from `start` on with `data`, in program order like
    /// [`GpuBuffer::write`].
    ///
    /// wgpu writes whole 4-byte words; for elements of 1 or 2 bytes, a range that starts or
    /// ends inside a word is written by reading the words at its ends back first (a wait for
    /// the GPU).
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] when `start + data.len()` is past the buffer's end.
    pub fn write_range(&mut self, rt: &Runtime, start: usize, data: &[T]) -> Result<()> {
        self.check_runtime(rt, "`GpuBuffer::write_range`")?;
        let range = self.checked_range(start..start.saturating_add(data.len()))?;
        if range.is_empty() {
            return Ok(());
        }
        let bytes = bytemuck::cast_slice::<T, u8>(data);
        let span = Words::of(range, size_of::<T>(), self.len);
        let words = if span.exact {
            let mut words = bytes.to_vec();
            words.resize(span.len as usize, 0);
            words
        } else {
            let mut words = self.read_words(rt, &span)?;
            words[span.skip..span.skip + bytes.len()].copy_from_slice(bytes);
            words
        };
        // The write must not overtake queued dispatches that read the buffer.
        rt.flush()?;
        rt.scoped(format!("writing the buffer `{}`", self.label), || {
            rt.raw_queue()
                .write_buffer(&self.buffer, span.start, &words)
        })
    }

    /// Sets every element to `value`, in program order.
    pub fn fill(&mut self, rt: &Runtime, value: T) -> Result<()> {
        self.check_runtime(rt, "`GpuBuffer::fill`")?;
        if bytemuck::bytes_of(&value).iter().all(|&b| b == 0) {
            return self.clear(rt);
        }
        self.write_range(rt, 0, &vec![value; self.len])
    }

    /// Sets every byte to zero on the GPU (nothing is uploaded), in program order.
    pub fn clear(&mut self, rt: &Runtime) -> Result<()> {
        self.check_runtime(rt, "`GpuBuffer::clear`")?;
        self.encode(
            rt,
            format!("clearing the buffer `{}`", self.label),
            |encoder| encoder.clear_buffer(&self.buffer, 0, None),
        )
    }

    /// Copies `source`, which must have this buffer's length, into this buffer on the GPU, in
    /// program order: after every dispatch issued before it.
    pub fn copy_from(&mut self, rt: &Runtime, source: &GpuBuffer<T>) -> Result<()> {
        self.check_runtime(rt, "`GpuBuffer::copy_from` (destination)")?;
        source.check_runtime(rt, "`GpuBuffer::copy_from` (source)")?;
        if source.len != self.len {
            return Err(Error::LengthMismatch {
                expected: self.len,
                given: source.len,
            });
        }
        self.copy_range_from(rt, source, .., 0)
    }

    /// Copies the elements `range` of `source` into this buffer from element `start` on, on
    /// the GPU and in program order. For elements of 1 or 2 bytes, ranges that do not start
    /// and end on 4-byte words go through the host (a read, then a write).
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] when `range` is past the end of `source` or the copy would
    /// end past the end of this buffer.
    pub fn copy_range_from(
        &mut self,
        rt: &Runtime,
        source: &GpuBuffer<T>,
        range: impl RangeBounds<usize>,
        start: usize,
    ) -> Result<()> {
        self.check_runtime(rt, "`GpuBuffer::copy_range_from` (destination)")?;
        source.check_runtime(rt, "`GpuBuffer::copy_range_from` (source)")?;
        let from = source.checked_range(bounds(range, source.len))?;
        let to = self.checked_range(start..start.saturating_add(from.len()))?;
        if from.is_empty() {
            return Ok(());
        }
        let (from_words, to_words) = (
            Words::of(from.clone(), size_of::<T>(), source.len),
            Words::of(to, size_of::<T>(), self.len),
        );
        if !(from_words.exact && to_words.exact && from_words.len == to_words.len) {
            let values = source.read_range(rt, from)?;
            return self.write_range(rt, start, &values);
        }
        let operation = format!("copying `{}` into `{}`", source.label, self.label);
        self.encode(rt, operation, |encoder| {
            encoder.copy_buffer_to_buffer(
                &source.buffer,
                from_words.start,
                &self.buffer,
                to_words.start,
                from_words.len,
            )
        })
    }

    /// Copies the buffer back to the host, after every dispatch issued before (queued or
    /// recorded in a batch not yet submitted: those are submitted first). It waits for the GPU
    /// only until that copy is done, not for work issued later from other threads.
    ///
    /// This is [`GpuBuffer::read_async`], waited for on the calling thread.
    pub fn read(&self, rt: &Runtime) -> Result<Vec<T>> {
        pollster::block_on(self.read_with(rt, .., Progress::Block, "`GpuBuffer::read`"))
    }

    /// Copies the elements `range` back to the host, as [`GpuBuffer::read`] does.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] when `range` is past the buffer's end.
    pub fn read_range(&self, rt: &Runtime, range: impl RangeBounds<usize>) -> Result<Vec<T>> {
        let read = self.read_with(rt, range, Progress::Block, "`GpuBuffer::read_range`");
        pollster::block_on(read)
    }

    /// [`GpuBuffer::read`] without blocking the thread that polls the future.
    ///
    /// The copy is issued when `read_async` is called, in program order: it sees every
    /// dispatch and write issued before the call, whenever the future is polled. The future
    /// then waits for that copy only. On native backends it polls the device when it is
    /// polled (`PollType::Poll`, which does not wait), and while the GPU works a short-lived
    /// thread of its own waits for the copy and wakes the task; in a browser, the browser
    /// wakes it. Any executor can poll it, and it is `Send`.
    ///
    /// ```no_run
    /// # async fn run(rt: &kernel_runtime::Runtime) -> Result<(), kernel_runtime::Error> {
    /// let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
    /// assert_eq!(x.read_async(rt).await?, vec![1.0, 2.0, 3.0]);
    /// assert_eq!(x.read_range_async(rt, 1..).await?, vec![2.0, 3.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What [`GpuBuffer::read`] returns, from the future; an error found before the copy is
    /// issued (such as [`Error::ForeignBuffer`]) issues nothing.
    pub fn read_async<'a>(&'a self, rt: &'a Runtime) -> impl Future<Output = Result<Vec<T>>> + 'a {
        self.read_with(rt, .., Progress::Async, "`GpuBuffer::read_async`")
    }

    /// [`GpuBuffer::read_range`] without blocking, as [`GpuBuffer::read_async`] reads.
    ///
    /// # Errors
    ///
    /// [`Error::RangeOutOfBounds`] when `range` is past the buffer's end, and what
    /// [`GpuBuffer::read_async`] returns.
    pub fn read_range_async<'a>(
        &'a self,
        rt: &'a Runtime,
        range: impl RangeBounds<usize>,
    ) -> impl Future<Output = Result<Vec<T>>> + 'a {
        self.read_with(rt, range, Progress::Async, "`GpuBuffer::read_range_async`")
    }

    /// Every read: checks and issues the copy of `range` now; the future waits for it as
    /// `progress` says.
    fn read_with<'a>(
        &'a self,
        rt: &'a Runtime,
        range: impl RangeBounds<usize>,
        progress: Progress,
        operation: &str,
    ) -> impl Future<Output = Result<Vec<T>>> + 'a {
        let checked = self
            .check_runtime(rt, operation)
            .and_then(|()| self.checked_range(bounds(range, self.len)));
        let started = checked.map(|range| {
            let span = Words::of(range.clone(), size_of::<T>(), self.len);
            let words = self.read_words_with(rt, &span, progress);
            (range, span, words)
        });
        async move {
            let (range, span, words) = started?;
            let words = words.await?;
            let bytes = range.len() * size_of::<T>();
            Ok(bytemuck::pod_collect_to_vec(
                &words[span.skip..span.skip + bytes],
            ))
        }
    }

    /// `range` if it lies within the buffer.
    fn checked_range(&self, range: Range<usize>) -> Result<Range<usize>> {
        if range.start > range.end || range.end > self.len {
            return Err(Error::RangeOutOfBounds {
                buffer: self.label.clone(),
                start: range.start,
                end: range.end,
                len: self.len,
            });
        }
        Ok(range)
    }

    /// The bytes of the words `span` covers, read back from the GPU, blocking.
    fn read_words(&self, rt: &Runtime, span: &Words) -> Result<Vec<u8>> {
        pollster::block_on(self.read_words_with(rt, span, Progress::Block))
    }

    /// The bytes of the words `span` covers: the copy into a mappable buffer, after
    /// everything queued, is submitted now and mapped when done; the future waits for it as
    /// `progress` says.
    fn read_words_with<'a>(
        &'a self,
        rt: &'a Runtime,
        span: &Words,
        progress: Progress,
    ) -> impl Future<Output = Result<Vec<u8>>> + 'a {
        let flushed = rt.flush_async();
        let operation = format!("reading the buffer `{}` back", self.label);
        let started = rt.push_scopes().map(|scopes| {
            // A mapping is never empty.
            let size = span.len.max(wgpu::COPY_BUFFER_ALIGNMENT);
            let staging = rt.device().create_buffer(&wgpu::BufferDescriptor {
                label: Some("tessera read-back"),
                size,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            if span.len > 0 {
                encoder.copy_buffer_to_buffer(&self.buffer, span.start, &staging, 0, span.len);
            }
            let submission = rt.raw_queue().submit([encoder.finish()]);
            let errors = rt.pop_scopes(scopes, operation.clone());
            // Outside the scopes: on a lost device, the mapping fails, and the loss is what
            // the future reports.
            let signal = Signal::new();
            staging.map_async(wgpu::MapMode::Read, .., signal.setter());
            let mapping = Completion::new(rt, signal, Some(submission), progress, operation);
            (staging, errors, mapping)
        });
        async move {
            flushed.await?;
            let (staging, errors, mapping) = started?;
            errors.await?;
            if let Err(error) = mapping.await? {
                // On a lost device the mapping fails at once: the loss (reported once the
                // device has been polled) is what to report.
                let _ = rt.device().poll(wgpu::PollType::Poll);
                rt.check_device()?;
                return Err(error.into());
            }
            mapped(&staging)
        }
    }

    /// Records one command with `record` and submits it after everything queued.
    fn encode(
        &self,
        rt: &Runtime,
        operation: String,
        record: impl FnOnce(&mut wgpu::CommandEncoder),
    ) -> Result<()> {
        rt.flush()?;
        rt.scoped(operation, || {
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            record(&mut encoder);
            rt.raw_queue().submit([encoder.finish()]);
        })
    }
}

/// The 4-byte words that hold a range of elements: wgpu copies, writes and clears whole words.
struct Words {
    /// The first word's byte offset.
    start: u64,
    /// Bytes, a whole number of words.
    len: u64,
    /// Bytes from `start` to the range's first byte.
    skip: usize,
    /// Whether the range fills its words (but for the padding after a buffer's last element).
    exact: bool,
}

impl Words {
    /// The words of the elements `range` of a buffer of `len` elements of `element` bytes.
    fn of(range: Range<usize>, element: usize, len: usize) -> Words {
        let (first, last) = ((range.start * element) as u64, (range.end * element) as u64);
        let start = first - first % wgpu::COPY_BUFFER_ALIGNMENT;
        let end = last.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        Words {
            start,
            len: end - start,
            skip: (first - start) as usize,
            // Past the last element, the last word holds only padding, which nothing reads.
            exact: start == first && (end == last || range.end == len),
        }
    }
}

/// `range` as a `Range` within `0..len` (an unbounded end is `len`).
fn bounds(range: impl RangeBounds<usize>, len: usize) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    start..end
}

/// The bytes of a mapped staging buffer, which is unmapped after.
fn mapped(staging: &wgpu::Buffer) -> Result<Vec<u8>> {
    let bytes = staging.get_mapped_range(..)?.to_vec();
    staging.unmap();
    Ok(bytes)
}

/// A [`GpuBuffer`]'s memory seen as elements of `U`, borrowed from it by
/// [`GpuBuffer::view_as`]: dereferences to a `GpuBuffer<U>`, to bind where a kernel reads `U`s.
pub struct BufferView<'a, U: Pod> {
    buffer: GpuBuffer<U>,
    borrowed: PhantomData<&'a ()>,
}

impl<U: Pod> std::ops::Deref for BufferView<'_, U> {
    type Target = GpuBuffer<U>;

    fn deref(&self) -> &GpuBuffer<U> {
        &self.buffer
    }
}

impl<U: Pod> std::fmt::Debug for BufferView<'_, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BufferView").field(&self.buffer).finish()
    }
}

/// A [`GpuBuffer`]'s memory seen as elements of `U`, borrowed mutably from it by
/// [`GpuBuffer::view_as_mut`]: dereferences to a `GpuBuffer<U>`, to bind where a kernel
/// writes `U`s.
pub struct BufferViewMut<'a, U: Pod> {
    buffer: GpuBuffer<U>,
    borrowed: PhantomData<&'a mut ()>,
}

impl<U: Pod> std::ops::Deref for BufferViewMut<'_, U> {
    type Target = GpuBuffer<U>;

    fn deref(&self) -> &GpuBuffer<U> {
        &self.buffer
    }
}

impl<U: Pod> std::ops::DerefMut for BufferViewMut<'_, U> {
    fn deref_mut(&mut self) -> &mut GpuBuffer<U> {
        &mut self.buffer
    }
}

impl<U: Pod> std::fmt::Debug for BufferViewMut<'_, U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BufferViewMut").field(&self.buffer).finish()
    }
}

impl<T: Pod> std::fmt::Debug for GpuBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("label", &self.label)
            .field("element", &std::any::type_name::<T>())
            .field("len", &self.len)
            .finish()
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

    /// Uploads `data` into a new [`GpuBuffer`] named `label` in GPU debuggers and in this
    /// crate's error messages.
    pub fn upload_labeled<T: Pod>(&self, label: &str, data: &[T]) -> Result<GpuBuffer<T>> {
        GpuBuffer::labeled_from_slice(self, label, data)
    }

    /// A new [`GpuBuffer`] of `len` zeroed elements named `label`.
    pub fn zeros_labeled<T: Pod>(&self, label: &str, len: usize) -> Result<GpuBuffer<T>> {
        GpuBuffer::labeled_zeroed(self, label, len)
    }
}
