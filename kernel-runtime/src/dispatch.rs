//! Binding buffers to a pipeline and dispatching it: [`Arg`] for one binding, [`Batch`] for
//! several dispatches recorded into one command buffer and submitted once, and
//! [`Runtime::dispatch`] for one dispatch queued on the runtime.
//!
//! Dispatches queued one at a time ([`Runtime::dispatch`], [`Batch::enqueue`], and every
//! generated `launch`) wait in the runtime's queue and are submitted together, at the next
//! operation that must see their results or be ordered after them (see [`Runtime::flush`]).
//! A submission costs tens of microseconds of host time; a queued dispatch, about one.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::buffer::GpuBuffer;
use crate::error::{Error, Result};
use crate::pipeline::{BindingKind, Pipeline};
use crate::runtime::{Runtime, RuntimeId};
use crate::timing::{self, Timing};

mod sanitized;
mod timed;
use crate::wait::Progress;
use sanitized::Reports;

/// One argument of a dispatch, bound at the binding with its position.
///
/// Read-only storage borrows its buffer shared and read-write storage borrows it exclusively,
/// so the same buffer cannot be passed as both in one argument list.
///
/// A storage argument remembers the [`Runtime`] that made its buffer: a dispatch on another
/// runtime returns [`Error::ForeignBuffer`], naming the binding, the kernel and the buffer's
/// label, and records nothing. [`Arg::read_raw`] and [`Arg::read_write_raw`] bind a wgpu
/// buffer the runtime did not make, without that check.
#[derive(Debug)]
pub struct Arg<'a> {
    binding: Binding<'a>,
}

/// What an [`Arg`] binds.
#[derive(Debug)]
enum Binding<'a> {
    /// A storage buffer; `owner` is `None` for a raw wgpu buffer, which is not checked.
    Storage {
        buffer: &'a wgpu::Buffer,
        writable: bool,
        owner: Option<Owner<'a>>,
    },
    /// The bytes of a uniform parameter struct (padded to 16 bytes by the runtime).
    Uniform(&'a [u8]),
}

/// The runtime that made a storage argument's buffer, and the buffer's label for errors.
#[derive(Debug)]
struct Owner<'a> {
    runtime: RuntimeId,
    label: &'a str,
}

impl<'a> Arg<'a> {
    /// A read-only storage binding.
    pub fn read<T: Pod>(buffer: &'a GpuBuffer<T>) -> Self {
        Arg::storage(buffer, false)
    }

    /// A read-write storage binding.
    pub fn read_write<T: Pod>(buffer: &'a mut GpuBuffer<T>) -> Self {
        Arg::storage(buffer, true)
    }

    /// A uniform binding holding `value`.
    pub fn uniform<P: Pod>(value: &'a P) -> Self {
        Arg {
            binding: Binding::Uniform(bytemuck::bytes_of(value)),
        }
    }

    /// A read-only storage binding of a wgpu buffer the runtime did not make, for
    /// interoperation: a buffer of the device handed to
    /// [`Runtime::from_wgpu`](crate::Runtime::from_wgpu), for instance.
    ///
    /// Unlike [`Arg::read`], nothing checks where the buffer comes from: it must have been
    /// created on the dispatching runtime's device ([`Runtime::device`]), with
    /// `BufferUsages::STORAGE`. wgpu rejects a buffer without that usage when the dispatch is
    /// submitted, but a buffer of another device can make wgpu panic, or bind a buffer of
    /// this device in its place. Prefer [`Arg::read`] with a [`GpuBuffer`].
    pub fn read_raw(buffer: &'a wgpu::Buffer) -> Self {
        Arg {
            binding: Binding::Storage {
                buffer,
                writable: false,
                owner: None,
            },
        }
    }

    /// A read-write storage binding of a wgpu buffer the runtime did not make, unchecked as
    /// [`Arg::read_raw`] is. The buffer is borrowed shared: unlike with [`Arg::read_write`],
    /// nothing stops it from being bound a second time in the same argument list.
    pub fn read_write_raw(buffer: &'a wgpu::Buffer) -> Self {
        Arg {
            binding: Binding::Storage {
                buffer,
                writable: true,
                owner: None,
            },
        }
    }

    fn storage<T: Pod>(buffer: &'a GpuBuffer<T>, writable: bool) -> Self {
        let owner = Owner {
            runtime: buffer.runtime(),
            label: buffer.label(),
        };
        Arg {
            binding: Binding::Storage {
                buffer: buffer.raw(),
                writable,
                owner: Some(owner),
            },
        }
    }

