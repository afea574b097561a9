//! [`Runtime`]: the adapter, device and queue, what they offer, the pipeline cache, and the
//! error-scope discipline every GPU operation of the crate goes through.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::adapter::{self, ADAPTER_ENV};
use crate::autotune::{Autotune, Tuner};
use crate::dispatch::Recording;
use crate::error::{Error, Result};
use crate::pipeline::PipelineCache;
use crate::sanitizer::{self, SANITIZE_ENV};
use crate::wait::{Completion, Progress, Signal};

/// Optional device features the runtime asks for whenever the adapter has them.
const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY
    .union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES)
    .union(wgpu::Features::SHADER_F16)
    .union(wgpu::Features::SUBGROUP)
    .union(COOPERATIVE_MATRIX);

/// The tensor cores, as wgpu 30 exposes them (an experimental feature).
const COOPERATIVE_MATRIX: wgpu::Features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;

/// `TESSERA_COOPERATIVE_MATRIX=off` keeps [`Runtime::new`] from requesting the tensor cores
/// (`on`, the default, lets it).
pub const COOPERATIVE_MATRIX_ENV: &str = "TESSERA_COOPERATIVE_MATRIX";

/// A GPU device ready to run kernels: adapter, device, queue and pipeline cache.
///
/// Create one per application and share it by reference; it is `Send + Sync`.
///
/// What a runtime makes belongs to it: a [`GpuBuffer`](crate::GpuBuffer), a
/// [`Pipeline`](crate::Pipeline) (and the generated launcher that holds it) and a
/// [`Batch`](crate::Batch) work only with the runtime that made them. That holds even for two
/// runtimes on one adapter, or on one device ([`Runtime::from_wgpu`] twice): each orders its
/// own queue of dispatches, so a buffer shared between them would be read or written out of
/// program order. Handing one to another runtime is refused before anything is recorded or
/// submitted: a buffer with [`Error::ForeignBuffer`], a pipeline with
/// [`Error::ForeignPipeline`]. A runtime on an application's device binds the application's
/// own wgpu buffers with [`Arg::read_raw`](crate::Arg::read_raw), unchecked.
///
/// ```no_run
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// let rt = kernel_runtime::Runtime::new()?;
/// println!("{}", rt.info());
/// let x = rt.upload(&[1.0f32, 2.0, 3.0])?;
/// assert_eq!(x.read(&rt)?, vec![1.0, 2.0, 3.0]);
/// # Ok(()) }
/// ```
pub struct Runtime {
    /// Which runtime this is, recorded by every handle it makes.
    id: RuntimeId,
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: RuntimeInfo,
    lost: Arc<Mutex<Option<(wgpu::DeviceLostReason, String)>>>,
    /// Dispatches issued (recorded in a batch, queued by `launch` and [`Runtime::dispatch`])
    /// and not yet submitted, in program order.
    pub(crate) queued: Mutex<Recording>,
    /// The batches started and not yet submitted or dropped. While one of them has
    /// dispatches in the queue, the queue is not submitted for being full, up to a hard
    /// limit (see [`Runtime::flush`]). A batch forgotten with `mem::forget` stays here (a
    /// `u64`), but holds nothing back once its dispatches have been submitted.
    pub(crate) open_batches: Mutex<HashSet<u64>>,
    /// The mark of the next batch's dispatches.
    pub(crate) next_batch: AtomicU64,
    /// An error of a submission no caller could be told of (see [`Runtime::queue`]), returned
    /// by the next operation.
    unreported: Mutex<Option<Error>>,
    pub(crate) cache: PipelineCache,
    pub(crate) tuner: Tuner,
    /// Whether pipelines are built with the sanitizer's checks ([`Runtime::with_sanitizer`]).
    sanitize: bool,
}

/// The error scopes of one operation, pushed by [`Runtime::push_scopes`]: out of memory,
/// internal, validation (the innermost).
pub(crate) struct Scopes([wgpu::ErrorScopeGuard; 3]);

