//! Binding buffers to a pipeline and dispatching it: [`Arg`] for one binding, [`Batch`] for
//! several dispatches recorded into one command buffer and submitted once, and
//! [`Runtime::dispatch`] for one dispatch queued on the runtime.
//!
//! Dispatches queued one at a time ([`Runtime::dispatch`], [`Batch::enqueue`], and every
//! generated `launch`) wait in the runtime's queue and are submitted together, at the next
//! operation that must see their results or be ordered after them (see [`Runtime::flush`]).
//! A submission costs tens of microseconds of host time; a queued dispatch, about one.

use std::collections::HashMap;
use std::sync::PoisonError;

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::buffer::GpuBuffer;
use crate::error::{Error, Result};
use crate::pipeline::{BindingKind, Pipeline};
use crate::runtime::Runtime;
use crate::timing::{self, Timing};

/// One argument of a dispatch, bound at the binding with its position.
///
/// Read-only storage borrows its buffer shared and read-write storage borrows it exclusively,
/// so the same buffer cannot be passed as both in one argument list.
#[derive(Debug)]
pub enum Arg<'a> {
    /// A buffer the kernel only reads.
    Read(&'a wgpu::Buffer),
    /// A buffer the kernel may write.
    ReadWrite(&'a wgpu::Buffer),
    /// The bytes of a uniform parameter struct (padded to 16 bytes by the runtime).
    Uniform(&'a [u8]),
}

impl<'a> Arg<'a> {
    /// A read-only storage binding.
    pub fn read<T: Pod>(buffer: &'a GpuBuffer<T>) -> Self {
        Arg::Read(buffer.raw())
    }

    /// A read-write storage binding.
    pub fn read_write<T: Pod>(buffer: &'a mut GpuBuffer<T>) -> Self {
        Arg::ReadWrite(buffer.raw())
    }

    /// A uniform binding holding `value`.
    pub fn uniform<P: Pod>(value: &'a P) -> Self {
        Arg::Uniform(bytemuck::bytes_of(value))
    }

    fn kind(&self) -> BindingKind {
        match self {
            Arg::Read(_) => BindingKind::ReadOnlyStorage,
            Arg::ReadWrite(_) => BindingKind::ReadWriteStorage,
            Arg::Uniform(_) => BindingKind::Uniform,
        }
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
}

/// Several dispatches recorded in order and submitted as one command buffer.
///
/// Each dispatch sees the writes of the ones before it, and of everything queued on the
/// runtime before the batch is submitted. Recording only checks the arguments and copies the
/// uniform bytes; the GPU objects are made when the batch is submitted, once for the whole
/// batch: one compute pass holds every dispatch, the uniform parameters of all dispatches
/// share one buffer (each at its own dynamic offset), and dispatches that bind the same
/// buffers to the same layout share one bind group.
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
    recording: Recording,
}

impl<'rt> Batch<'rt> {
    /// Records a dispatch of `pipeline` over `grid` workgroups with `args` bound in order.
    ///
    /// # Errors
    ///
    /// [`Error::Bindings`] when the arguments do not match the pipeline's bindings and
    /// [`Error::GridTooLarge`] when a grid dimension exceeds the device's limit. What only wgpu
    /// can check is checked when the batch is submitted.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        grid: [u32; 3],
    ) -> Result<()> {
        self.recording
            .push(&self.rt.info().limits, pipeline, args, grid)
    }

    /// The runtime the batch records for.
    pub fn runtime(&self) -> &'rt Runtime {
        self.rt
    }

    /// The number of dispatches recorded so far.
    pub fn len(&self) -> usize {
        self.recording.recorded.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.recording.recorded.is_empty()
    }

    /// Submits the dispatches queued on the runtime and then this batch's, as one command
    /// buffer. Returns without waiting for them.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`] (or another wgpu error) when wgpu rejects a binding or a dispatch;
    /// its message names the kernels. Nothing of the submission runs then.
    pub fn submit(self) -> Result<()> {
        self.rt.submit_queued(Some(self.recording))
    }

    /// Adds the batch's dispatches to the runtime's queue instead of submitting them now: they
    /// are submitted with the queued dispatches before and after them, at the next operation
    /// that needs them (see [`Runtime::flush`]). Generated `launch` methods do this.
    ///
    /// # Errors
    ///
    /// Only when adding them fills the queue, which is then submitted: what [`Batch::submit`]
    /// returns.
    pub fn enqueue(self) -> Result<()> {
        self.rt.enqueue(self.recording)
    }

    /// Submits the recorded dispatches, waits for them and says how long they took on the GPU.
    ///
    /// Dispatches queued on the runtime are submitted and waited for first, untimed. With
    /// timestamp queries (see [`RuntimeInfo::has_timestamps`](crate::RuntimeInfo::has_timestamps))
    /// each dispatch is timed on the GPU, in a compute pass of its own; otherwise the whole
    /// batch is timed by the wall clock from submission to completion, and [`Timing::source`]
    /// says so.
    pub fn submit_timed(self) -> Result<Timing> {
        let rt = self.rt;
        rt.wait()?;
        let labels = self.recording.labels();
        if rt.info().has_timestamps() && !self.recording.recorded.is_empty() {
            let recording = self.recording;
            timing::submit_with_timestamps(rt, &labels, recording.describe(), |encoder, queries| {
                let bind_groups = recording.bind_groups(rt);
                encode(encoder, &recording.recorded, &bind_groups, Some(queries))
            })
        } else {
            let start = std::time::Instant::now();
            self.submit()?;
            rt.wait()?;
            Ok(Timing::wall_clock(start.elapsed(), labels))
        }
    }
}