    fn kind(&self) -> BindingKind {
        match self.binding {
            Binding::Storage {
                writable: false, ..
            } => BindingKind::ReadOnlyStorage,
            Binding::Storage { writable: true, .. } => BindingKind::ReadWriteStorage,
            Binding::Uniform(_) => BindingKind::Uniform,
        }
    }

    /// The label of the argument's buffer when another runtime than `runtime` made it.
    fn foreign_to(&self, runtime: RuntimeId) -> Option<&'a str> {
        let Binding::Storage {
            owner: Some(owner), ..
        } = &self.binding
        else {
            return None;
        };
        (owner.runtime != runtime).then_some(owner.label)
    }
}

/// What one binding of a recorded dispatch is bound to.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Bound {
    /// The caller's storage buffer, whole.
    Storage(wgpu::Buffer),
    /// `size` bytes of the batch's uniform buffer, at a dynamic offset given per dispatch.
    Uniform { size: u64 },
}

/// A dispatch recorded in a [`Batch`].
struct Recorded {
    pipeline: Pipeline,
    bound: Vec<Bound>,
    /// Where each uniform binding's bytes start in the batch's uniform buffer, in binding order.
    offsets: Vec<u32>,
    grid: [u32; 3],
    /// The batch that recorded it, for [`Batch::submit_timed`].
    batch: u64,
}

/// Dispatches recorded together and started on the GPU together.
///
/// Recording a dispatch issues it: like every operation of tessera, it takes effect in the
/// order the program issues it. It sees the writes of every dispatch and every
/// [`GpuBuffer::write`](crate::GpuBuffer::write) issued before it, and a write or read of a
/// buffer issued after it sees its result, whether the batch has been submitted by then or
/// not: an operation that must come after recorded dispatches submits them first. So
///
/// ```no_run
/// # use kernel_runtime::{Arg, Runtime, Pipeline, GpuBuffer};
/// # fn run(rt: &Runtime, double: &Pipeline, x: &mut GpuBuffer<f32>, y: &mut GpuBuffer<f32>) -> Result<(), kernel_runtime::Error> {
/// x.write(rt, &[1.0])?;
/// let mut batch = rt.batch();
/// batch.dispatch(double, &[Arg::read(x), Arg::read_write(y)], [1, 1, 1])?; // y = 2 * x
/// x.write(rt, &[5.0])?; // submits the dispatch first: y is 2, not 10
/// batch.submit()?;
/// # Ok(()) }
/// ```
///
/// What a batch adds is the cost: recording only checks the arguments and copies the uniform
/// bytes, and the GPU objects are made when the dispatches are submitted, once for all of
/// them: one compute pass holds every dispatch, the uniform parameters of all dispatches
/// share one buffer (each at its own dynamic offset), and dispatches that bind the same
/// buffers to the same layout share one bind group. [`Batch::submit`] starts them now;
/// otherwise they start with the next operation that needs them (see [`Runtime::flush`]).
/// Dropping a batch does not take back what it recorded. While a batch is open and has
/// dispatches waiting, the runtime does not submit its queue on its own for being full (see
/// [`Runtime::flush`]) until 4096 dispatches wait, so that [`Batch::submit_timed`] times the
/// whole batch.
///
/// A batch forgotten with [`std::mem::forget`] (or leaked any other way) holds nothing up: what
/// it recorded is submitted by the next operation that needs it, as if it had been dropped.
/// Until then, the runtime's automatic submission waits for 4096 queued dispatches instead of
/// 256; after, the forgotten batch changes nothing. The runtime keeps its number (8 bytes)
/// for as long as the runtime lives.
///
/// ```no_run
/// # use kernel_runtime::{Arg, Runtime, Pipeline, GpuBuffer};
/// # fn run(rt: &Runtime, double: &Pipeline, y: &mut GpuBuffer<f32>) -> Result<(), kernel_runtime::Error> {
/// let mut batch = rt.batch();
/// batch.dispatch(double, &[Arg::read_write(y)], [1, 1, 1])?;
/// std::mem::forget(batch);
/// rt.dispatch(double, &[Arg::read_write(y)], [1, 1, 1])?;
/// let y = y.read(rt)?; // both dispatches ran: y was doubled twice
/// # Ok(()) }
/// ```
///
/// A batch belongs to the runtime that started it ([`Runtime::batch`], [`Batch::runtime`]):
/// it records pipelines that runtime built and buffers it made, and refuses others
/// ([`Error::ForeignPipeline`], [`Error::ForeignBuffer`]) before recording anything.
///
/// ```no_run
/// # use kernel_runtime::{Arg, Runtime, Pipeline};
/// # fn run(rt: &Runtime, scale: &Pipeline, shift: &Pipeline, x: &mut kernel_runtime::GpuBuffer<f32>) -> Result<(), kernel_runtime::Error> {
/// let mut batch = rt.batch();
/// batch.dispatch(scale, &[Arg::read_write(x)], [4, 1, 1])?;
/// batch.dispatch(shift, &[Arg::read_write(x)], [4, 1, 1])?;
/// let timing = batch.submit_timed()?;
/// println!("{timing}");
/// # Ok(()) }
/// ```
pub struct Batch<'rt> {
    rt: &'rt Runtime,
    /// Marks this batch's dispatches in the runtime's queue.
    id: u64,
    /// The dispatches recorded so far.
    len: usize,
}