/// Which [`Runtime`] made a buffer, a pipeline or a kernel's launcher: unique among the
/// runtimes of the process, and never reused, so a handle of a dropped runtime matches none
/// made after it ([`Runtime::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeId(u64);

impl RuntimeId {
    fn next() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        RuntimeId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What the runtime is running on: the adapter, and the features and limits of its device.
#[derive(Clone, Debug)]
pub struct RuntimeInfo {
    /// The adapter's name, e.g. `NVIDIA H100 80GB HBM3` or `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// The graphics API wgpu drives it through.
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual, CPU or other.
    pub device_type: wgpu::DeviceType,
    /// Driver name and version, as the driver reports them (may be empty).
    pub driver: String,
    /// The features the device was created with.
    pub features: wgpu::Features,
    /// The limits the device was created with.
    pub limits: wgpu::Limits,
    /// The fewest and the most invocations a subgroup of the adapter may have (wgpu's
    /// `AdapterInfo::subgroup_min_size` and `subgroup_max_size`): `[32, 32]` on NVIDIA GPUs,
    /// `[8, 8]` on lavapipe, `[4, 128]`, WebGPU's bounds, where the adapter does not say.
    pub subgroup_sizes: [u32; 2],
    /// The multiply-adds the device's tensor cores run (sizes and element types), when the
    /// device has [`wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX`]; empty when it has not.
    /// `None` when not known: a device adopted with [`Runtime::from_wgpu`] comes without its
    /// adapter, which lists them.
    pub cooperative_matrices: Option<Vec<wgpu::CooperativeMatrixProperties>>,
}

impl RuntimeInfo {
    fn new(
        info: wgpu::AdapterInfo,
        features: wgpu::Features,
        limits: wgpu::Limits,
        cooperative_matrices: Option<Vec<wgpu::CooperativeMatrixProperties>>,
    ) -> Self {
        let driver = [info.driver.as_str(), info.driver_info.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        RuntimeInfo {
            name: info.name,
            backend: info.backend,
            device_type: info.device_type,
            driver,
            features,
            limits,
            subgroup_sizes: [info.subgroup_min_size, info.subgroup_max_size],
            cooperative_matrices,
        }
    }

    /// Whether the device's tensor cores multiply `size` x `size` fragments of `inputs`,
    /// accumulating in `accumulator`, as the launcher of a kernel with
    /// `features(cooperative_matrix)` asks before building it. `true` for any combination on
    /// a device with the feature whose list is not known (see
    /// [`RuntimeInfo::cooperative_matrices`]).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// use kernel_runtime::wgpu::CooperativeScalarType::{F16, F32};
    /// let rt = kernel_runtime::Runtime::new()?;
    /// if rt.info().has_cooperative_matrix(16, F16, F32) {
    ///     println!("16x16x16 f16 multiply-adds accumulate in f32 on the tensor cores");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn has_cooperative_matrix(
        &self,
        size: u32,
        inputs: wgpu::CooperativeScalarType,
        accumulator: wgpu::CooperativeScalarType,
    ) -> bool {
        if !self.features.contains(COOPERATIVE_MATRIX) {
            return false;
        }
        self.cooperative_matrices.as_ref().is_none_or(|list| {
            list.iter().any(|p| {
                [p.m_size, p.n_size, p.k_size] == [size; 3]
                    && p.ab_type == inputs
                    && p.cr_type == accumulator
            })
        })
    }

