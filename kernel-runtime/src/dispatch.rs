//! Binding buffers to a pipeline and dispatching it: [`Arg`] for one binding, [`Batch`] for
//! several dispatches recorded into one command buffer and submitted once, and
//! [`Runtime::dispatch`] for a batch of one.

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

/// A dispatch recorded in a [`Batch`].
struct Recorded {
    pipeline: Pipeline,
    bind_group: wgpu::BindGroup,
    grid: [u32; 3],
}

/// Several dispatches recorded in order and submitted as one command buffer.
///
/// Each dispatch sees the writes of the ones before it.
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
    recorded: Vec<Recorded>,
}

impl<'rt> Batch<'rt> {
    /// Records a dispatch of `pipeline` over `grid` workgroups with `args` bound in order.
    ///
    /// # Errors
    ///
    /// [`Error::Bindings`] when the arguments do not match the pipeline's bindings,
    /// [`Error::GridTooLarge`] when a grid dimension exceeds the device's limit, and
    /// [`Error::Validation`] for anything else wgpu rejects.
    pub fn dispatch(
        &mut self,
        pipeline: &Pipeline,
        args: &[Arg<'_>],
        grid: [u32; 3],
    ) -> Result<()> {
        check_args(pipeline, args)?;
        let limit = self.rt.info().limits.max_compute_workgroups_per_dimension;
        if grid.iter().any(|&n| n > limit) {
            return Err(Error::GridTooLarge {
                kernel: pipeline.label().to_owned(),
                grid,
                limit,
            });
        }
        let bind_group = self.bind(pipeline, args)?;
        self.recorded.push(Recorded {
            pipeline: pipeline.clone(),
            bind_group,
            grid,
        });
        Ok(())
    }

    fn bind(&self, pipeline: &Pipeline, args: &[Arg<'_>]) -> Result<wgpu::BindGroup> {
        let device = self.rt.device();
        self.rt.scoped(
            format_args!("binding the arguments of `{}`", pipeline.label()),
            || {
                let buffers: Vec<wgpu::Buffer> =
                    args.iter().map(|arg| arg_buffer(device, arg)).collect();
                let entries: Vec<wgpu::BindGroupEntry<'_>> = (0u32..)
                    .zip(&buffers)
                    .map(|(binding, buffer)| wgpu::BindGroupEntry {
                        binding,
                        resource: buffer.as_entire_binding(),
                    })
                    .collect();
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(pipeline.label()),
                    layout: pipeline.bind_group_layout(),
                    entries: &entries,
                })
            },
        )
    }

    /// The runtime the batch records for.
    pub fn runtime(&self) -> &'rt Runtime {
        self.rt
    }

    /// The number of dispatches recorded so far.
    pub fn len(&self) -> usize {
        self.recorded.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }

    /// Submits the recorded dispatches as one command buffer. Returns without waiting for them.
    pub fn submit(self) -> Result<()> {
        let rt = self.rt;
        rt.scoped("submitting a batch", || {
            let mut encoder = rt.device().create_command_encoder(&Default::default());
            encode(&mut encoder, &self.recorded, None);
            rt.queue().submit([encoder.finish()]);
        })
    }

    /// Submits the recorded dispatches, waits for them and says how long they took on the GPU.
    ///
    /// With timestamp queries (see [`RuntimeInfo::has_timestamps`](crate::RuntimeInfo::has_timestamps))
    /// each dispatch is timed on the GPU; otherwise the whole batch is timed by the wall clock
    /// from submission to completion, and [`Timing::source`] says so.
    pub fn submit_timed(self) -> Result<Timing> {
        if self.rt.info().has_timestamps() && !self.recorded.is_empty() {
            timing::submit_with_timestamps(self.rt, &self.recorded_labels(), |encoder, queries| {
                encode(encoder, &self.recorded, Some(queries))
            })
        } else {
            let rt = self.rt;
            rt.wait()?;
            let start = std::time::Instant::now();
            let labels = self.recorded_labels();
            self.submit()?;
            rt.wait()?;
            Ok(Timing::wall_clock(start.elapsed(), labels))
        }
    }

    fn recorded_labels(&self) -> Vec<String> {
        self.recorded
            .iter()
            .map(|r| r.pipeline.label().to_owned())
            .collect()
    }
}

/// Records each dispatch as its own compute pass, writing begin and end timestamps when asked.
fn encode(
    encoder: &mut wgpu::CommandEncoder,
    recorded: &[Recorded],
    queries: Option<&timing::Queries>,
) {
    for (index, dispatch) in recorded.iter().enumerate() {
        let timestamp_writes = queries.map(|q| q.pass_writes(index));
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(dispatch.pipeline.label()),
            timestamp_writes,
        });
        pass.set_pipeline(dispatch.pipeline.raw());
        pass.set_bind_group(0, &dispatch.bind_group, &[]);
        let [x, y, z] = dispatch.grid;
        pass.dispatch_workgroups(x, y, z);
    }
}

/// The buffer to bind for `arg`: the caller's own, or a new uniform buffer holding its bytes.
fn arg_buffer(device: &wgpu::Device, arg: &Arg<'_>) -> wgpu::Buffer {
    match arg {
        Arg::Read(buffer) | Arg::ReadWrite(buffer) => (*buffer).clone(),
        Arg::Uniform(bytes) => {
            let mut contents = bytes.to_vec();
            contents.resize(bytes.len().max(1).next_multiple_of(16), 0);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("tessera uniform"),
                contents: &contents,
                usage: wgpu::BufferUsages::UNIFORM,
            })
        }
    }
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

impl Runtime {
    /// Starts an empty [`Batch`].
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            rt: self,
            recorded: Vec::new(),
        }
    }

    /// Dispatches `pipeline` once, now: a [`Batch`] of one, submitted without waiting.
    pub fn dispatch(&self, pipeline: &Pipeline, args: &[Arg<'_>], grid: [u32; 3]) -> Result<()> {
        let mut batch = self.batch();
        batch.dispatch(pipeline, args, grid)?;
        batch.submit()
    }
}