impl<'rt> Batch<'rt> {
    /// Records a dispatch of `pipeline` over `grid` workgroups with `args` bound in order.
    ///
    /// # Errors
    ///
    /// [`Error::ForeignPipeline`] when another runtime than the batch's built `pipeline`,
    /// [`Error::Bindings`] when the arguments do not match the pipeline's bindings,
    /// [`Error::ForeignBuffer`] when another runtime made one of their buffers, and
    /// [`Error::GridTooLarge`] when a grid dimension exceeds the device's limit; nothing is
    /// recorded then. What only wgpu can check is checked when the dispatch is submitted.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        grid: [u32; 3],
    ) -> Result<()> {
        check(self.rt, pipeline, args, grid)?;
        let limits = &self.rt.info().limits;
        self.rt
            .queued
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(limits, self.id, pipeline, args, grid)?;
        self.len += 1;
        Ok(())
    }

    /// The runtime the batch records for.
    pub fn runtime(&self) -> &'rt Runtime {
        self.rt
    }

    /// The number of dispatches recorded so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Submits every dispatch issued on the runtime so far, this batch's last, as one command
    /// buffer. Returns without waiting for them.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`] (or another wgpu error) when wgpu rejects a binding or a dispatch;
    /// its message names the kernels. Nothing of the submission runs then.
    pub fn submit(self) -> Result<()> {
        pollster::block_on(self.submit_async())
    }

    /// [`Batch::submit`] without blocking: the dispatches are submitted when `submit_async`
    /// is called, and the future says whether wgpu accepted them (at once on native
    /// backends; in a browser when the browser answers). It does not wait for the GPU to run
    /// them: [`Runtime::wait_async`] or [`GpuBuffer::read_async`](crate::GpuBuffer::read_async)
    /// do.
    ///
    /// ```no_run
    /// # use kernel_runtime::{Arg, Runtime, Pipeline, GpuBuffer};
    /// # async fn run(rt: &Runtime, double: &Pipeline, y: &mut GpuBuffer<f32>) -> Result<(), kernel_runtime::Error> {
    /// let mut batch = rt.batch();
    /// batch.dispatch(double, &[Arg::read_write(y)], [1, 1, 1])?;
    /// batch.submit_async().await?;
    /// let doubled = y.read_async(rt).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What [`Batch::submit`] returns.
    pub fn submit_async(self) -> impl Future<Output = Result<()>> + 'rt {
        let rt = self.rt;
        drop(self);
        rt.flush_async()
    }

    /// Closes the batch without submitting it: its dispatches are submitted with the ones
    /// issued after them, at the next operation that needs them (see [`Runtime::flush`]).
    /// Generated `launch` methods do this.
    ///
    /// # Errors
    ///
    /// Only when the runtime's queue is full and no batch is open any more, so that it is
    /// submitted: what [`Batch::submit`] returns.
    pub fn enqueue(self) -> Result<()> {
        let rt = self.rt;
        drop(self);
        rt.flush_if_full()
    }

    /// Submits the batch, waits for it and says how long it took on the GPU.
    ///
    /// Dispatches issued before the batch's first are submitted and waited for first, untimed.
    /// With timestamp queries (see
    /// [`RuntimeInfo::has_timestamps`](crate::RuntimeInfo::has_timestamps)) the batch runs
    /// as [`Batch::submit`] runs it, in one compute pass, timed on the GPU from the pass's
    /// beginning to its end; otherwise by the wall clock from submission to completion, and
    /// [`Timing::source`] says so. [`Batch::submit_profiled`] times each dispatch. A dispatch
    /// already submitted by an operation that had to come after it (a read or write of a
    /// buffer, [`Runtime::flush`]) is not in the timing.
    pub fn submit_timed(self) -> Result<Timing> {
        pollster::block_on(self.timed_with(false, Progress::Block))
    }

    /// [`Batch::submit_timed`], timing each dispatch on the GPU ([`Timing::dispatches`])
    /// where the device has timestamp queries. Each dispatch then runs in a compute pass of
    /// its own, which costs the GPU several microseconds a dispatch (about 10 on an H100
    /// through Vulkan), so the total exceeds what the batch takes unprofiled.
    pub fn submit_profiled(self) -> Result<Timing> {
        pollster::block_on(self.timed_with(true, Progress::Block))
    }

    /// [`Batch::submit_timed`] without blocking the thread that polls the future, as
    /// [`Runtime::wait_async`] waits: the work issued before the batch is submitted when
    /// `submit_timed_async` is called, the batch once that work has finished (as the future
    /// is polled; an operation that needs the batch's results before then submits it
    /// untimed), and the future finishes when the batch's timestamps are read back.
    ///
    /// ```no_run
    /// # async fn run(rt: &kernel_runtime::Runtime) -> Result<(), kernel_runtime::Error> {
    /// let batch = rt.batch(); // ... dispatches recorded into it
    /// let timing = batch.submit_timed_async().await?;
    /// println!("{:?} on the GPU", timing.total);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What [`Batch::submit_timed`] returns.
    pub fn submit_timed_async(self) -> impl Future<Output = Result<Timing>> + 'rt {
        self.timed_with(false, Progress::Async)
    }

    /// [`Batch::submit_profiled`] without blocking, as [`Batch::submit_timed_async`].
    ///
    /// # Errors
    ///
    /// What [`Batch::submit_timed`] returns.
    pub fn submit_profiled_async(self) -> impl Future<Output = Result<Timing>> + 'rt {
        self.timed_with(true, Progress::Async)
    }

    /// Closes the batch and times it, each dispatch where `each`, waiting as `progress` says.
    fn timed_with(
        self,
        each: bool,
        progress: Progress,
    ) -> impl Future<Output = Result<Timing>> + 'rt {
        let (rt, id) = (self.rt, self.id);
        drop(self);
        rt.submit_timed_with(id, each, progress)
    }
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        self.rt
            .open_batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// Dispatches issued but not yet submitted, in program order, and the uniform bytes they