    /// Whether GPU timestamps can time batches (see [`Batch::submit_timed`](crate::Batch::submit_timed)).
    pub fn has_timestamps(&self) -> bool {
        self.features.contains(wgpu::Features::TIMESTAMP_QUERY)
    }
}

impl fmt::Display for RuntimeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({:?}, {:?}",
            self.name, self.backend, self.device_type
        )?;
        if !self.driver.is_empty() {
            write!(f, ", {}", self.driver)?;
        }
        let optional = [
            (wgpu::Features::TIMESTAMP_QUERY, "timestamps"),
            (wgpu::Features::SHADER_F16, "f16"),
            (wgpu::Features::SUBGROUP, "subgroups"),
        ];
        let have: Vec<&str> = optional
            .iter()
            .filter(|(feature, _)| self.features.contains(*feature))
            .map(|(_, name)| *name)
            .collect();
        let mut have = have;
        let cooperative;
        if self.features.contains(COOPERATIVE_MATRIX) {
            cooperative = match &self.cooperative_matrices {
                Some(list) => {
                    let shapes: Vec<String> = list.iter().map(describe_multiply_add).collect();
                    format!("cooperative matrices ({})", shapes.join(", "))
                }
                None => "cooperative matrices".to_owned(),
            };
            have.push(&cooperative);
        }
        let l = &self.limits;
        write!(
            f,
            "); features: [{}]; limits: {} KiB workgroup storage, {} invocations per workgroup, \
             {} workgroups per dimension, {} MiB storage bindings",
            have.join(", "),
            l.max_compute_workgroup_storage_size / 1024,
            l.max_compute_invocations_per_workgroup,
            l.max_compute_workgroups_per_dimension,
            l.max_storage_buffer_binding_size / (1024 * 1024),
        )
    }
}

/// Whether `TESSERA_COOPERATIVE_MATRIX`'s `value` lets the runtime request the tensor cores:
/// unset, empty or `on` yes, `off` no, anything else an error.
fn cooperative_matrix_wanted(value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "" | "on" | "1" => Ok(true),
        "off" | "0" => Ok(false),
        _ => Err(Error::InvalidArgument {
            operation: format!("reading {COOPERATIVE_MATRIX_ENV}"),
            problem: format!("expected `on` or `off`, found `{value}`"),
        }),
    }
}

/// `16x8x16 f16->f32`.
fn describe_multiply_add(p: &wgpu::CooperativeMatrixProperties) -> String {
    let scalar = |t: wgpu::CooperativeScalarType| match t {
        wgpu::CooperativeScalarType::F32 => "f32",
        wgpu::CooperativeScalarType::F16 => "f16",
        wgpu::CooperativeScalarType::I32 => "i32",
        wgpu::CooperativeScalarType::U32 => "u32",
    };
    format!(
        "{}x{}x{} {}->{}",
        p.m_size,
        p.n_size,
        p.k_size,
        scalar(p.ab_type),
        scalar(p.cr_type)
    )
}

impl Runtime {
    /// Opens the best adapter on this machine and creates a device on it.
    ///
    /// A hardware GPU is preferred over a virtual one and a software adapter (such as Mesa's
    /// lavapipe) is used last. Setting `TESSERA_ADAPTER` to part of an adapter's name picks that
    /// adapter instead. The device gets the adapter's own limits and, where present, timestamp
    /// queries, `SHADER_F16`, `SUBGROUP` and the tensor cores
    /// (`EXPERIMENTAL_COOPERATIVE_MATRIX`).
    ///
    /// # Debug builds
    ///
    /// wgpu's debug builds turn on its `InstanceFlags::DEBUG`, which makes every pipeline's
    /// SPIR-V carry the WGSL and a line for each statement, found by scanning the text from
    /// its start each time: on lavapipe, `tessera_nn::Convolution::prepare` took 208 s with
    /// it and 9 s without. The runtime leaves it off; set `WGPU_DEBUG=1` for shader debug
    /// info in a graphics debugger. wgpu's other flags and variables (`WGPU_VALIDATION`, ...)
    /// apply as wgpu documents them.
    ///
    /// # Tensor cores
    ///
    /// wgpu 30 offers cooperative matrices as an *experimental* feature, which a device gets
    /// only with an `unsafe` opt-in whose contract is that wgpu's implementation of it may
    /// have bugs, undefined behaviour included. The runtime takes that opt-in when the adapter
    /// has the feature, so that kernels declaring `features(cooperative_matrix)` can run; the
    /// feature's API is used only by those kernels' pipelines. Set
    /// `TESSERA_COOPERATIVE_MATRIX=off` to leave it out: such kernels then get
    /// [`Error::MissingFeature`] and nothing else changes (another value than `on` or `off`
    /// is an [`Error::InvalidArgument`]).
    ///
    /// # Errors
    ///
    /// [`Error::NoAdapter`] when there is no adapter (the message says how to install one) or
    /// none matches `TESSERA_ADAPTER`; [`Error::RequestDevice`] when the adapter refuses;
    /// [`Error::InvalidArgument`] when `TESSERA_AUTOTUNE`, `TESSERA_COOPERATIVE_MATRIX` or
    /// `TESSERA_SANITIZE` ([`Runtime::with_sanitizer`]) is neither `on` nor `off`.
    pub fn new() -> Result<Self> {
        pollster::block_on(Self::new_async())
    }