/// Dispatches recorded but not yet submitted, and the uniform bytes they bind: a [`Batch`]'s,
/// or those queued on a [`Runtime`].
#[derive(Default)]
pub(crate) struct Recording {
    recorded: Vec<Recorded>,
    /// The uniform bytes of every dispatch, each block at a multiple of the device's
    /// uniform-offset alignment.
    uniforms: Vec<u8>,
}

impl Recording {
    fn push(
        &mut self,
        limits: &wgpu::Limits,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        grid: [u32; 3],
    ) -> Result<()> {
        check_args(pipeline, args)?;
        let limit = limits.max_compute_workgroups_per_dimension;
        if grid.iter().any(|&n| n > limit) {
            return Err(Error::GridTooLarge {
                kernel: pipeline.label().to_owned(),
                grid,
                limit,
            });
        }
        let alignment = uniform_alignment(limits);
        let mut offsets = Vec::new();
        let bound = args
            .iter()
            .map(|arg| match arg {
                Arg::Read(buffer) | Arg::ReadWrite(buffer) => Ok(Bound::Storage((*buffer).clone())),
                Arg::Uniform(bytes) => {
                    let start = self.uniforms.len().next_multiple_of(alignment);
                    let size = uniform_size(bytes);
                    let offset = uniform_offset(start, pipeline)?;
                    self.uniforms.resize(start, 0);
                    self.uniforms.extend_from_slice(bytes);
                    self.uniforms.resize(start + size as usize, 0);
                    offsets.push(offset);
                    Ok(Bound::Uniform { size })
                }
            })
            .collect::<Result<Vec<_>>>()?;
        self.recorded.push(Recorded {
            pipeline: pipeline.clone(),
            bound,
            offsets,
            grid,
        });
        Ok(())
    }

    /// Moves `other`'s dispatches after these, with their uniform bytes.
    fn append(&mut self, other: Recording, limits: &wgpu::Limits) -> Result<()> {
        let base = self
            .uniforms
            .len()
            .next_multiple_of(uniform_alignment(limits));
        for mut dispatch in other.recorded {
            for offset in &mut dispatch.offsets {
                *offset = uniform_offset(base + *offset as usize, &dispatch.pipeline)?;
            }
            self.recorded.push(dispatch);
        }
        if !other.uniforms.is_empty() {
            self.uniforms.resize(base, 0);
            self.uniforms.extend_from_slice(&other.uniforms);
        }
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.recorded.len()
    }

    fn labels(&self) -> Vec<String> {
        self.recorded
            .iter()
            .map(|r| r.pipeline.label().to_owned())
            .collect()
    }

    /// Submits the dispatches as one command buffer, in one error scope.
    pub(crate) fn submit(self, rt: &Runtime) -> Result<()> {
        if self.recorded.is_empty() {
            return Ok(());
        }
        rt.scoped(self.describe(), || {
            let bind_groups = self.bind_groups(rt);
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            encode(&mut encoder, &self.recorded, &bind_groups, None);
            rt.raw_queue().submit([encoder.finish()]);
        })
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

/// Records the dispatches: all in one compute pass, or, when timed, each in a pass of its own
/// with begin and end timestamps.
fn encode(
    encoder: &mut wgpu::CommandEncoder,
    recorded: &[Recorded],
    bind_groups: &[wgpu::BindGroup],
    queries: Option<&timing::Queries>,
) {
    let record = |pass: &mut wgpu::ComputePass<'_>, dispatch: &Recorded, group| {
        pass.set_pipeline(dispatch.pipeline.raw());
        pass.set_bind_group(0, group, &dispatch.offsets);
        let [x, y, z] = dispatch.grid;
        pass.dispatch_workgroups(x, y, z);
    };
    match queries {
        None => {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("tessera batch"),
                timestamp_writes: None,
            });
            for (dispatch, group) in recorded.iter().zip(bind_groups) {
                record(&mut pass, dispatch, group);
            }
        }
        Some(queries) => {
            for (index, (dispatch, group)) in recorded.iter().zip(bind_groups).enumerate() {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(dispatch.pipeline.label()),
                    timestamp_writes: Some(queries.pass_writes(index)),
                });
                record(&mut pass, dispatch, group);
            }
        }
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

/// Queued dispatches are submitted once this many wait.
const QUEUE_LIMIT: usize = 256;

impl Runtime {
    /// Starts an empty [`Batch`].
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            rt: self,
            recording: Recording::default(),
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
    /// Queued dispatches (from [`Runtime::dispatch`], [`Batch::enqueue`] and generated
    /// `launch` methods) are submitted by everything that must come after them: submitting a
    /// [`Batch`], reading or writing a [`GpuBuffer`](crate::GpuBuffer), [`Runtime::wait`],
    /// [`Runtime::queue`], dropping the runtime, and queuing the 256th. Call `flush` to start
    /// them sooner, for example before long work on the CPU that the GPU could overlap.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`] (or another wgpu error) when wgpu rejects a queued dispatch; the
    /// message names the kernels. None of the queued dispatches runs then.
    pub fn flush(&self) -> Result<()> {
        self.submit_queued(None)
    }

    /// Submits the queue, followed by `then` when given, as one command buffer. The queue stays
    /// locked while it is submitted, so submissions keep the order of their dispatches.
    fn submit_queued(&self, then: Option<Recording>) -> Result<()> {
        let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        let mut recording = std::mem::take(&mut *queue);
        if let Some(then) = then {
            recording.append(then, &self.info().limits)?;
        }
        recording.submit(self)
    }

    fn enqueue(&self, recording: Recording) -> Result<()> {
        let mut queue = self.queued.lock().unwrap_or_else(PoisonError::into_inner);
        queue.append(recording, &self.info().limits)?;
        if queue.len() < QUEUE_LIMIT {
            return Ok(());
        }
        std::mem::take(&mut *queue).submit(self)
    }
}