/// bind: the runtime's queue.
#[derive(Default)]
pub(crate) struct Recording {
    recorded: Vec<Recorded>,
    /// The batches with dispatches among `recorded` (kept for the runtime's queue; the parts
    /// [`Recording::split_at_batch`] makes are submitted, and do not need it).
    batches: HashSet<u64>,
    /// The uniform bytes of every dispatch, each block at a multiple of the device's
    /// uniform-offset alignment.
    uniforms: Vec<u8>,
}

/// Checks a dispatch on `rt` before it is recorded: that `rt` built the pipeline, its
/// arguments against the pipeline's bindings, that `rt` made their buffers, and its grid
/// against the device's limit.
fn check(rt: &Runtime, pipeline: &Pipeline, args: &[Arg<'_>], grid: [u32; 3]) -> Result<()> {
    if pipeline.runtime() != rt.id() {
        return Err(Error::ForeignPipeline {
            kernel: pipeline.label().to_owned(),
        });
    }
    check_args(pipeline, args)?;
    check_owners(rt.id(), pipeline, args)?;
    for (index, arg) in args.iter().enumerate() {
        if let Binding::Storage { buffer, .. } = arg.binding {
            let binding = format!("binding {index}");
            check_binding_size(pipeline.label(), &binding, buffer.size(), &rt.info().limits)?;
        }
    }
    let limit = rt.info().limits.max_compute_workgroups_per_dimension;
    if grid.iter().any(|&n| n > limit) {
        return Err(Error::GridTooLarge {
            kernel: pipeline.label().to_owned(),
            grid,
            limit,
        });
    }
    Ok(())
}

impl Recording {
    /// Records a dispatch of `batch` that [`check`] accepted.
    fn push(
        &mut self,
        limits: &wgpu::Limits,
        batch: u64,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        grid: [u32; 3],
    ) -> Result<()> {
        let alignment = uniform_alignment(limits);
        let mut uniforms = std::mem::take(&mut self.uniforms);
        let before = uniforms.len();
        let mut offsets = Vec::new();
        let bound = args
            .iter()
            .map(|arg| match &arg.binding {
                Binding::Storage { buffer, .. } => Ok(Bound::Storage((*buffer).clone())),
                Binding::Uniform(bytes) => {
                    let size = uniform_size(bytes);
                    // The same bytes as the previous dispatch's uniform at this position are
                    // bound where that one is, so that repeated dispatches keep one bind group
                    // and offsets (and `encode` sets them once).
                    let previous = self
                        .recorded
                        .last()
                        .and_then(|r| r.offsets.get(offsets.len()));
                    if let Some(&offset) = previous {
                        let block = uniforms.get(offset as usize..offset as usize + size as usize);
                        let same = block.is_some_and(|block| {
                            let (head, tail) = block.split_at(bytes.len());
                            head == *bytes && tail.iter().all(|&b| b == 0)
                        });
                        if same {
                            offsets.push(offset);
                            return Ok(Bound::Uniform { size });
                        }
                    }
                    let start = uniforms.len().next_multiple_of(alignment);
                    let offset = uniform_offset(start, pipeline)?;
                    uniforms.resize(start, 0);
                    uniforms.extend_from_slice(bytes);
                    uniforms.resize(start + size as usize, 0);
                    offsets.push(offset);
                    Ok(Bound::Uniform { size })
                }
            })
            .collect::<Result<Vec<_>>>();
        let bound = match bound {
            Ok(bound) => bound,
            Err(error) => {
                // Nothing of a refused dispatch stays.
                uniforms.truncate(before);
                self.uniforms = uniforms;
                return Err(error);
            }
        };
        self.uniforms = uniforms;
        self.batches.insert(batch);
        self.recorded.push(Recorded {
            pipeline: pipeline.clone(),
            bound,
            offsets,
            grid,
            batch,
        });
        Ok(())
    }

    /// Splits off the dispatches from the first of `batch` on (none when it has none here);
    /// both parts keep the uniform bytes.
    fn split_at_batch(&mut self, batch: u64) -> Recording {
        let first = self
            .recorded
            .iter()
            .position(|r| r.batch == batch)
            .unwrap_or(self.recorded.len());
        Recording {
            recorded: self.recorded.split_off(first),
            uniforms: self.uniforms.clone(),
            batches: HashSet::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.recorded.len()
    }

    /// Whether one of the batches `open` recorded a dispatch waiting here.
    fn holds_any_of(&self, open: &HashSet<u64>) -> bool {
        if open.len() <= self.batches.len() {
            open.iter().any(|batch| self.batches.contains(batch))
        } else {
            self.batches.iter().any(|batch| open.contains(batch))
        }
    }

    /// Each dispatch's label, and whether `batch` recorded it.
    fn labels(&self, batch: u64) -> Vec<(String, bool)> {
        self.recorded
            .iter()
            .map(|r| (r.pipeline.label().to_owned(), r.batch == batch))
            .collect()
    }

    /// Submits the dispatches as one command buffer, in one error scope.
    pub(crate) fn submit(self, rt: &Runtime) -> Result<()> {
        pollster::block_on(self.submit_async(rt))
    }

    /// Submits the dispatches as one command buffer, in one error scope, now; the future
    /// reports the scope's errors.
    ///
    /// Where dispatches were built with the sanitizer's checks, the future also waits for the
    /// GPU and returns [`Error::Hazard`] for the first dispatch that met one.
    fn submit_async(self, rt: &Runtime) -> impl Future<Output = Result<()>> + '_ {
        let checked = self.recorded.iter().any(|r| r.pipeline.checked().is_some());
        let sanitizer = checked
            .then(|| {
                let sizes = Reports::sizes(rt, &self.recorded)?;
                let layout = rt.bind_group_layout(&[BindingKind::ReadWriteStorage])?;
                Ok::<_, Error>((sizes, layout))
            })
            .transpose();
        let submitted = (!self.recorded.is_empty()).then(|| {
            let sanitizer = sanitizer?;
            rt.push_scopes().map(|scopes| {
                let bind_groups = self.bind_groups(rt);
                let reports = sanitizer
                    .map(|(sizes, layout)| Reports::new(rt, &self.recorded, &sizes, &layout));
                let mut encoder = rt.device().create_command_encoder(&Default::default());
                if let Some(reports) = &reports {
                    reports.clear(&mut encoder);
                }
                let sanitizer = reports.as_ref().map_or(&[][..], Reports::bind_groups);
                encode(&mut encoder, &self.recorded, &bind_groups, sanitizer, None);
                if let Some(reports) = &reports {
                    reports.copy_out(&mut encoder);
                }
                let submission = rt.raw_queue().submit([encoder.finish()]);
                let errors = rt.pop_scopes(scopes, self.describe());
                (errors, reports.map(|r| r.read(rt, submission)))
            })
        });
        async move {
            let Some(submitted) = submitted else {
                return Ok(());
            };
            let (errors, reports) = submitted?;
            errors.await?;
            match reports {
                Some(reports) => reports.await,
                None => Ok(()),
            }
        }
    }

    /// What submitting the dispatches does, for error messages: the kernels it dispatches.
    fn describe(&self) -> String {
        let mut kernels: Vec<&str> = Vec::new();
        for recorded in &self.recorded {
            let label = recorded.pipeline.label();
            if !kernels.contains(&label) {
                kernels.push(label);
            }
        }
        let shown: Vec<String> = kernels.iter().take(4).map(|k| format!("`{k}`")).collect();
        let more = match kernels.len().saturating_sub(4) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!(
            "submitting {} dispatches of {}{more}",
            self.recorded.len(),
            shown.join(", ")
        )
    }

    /// One bind group per distinct (layout, buffers) among the recorded dispatches, in the
    /// order of the dispatches: `result[i]` is the bind group of dispatch `i`. Must run inside
    /// an error scope.
    fn bind_groups(&self, rt: &Runtime) -> Vec<wgpu::BindGroup> {
        let device = rt.device();
        // Every uniform binding put at least 16 bytes here, so the buffer is never empty when
        // a binding refers to it.
        let uniforms = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("tessera uniforms"),
            contents: if self.uniforms.is_empty() {
                &[0; 16]
            } else {
                &self.uniforms
            },
            usage: wgpu::BufferUsages::UNIFORM,
        });
        // wgpu's handles hash by identity, which their interior mutability never changes.
        #[allow(clippy::mutable_key_type)]
        let mut made: HashMap<(&wgpu::BindGroupLayout, &[Bound]), wgpu::BindGroup> = HashMap::new();
        let mut groups = Vec::with_capacity(self.recorded.len());
        for dispatch in &self.recorded {
            let layout = dispatch.pipeline.bind_group_layout();
            let group = made.entry((layout, &dispatch.bound)).or_insert_with(|| {
                let entries: Vec<wgpu::BindGroupEntry<'_>> = (0u32..)
                    .zip(&dispatch.bound)
                    .map(|(binding, bound)| wgpu::BindGroupEntry {
                        binding,
                        resource: match bound {
                            Bound::Storage(buffer) => buffer.as_entire_binding(),
                            Bound::Uniform { size } => {
                                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                                    buffer: &uniforms,
                                    offset: 0,
                                    size: wgpu::BufferSize::new(*size),
                                })
                            }
                        },
                    })
                    .collect();
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(dispatch.pipeline.label()),
                    layout,
                    entries: &entries,
                })
            });
            groups.push(group.clone());
        }
        groups
    }
}