    /// The asynchronous form of [`Runtime::new`].
    pub async fn new_async() -> Result<Self> {
        let instance = wgpu::Instance::new(instance_descriptor());
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
        let candidates: Vec<adapter::Candidate> = infos.iter().map(Into::into).collect();
        let wanted = std::env::var(ADAPTER_ENV).ok().filter(|v| !v.is_empty());
        let chosen = adapter::choose(&candidates, wanted.as_deref())?;
        let adapter = &adapters[chosen];
        let mut required_features = adapter.features() & OPTIONAL_FEATURES;
        let wanted =
            cooperative_matrix_wanted(&std::env::var(COOPERATIVE_MATRIX_ENV).unwrap_or_default())?;
        sanitizer::wanted(&std::env::var(SANITIZE_ENV).unwrap_or_default())?;
        if !wanted {
            required_features.remove(COOPERATIVE_MATRIX);
        }
        let experimental_features = if required_features.contains(COOPERATIVE_MATRIX) {
            // SAFETY: the contract is that wgpu's experimental features may have bugs, UB
            // included, reachable from safe calls. The runtime takes the opt-in only for the
            // cooperative-matrix feature, which only the pipelines of kernels that declare
            // `features(cooperative_matrix)` use; the docs of `Runtime::new` state the risk
            // and how to refuse it.
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let descriptor = wgpu::DeviceDescriptor {
            label: Some("tessera"),
            required_features,
            required_limits: adapter.limits(),
            experimental_features,
            ..Default::default()
        };
        let (device, queue) = adapter
            .request_device(&descriptor)
            .await
            .map_err(|source| Error::RequestDevice {
                adapter: adapter::describe(&infos[chosen]),
                source,
            })?;
        // Errors the runtime does not capture in a scope (there should be none) are kept
        // out of wgpu's default handler, which panics.
        device.on_uncaptured_error(Arc::new(|_error: wgpu::Error| {}));
        let info = adapter.get_info();
        let autotune = Autotune::from_env(info.device_type)?;
        let cooperative = if device.features().contains(COOPERATIVE_MATRIX) {
            adapter.cooperative_matrix_properties()
        } else {
            Vec::new()
        };
        let rt = Self::adopt(device, queue, info, Some(cooperative));
        rt.set_autotune(autotune);
        Ok(rt)
    }

    /// Adopts a device and queue the application already owns.
    ///
    /// The runtime uses the device's features and limits as they are. It does not replace the
    /// device's uncaptured-error handler: every operation of the runtime captures its own errors.
    /// Autotuning is as `TESSERA_AUTOTUNE` says; a value other than `on` or `off` turns it off
    /// here (where [`Runtime::new`] returns an error), and [`Runtime::autotune_report`] says so.
    ///
    /// Without the adapter, the runtime does not know which multiply-adds a device with
    /// tensor cores runs ([`RuntimeInfo::cooperative_matrices`] is `None`): launchers of
    /// cooperative-matrix kernels then check only the feature.
    pub fn from_wgpu(device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let info = device.adapter_info();
        let cooperative = (!device.features().contains(COOPERATIVE_MATRIX)).then(Vec::new);
        Self::adopt(device, queue, info, cooperative)
    }

    fn adopt(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter: wgpu::AdapterInfo,
        cooperative: Option<Vec<wgpu::CooperativeMatrixProperties>>,
    ) -> Self {
        let lost = Arc::new(Mutex::new(None));
        let slot = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = slot.lock() {
                slot.get_or_insert((reason, message));
            }
        });
        let (autotune, problem) = match Autotune::from_env(adapter.device_type) {
            Ok(mode) => (mode, None),
            Err(error) => (Autotune::Off, Some(error.to_string())),
        };
        let info = RuntimeInfo::new(adapter, device.features(), device.limits(), cooperative);
        // `Runtime::new` has refused a value that is neither `on` nor `off`; here it is off.
        let sanitize =
            sanitizer::wanted(&std::env::var(SANITIZE_ENV).unwrap_or_default()).unwrap_or(false);
        Runtime {
            id: RuntimeId::next(),
            tuner: Tuner::new(autotune, problem),
            device,
            queue,
            info,
            lost,
            queued: Mutex::default(),
            open_batches: Mutex::default(),
            next_batch: AtomicU64::new(0),
            unreported: Mutex::default(),
            cache: PipelineCache::default(),
            sanitize,
        }
    }

    /// The same runtime with the sanitizer on or off: while it is on, every pipeline the
    /// runtime builds checks each access to workgroup memory and storage buffers, and every
    /// submission waits for the GPU and returns [`Error::Hazard`] for the first data race or
    /// out-of-bounds index a dispatch met. `TESSERA_SANITIZE=on` turns it on for every
    /// runtime [`Runtime::new`] and [`Runtime::from_wgpu`] create. It is meant for tests (on
    /// lavapipe, say), and costs: on lavapipe nn's kernels compile about 4 to 8 times slower
    /// (each atomic of a check becomes code per lane) and run several times slower; each
    /// kernel takes one more storage binding (group 1) and a buffer with six words for each
    /// element of its workgroup arrays in each workgroup, and two for each element of the
    /// buffers it writes (no workgroup memory); and the host waits for the GPU after each
    /// submission.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), kernel_runtime::Error> {
    /// let rt = kernel_runtime::Runtime::new()?.with_sanitizer(true);
    /// assert!(rt.sanitizes());
    /// // ... dispatches; a racy one makes the next flush, read or wait return
    /// // `Error::Hazard`, naming the kernel, the lines, the element and the invocations.
    /// # Ok(()) }
    /// ```
    ///
    /// # What it reports
    ///
    /// - **Races on workgroup memory**: an element one invocation wrote and another read or
    ///   wrote, or one read and another wrote, with no workgroup barrier between (a reduction
    ///   finished "warp-synchronously", a tree reduction missing a barrier between steps).
    ///   Accesses before a `workgroup_barrier()` are forgotten after it (each shadow word
    ///   carries the count of barriers passed), so accesses in loop turns with a barrier
    ///   between never race; a `storage_barrier()` orders a write after other invocations'
    ///   reads of workgroup memory, not a read after a write.
    /// - **Indices out of bounds**: of a storage buffer, against its length (reads, writes and
    ///   atomics), and of a workgroup array (reads and writes). wgpu's bounds checks already
    ///   keep such an access inside the memory; the sanitizer says it happened.
    /// - **Races on storage buffers between workgroups**: an element of a buffer the kernel
    ///   writes, written by one workgroup and then written by another in the same dispatch
    ///   (two workgroups writing one element), or read by another, without atomics. A
    ///   workgroup that has updated a storage buffer atomically may read what others wrote:
    ///   that is how split reductions hand their parts over (each workgroup writes its part
    ///   and counts itself in atomically; the last to arrive reads every part), and the
    ///   sanitizer does not judge whether the atomics order the accesses.
    ///
    /// # What it cannot see
    ///
    /// Races through storage within one workgroup (invocations of a workgroup may order them
    /// with `storage_barrier()`), a read of a storage element by one workgroup before another
    /// writes it (only the last writer is kept), accesses of whole workgroup arrays at once,
    /// accesses through pointers passed to functions and through tensor-core fragments,
    /// atomics on workgroup memory, and uniform buffers. Atomic accesses are never races. A
    /// storage buffer of more than 2^20 elements is checked for bounds only, and so are the
    /// workgroups of a dispatch past the first 32 MiB of their shadows. Only the first hazard
    /// of a dispatch is described (with how many it met); the sanitizer changes no result of a
    /// kernel without hazards. Pipelines already built keep how they were built: turn it on
    /// before building a kernel's launcher.
    ///
    /// # Which kernels it checked
    ///
    /// With [`SANITIZE_COVERAGE_ENV`](crate::SANITIZE_COVERAGE_ENV) naming a file, the
    /// sanitizer appends to it the entry point of each pipeline whose dispatches it checked
    /// and found free of hazards, so that a test suite can tell which of its kernels it never
    /// ran.
    pub fn with_sanitizer(mut self, on: bool) -> Self {
        self.sanitize = on;
        self
    }

    /// Whether the sanitizer is on ([`Runtime::with_sanitizer`]).
    pub fn sanitizes(&self) -> bool {
        self.sanitize
    }

    /// Which runtime this is: what its buffers, pipelines and kernel launchers record, and
    /// what they are checked against when used.
    pub fn id(&self) -> RuntimeId {
        self.id
    }

    /// The adapter, features and limits in use. Its `Display` is a one-line report.
    pub fn info(&self) -> &RuntimeInfo {
        &self.info
    }

    /// The wgpu device, for interoperation.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue, for interoperation.
    ///
    /// Dispatches queued on the runtime are submitted first, so that what is submitted to the
    /// queue comes after them. Should that submission fail, the next operation of the runtime
    /// returns its error.
    pub fn queue(&self) -> &wgpu::Queue {
        if let Err(error) = self.flush() {
            let mut unreported = self
                .unreported
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            unreported.get_or_insert(error);
        }
        &self.queue
    }

    /// The queue, without submitting what is queued on the runtime.
    pub(crate) fn raw_queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Returns [`Error::DeviceLost`] once the device has been lost, and the error of a
    /// submission made by [`Runtime::queue`] once.
    pub fn check_device(&self) -> Result<()> {
        let unreported = self
            .unreported
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(error) = unreported {
            return Err(error);
        }
        let lost = self
            .lost
            .lock()
            .map(|slot| slot.clone())
            .unwrap_or_default();
        match lost {
            Some((reason, message)) => Err(Error::DeviceLost { reason, message }),
            None => Ok(()),
        }
    }

    /// Runs `f` with wgpu's validation and out-of-memory errors captured, and returns the first
    /// one as an [`Error`] whose message names `operation`.
    pub(crate) fn scoped<R>(
        &self,
        operation: impl fmt::Display,
        f: impl FnOnce() -> R,
    ) -> Result<R> {
        let scopes = self.push_scopes()?;
        let value = f();
        pollster::block_on(self.pop_scopes(scopes, operation.to_string()))?;
        Ok(value)
    }

    /// Pushes the error scopes of [`Runtime::scoped`], on this thread (wgpu keeps them per
    /// thread); [`Runtime::pop_scopes`] must pop them on this thread, with nothing pushed
    /// in between left unpopped.
    pub(crate) fn push_scopes(&self) -> Result<Scopes> {
        self.check_device()?;
        Ok(Scopes([
            self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory),
            self.device.push_error_scope(wgpu::ErrorFilter::Internal),
            self.device.push_error_scope(wgpu::ErrorFilter::Validation),
        ]))
    }

    /// Pops `scopes` now, and returns a future of the first error they caught, as an
    /// [`Error`] whose message names `operation`. On native backends the future is ready at
    /// once; in a browser it waits for the browser's answer.
    pub(crate) fn pop_scopes(
        &self,
        scopes: Scopes,
        operation: String,
    ) -> impl Future<Output = Result<()>> + '_ {
        let [out_of_memory, internal, validation] = scopes.0;
        let popped = [validation.pop(), internal.pop(), out_of_memory.pop()];
        async move {
            let mut first = None;
            for pop in popped {
                if let Some(error) = pop.await {
                    first.get_or_insert(error);
                }
            }
            self.check_device()?;
            match first {
                Some(error) => Err(Error::from_wgpu(operation, error)),
                None => Ok(()),
            }
        }
    }

    /// Submits the queued dispatches (see [`Runtime::flush`]) and blocks until all submitted
    /// work has finished: [`Runtime::wait_async`], waited for on this thread.
    pub fn wait(&self) -> Result<()> {
        pollster::block_on(self.wait_with(Progress::Block))
    }

    /// Submits the queued dispatches (see [`Runtime::flush_async`]) and finishes when all work
    /// submitted before the call has finished, without blocking the thread that polls it.
    ///
    /// The dispatches are submitted when `wait_async` is called, not when the future is first
    /// polled. On native backends the future polls the device when it is polled, and while
    /// the GPU works a short-lived thread of its own waits for it and wakes the task; in a
    /// browser, the browser wakes it. Any executor can poll it, and it is `Send`.
    ///
    /// ```no_run
    /// # async fn run(rt: &kernel_runtime::Runtime, x: &mut kernel_runtime::GpuBuffer<f32>) -> Result<(), kernel_runtime::Error> {
    /// x.fill(rt, 1.0)?;
    /// rt.wait_async().await?; // the fill has reached the GPU and finished
    /// # Ok(()) }
    /// ```
    pub fn wait_async(&self) -> impl Future<Output = Result<()>> + '_ {
        self.wait_with(Progress::Async)
    }

    pub(crate) fn wait_with(&self, progress: Progress) -> impl Future<Output = Result<()>> + '_ {
        let flushed = self.flush_async();
        let signal = Signal::new();
        let done = signal.setter();
        self.queue.on_submitted_work_done(move || done(()));
        let finished = Completion::new(
            self,
            signal,
            None,
            progress,
            "waiting for the GPU".to_owned(),
        );
        async move {
            flushed.await?;
            finished.await?;
            self.check_device()
        }
    }

    /// Blocks until the submission `index` (and what was submitted before it; all submitted
    /// work when `None`) has finished, not for later submissions.
    pub(crate) fn wait_until(&self, index: Option<wgpu::SubmissionIndex>) -> Result<()> {
        let polled = self.device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        });
        if let Err(error) = polled {
            // On a lost device the submission failed, and waiting for it is an error of its
            // own: the loss (reported once the device has been polled to the end) is what
            // to report.
            let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
            self.check_device()?;
            return Err(error.into());
        }
        self.check_device()
    }
}