/// Records the dispatches: all in one compute pass, or, when timed, in the passes of `timed`'s
/// plan (one for the timed batch's, or one each when profiled), which write its timestamps.
///
/// `sanitizer` holds the bind group of each dispatch built with the sanitizer's checks (group
/// 1), and is empty when none was.
fn encode(
    encoder: &mut wgpu::CommandEncoder,
    recorded: &[Recorded],
    bind_groups: &[wgpu::BindGroup],
    sanitizer: &[Option<wgpu::BindGroup>],
    timed: Option<(&timing::Plan, &timing::Queries)>,
) {
    let Some((plan, queries)) = timed else {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("tessera batch"),
            timestamp_writes: None,
        });
        record_pass(&mut pass, recorded, bind_groups, sanitizer);
        return;
    };
    for planned in plan.passes() {
        let range = planned.dispatches.clone();
        // A pass of one dispatch (as profiling makes them) is named after its kernel.
        let label = match &recorded[range.clone()] {
            [only] => only.pipeline.label(),
            _ => "tessera batch",
        };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: plan.pass_writes(planned, queries),
        });
        let checks = sanitizer.get(range.clone()).unwrap_or_default();
        record_pass(
            &mut pass,
            &recorded[range.clone()],
            &bind_groups[range],
            checks,
        );
    }
}