impl Drop for Runtime {
    /// Submits the queued dispatches, so that work launched is done even when nothing waited
    /// for it. An error can be reported to no one then; call [`Runtime::flush`] to see it.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The `wgpu` instance's options: wgpu's defaults and environment variables, but for
/// `InstanceFlags::DEBUG`, which wgpu's debug builds set and under which naga writes SPIR-V
/// debug info whose line numbers it finds by scanning the WGSL from its start for every
/// statement (25x slower pipelines for nn's modules). Off unless `WGPU_DEBUG=1` asks for it.
fn instance_descriptor() -> wgpu::InstanceDescriptor {
    let mut descriptor = wgpu::InstanceDescriptor::new_without_display_handle();
    descriptor.flags.remove(wgpu::InstanceFlags::DEBUG);
    descriptor.with_env()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wgpus_debug_flag_is_off_unless_asked_for() {
        let asked = std::env::var("WGPU_DEBUG").is_ok_and(|v| v != "0");
        let flags = instance_descriptor().flags;
        assert_eq!(flags.contains(wgpu::InstanceFlags::DEBUG), asked);
    }

    #[test]
    fn the_tensor_core_setting_is_on_or_off_and_anything_else_is_an_error() {
        assert!(cooperative_matrix_wanted("").unwrap());
        assert!(cooperative_matrix_wanted("ON").unwrap());
        assert!(!cooperative_matrix_wanted("off").unwrap());
        let error = cooperative_matrix_wanted("no").unwrap_err().to_string();
        assert!(
            error.contains("TESSERA_COOPERATIVE_MATRIX") && error.contains("found `no`"),
            "{error}"
        );
    }
}