/// Records `recorded` into `pass`, each with its bind group. The pass keeps its pipeline and
/// bind group from one dispatch to the next: each is set only when it changes.
fn record_pass(
    pass: &mut wgpu::ComputePass<'_>,
    recorded: &[Recorded],
    bind_groups: &[wgpu::BindGroup],
    sanitizer: &[Option<wgpu::BindGroup>],
) {
    let mut previous: Option<(&Recorded, &wgpu::BindGroup)> = None;
    for (index, (dispatch, group)) in recorded.iter().zip(bind_groups).enumerate() {
        if let Some(Some(checks)) = sanitizer.get(index) {
            pass.set_bind_group(1, checks, &[]);
        }
        let (same_pipeline, same_group) = previous.map_or((false, false), |(p, g)| {
            (
                p.pipeline.raw() == dispatch.pipeline.raw(),
                g == group && p.offsets == dispatch.offsets,
            )
        });
        if !same_pipeline {
            pass.set_pipeline(dispatch.pipeline.raw());
        }
        if !same_pipeline || !same_group {
            pass.set_bind_group(0, group, &dispatch.offsets);
        }
        let [x, y, z] = dispatch.grid;
        pass.dispatch_workgroups(x, y, z);
        previous = Some((dispatch, group));
    }
}

/// The bytes a uniform binding of `bytes` occupies: WGSL sizes uniform structs in multiples of
/// 16, and a binding is never empty.
fn uniform_size(bytes: &[u8]) -> u64 {
    bytes.len().max(1).next_multiple_of(16) as u64
}

fn check_args(pipeline: &Pipeline, args: &[Arg<'_>]) -> Result<()> {
    let expected = pipeline.bindings();
    let problem = if args.len() != expected.len() {
        format!(
            "the pipeline has {} bindings, but {} arguments were given",
            expected.len(),
            args.len()
        )
    } else if let Some((index, (arg, kind))) = args
        .iter()
        .zip(expected)
        .enumerate()
        .find(|(_, (arg, kind))| arg.kind() != **kind)
    {
        format!(
            "binding {index} is {kind:?}, but a {:?} argument was given",
            arg.kind()
        )
    } else {
        return Ok(());
    };
    Err(Error::Bindings {
        kernel: pipeline.label().to_owned(),
        problem,
    })
}

/// Returns [`Error::ForeignBuffer`] for the first argument whose buffer was made by another
/// runtime than `runtime`, naming its binding.
fn check_owners(runtime: RuntimeId, pipeline: &Pipeline, args: &[Arg<'_>]) -> Result<()> {
    let foreign = args
        .iter()
        .enumerate()
        .find_map(|(index, arg)| Some((index, arg.foreign_to(runtime)?)));
    match foreign {
        Some((index, label)) => Err(Error::ForeignBuffer {
            operation: format!("binding {index} of `{}`", pipeline.label()),
            buffer: label.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Returns [`Error::ForeignBuffer`], naming `kernel` and `binding`, unless `rt` made `buffer`.
///
/// Every dispatch checks the buffers it binds, naming a binding by its position (`binding
/// 1`); generated launchers check first, naming the kernel and the parameter as the Rust
/// source spells them.
///
/// ```no_run
/// # use kernel_runtime::{check_buffer_owner, Error, Runtime};
/// # fn main() -> kernel_runtime::Result<()> {
/// let (a, b) = (Runtime::new()?, Runtime::new()?);
/// let x = b.upload(&[1.0f32; 4])?;
/// let error = check_buffer_owner("saxpy", "x", &x, &a).unwrap_err();
/// assert!(error.to_string().starts_with("binding `x` of `saxpy`: the buffer"));
/// # Ok(())
/// # }
/// ```
pub fn check_buffer_owner<T: Pod>(
    kernel: &str,
    binding: &str,
    buffer: &GpuBuffer<T>,
    rt: &Runtime,
) -> Result<()> {
    if buffer.runtime() == rt.id() {
        return Ok(());
    }
    Err(Error::ForeignBuffer {
        operation: format!("binding `{binding}` of `{kernel}`"),
        buffer: buffer.label().to_owned(),
    })
}

/// Returns [`Error::BindingTooLarge`], naming `kernel` and `binding`, when a buffer of
/// `bytes` bytes is more than `limits` let one storage binding hold.
///
/// Every dispatch checks each storage buffer it binds, naming the binding by its position
/// (`binding 1`); generated launchers check first, naming the kernel and the parameter as the
/// Rust source spells them. A buffer over the limit can still be made, written, copied and
/// read: only binding it whole is refused. Split the data over buffers within the limit and
/// dispatch once for each part.
///
/// ```
/// # use kernel_runtime::{check_binding_size, wgpu, Error};
/// let limits = wgpu::Limits { max_storage_buffer_binding_size: 1 << 20, ..Default::default() };
/// assert!(check_binding_size("saxpy", "x", 1 << 20, &limits).is_ok());
/// let error = check_binding_size("saxpy", "x", (1 << 20) + 4, &limits).unwrap_err();
/// assert!(matches!(error, Error::BindingTooLarge { .. }));
/// assert!(error.to_string().starts_with("`saxpy` cannot bind `x`"));
/// ```
pub fn check_binding_size(
    kernel: &str,
    binding: &str,
    bytes: u64,
    limits: &wgpu::Limits,
) -> Result<()> {
    let limit = limits.max_storage_buffer_binding_size;
    if bytes <= limit {
        return Ok(());
    }
    Err(Error::BindingTooLarge {
        kernel: kernel.to_owned(),
        binding: binding.to_owned(),
        bytes,
        limit,
    })
}

/// How far apart the uniform blocks of a recording start.
fn uniform_alignment(limits: &wgpu::Limits) -> usize {
    limits.min_uniform_buffer_offset_alignment.max(16) as usize
}

fn uniform_offset(start: usize, pipeline: &Pipeline) -> Result<u32> {
    u32::try_from(start).map_err(|_| Error::Bindings {
        kernel: pipeline.label().to_owned(),
        problem: "the batch holds more than 4 GiB of uniform parameters; submit it in parts".into(),
    })
}

/// Queued dispatches are submitted once this many wait and no open batch has dispatches
/// among them.
const QUEUE_LIMIT: usize = 256;

/// Queued dispatches are submitted once this many wait, open batches or not: a batch left
/// open (forgotten with `mem::forget`, or kept open for long) delays the automatic
/// submission this long at most.
const QUEUE_HARD_LIMIT: usize = 16 * QUEUE_LIMIT;

impl Runtime {
    /// Starts an empty [`Batch`].
    pub fn batch(&self) -> Batch<'_> {
        let id = self.next_batch.fetch_add(1, Ordering::Relaxed);
        self.open_batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id);
        Batch {
            rt: self,
            id,
            len: 0,
        }
    }

    /// Queues a dispatch of `pipeline` over `grid` workgroups with `args` bound in order.
    ///
    /// The dispatch is checked now and submitted with the other queued dispatches, in order,
    /// at the next operation that needs it (see [`Runtime::flush`]).
    ///
    /// # Errors
    ///
    /// What [`Batch::dispatch`] returns. What only wgpu can check is reported by the operation
    /// that submits the queue, in an error naming the kernel.
    pub fn dispatch(&self, pipeline: &Pipeline, args: &[Arg<'_>], grid: [u32; 3]) -> Result<()> {
        let mut batch = self.batch();
        batch.dispatch(pipeline, args, grid)?;
        batch.enqueue()
    }

    /// Submits the queued dispatches now. Returns without waiting for them.
    ///
    /// Dispatches recorded in a [`Batch`] or queued one at a time (by [`Runtime::dispatch`]
    /// and generated `launch` methods) are submitted, in the order they were issued, by
    /// everything that must come after them: submitting a batch, reading or writing a
    /// [`GpuBuffer`](crate::GpuBuffer), [`Runtime::wait`], [`Runtime::queue`], dropping the
    /// runtime, and queuing the 256th (when no open [`Batch`] has dispatches among them; the
    /// 4096th in any case, so that a batch left open, or forgotten with `mem::forget`, does not
    /// hold the queue back for ever). Call `flush` to start them sooner, for example before
    /// long work on the CPU that the GPU could overlap.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`] (or another wgpu error) when wgpu rejects a queued dispatch; the
    /// message names the kernels. None of the queued dispatches runs then.
    pub fn flush(&self) -> Result<()> {
        pollster::block_on(self.flush_async())
    }

    /// [`Runtime::flush`] without blocking: the queued dispatches are submitted when
    /// `flush_async` is called, in program order, and the future says whether wgpu accepted
    /// them. It does not wait for the GPU to run them ([`Runtime::wait_async`] does).
    ///
    /// On native backends wgpu answers at once and the future is ready when first polled; in
    /// a browser it waits for the browser's answer. [`Runtime::flush`] is this future, waited
    /// for on the calling thread.
    ///
    /// ```no_run
    /// # async fn run(rt: &kernel_runtime::Runtime) -> Result<(), kernel_runtime::Error> {
    /// rt.flush_async().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// What [`Runtime::flush`] returns.
    pub fn flush_async(&self) -> impl Future<Output = Result<()>> + '_ {
        let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        // Submitted while the queue is locked, so that submissions keep the program's order;
        // wgpu's answer is awaited after.
        let submitted = std::mem::take(&mut *queue).submit_async(self);
        drop(queue);
        submitted
    }

    /// Submits the queue when it is full: when [`QUEUE_LIMIT`] dispatches wait and no open
    /// batch has dispatches among them, or when [`QUEUE_HARD_LIMIT`] wait.
    fn flush_if_full(&self) -> Result<()> {
        let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.len() < QUEUE_LIMIT {
            return Ok(());
        }
        if queue.len() < QUEUE_HARD_LIMIT {
            let open = self
                .open_batches
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if queue.holds_any_of(&open) {
                return Ok(());
            }
        }
        std::mem::take(&mut *queue).submit(self)
    }
}
