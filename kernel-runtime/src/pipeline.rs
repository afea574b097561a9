//! Compute pipelines and the cache that builds each one once: a WGSL source, an entry point,
//! the bind-group layout and the override constants identify a [`Pipeline`]. Shader modules and
//! bind-group layouts are cached too, so entry points of one module share both.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, RwLock};

use crate::error::{Error, Result};
use crate::runtime::{Runtime, RuntimeId};
use crate::sanitizer::{self, Checked, Prepared};

/// How a kernel sees one binding of its bind group. Bindings are numbered in order from 0 in
/// group 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindingKind {
    /// `var<storage, read>`: the kernel only reads it.
    ReadOnlyStorage,
    /// `var<storage, read_write>`: the kernel may write it.
    ReadWriteStorage,
    /// `var<uniform>`: a small parameter struct.
    Uniform,
}

impl BindingKind {
    /// Uniform bindings take a dynamic offset: a [`Batch`](crate::Batch) keeps the parameters
    /// of all its dispatches in one buffer.
    fn layout_entry(self, binding: u32) -> wgpu::BindGroupLayoutEntry {
        let ty = match self {
            BindingKind::ReadOnlyStorage => wgpu::BufferBindingType::Storage { read_only: true },
            BindingKind::ReadWriteStorage => wgpu::BufferBindingType::Storage { read_only: false },
            BindingKind::Uniform => wgpu::BufferBindingType::Uniform,
        };
        wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: self == BindingKind::Uniform,
                min_binding_size: None,
            },
            count: None,
        }
    }
}

/// Everything that identifies a compute pipeline.
///
/// ```no_run
/// # use kernel_runtime::{BindingKind, PipelineDesc, Runtime};
/// # fn main() -> Result<(), kernel_runtime::Error> {
/// # let rt = Runtime::new()?;
/// const DOUBLE: &str = "
///     @group(0) @binding(0) var<storage, read_write> x: array<f32>;
///     @compute @workgroup_size(64)
///     fn double(@builtin(global_invocation_id) id: vec3<u32>) {
///         if id.x < arrayLength(&x) { x[id.x] *= 2.0; }
///     }";
/// let pipeline = rt.pipeline(&PipelineDesc::new(DOUBLE, "double", &[BindingKind::ReadWriteStorage]))?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PipelineDesc<'a> {
    /// The WGSL module.
    pub source: &'a str,
    /// The `@compute` function to run.
    pub entry_point: &'a str,
    /// One entry per binding of group 0, in binding order.
    pub bindings: &'a [BindingKind],
    /// Values for the module's `override` constants.
    pub constants: &'a [(&'a str, f64)],
    /// Whether naga guards every index into buffers and arrays (see
    /// [`PipelineDesc::without_bounds_checks`]).
    bounds_checks: bool,
}

impl<'a> PipelineDesc<'a> {
    /// A pipeline description without override constants, with bounds checks.
    pub fn new(source: &'a str, entry_point: &'a str, bindings: &'a [BindingKind]) -> Self {
        PipelineDesc {
            source,
            entry_point,
            bindings,
            constants: &[],
            bounds_checks: true,
        }
    }

    /// The same description with values for the module's `override` constants.
    pub fn with_constants(self, constants: &'a [(&'a str, f64)]) -> Self {
        PipelineDesc { constants, ..self }
    }

    /// The same description, compiled without the bounds checks naga otherwise adds to every
    /// index into a buffer or an array (they clamp it, and cost time in inner loops).
    ///
    /// # Safety
    ///
    /// The caller promises that every index the entry point makes, into every buffer bound
    /// to it and every array it declares, is within bounds for every dispatch: for example
    /// because the kernel compares each index with lengths the host checked against the
    /// buffers. An index out of bounds then reads or writes memory it does not own.
    pub unsafe fn without_bounds_checks(self) -> Self {
        PipelineDesc {
            bounds_checks: false,
            ..self
        }
    }

    /// Whether naga adds bounds checks (see [`PipelineDesc::without_bounds_checks`]).
    pub fn bounds_checks(&self) -> bool {
        self.bounds_checks
    }
}

/// A compute pipeline together with its bind-group layout. Cloning it is cheap.
///
/// A pipeline belongs to the [`Runtime`] that built it: dispatching it on another one
/// ([`Runtime::dispatch`], [`Batch::dispatch`](crate::Batch::dispatch), a generated launcher's
/// `launch` or `record`) returns [`Error::ForeignPipeline`](crate::Error::ForeignPipeline)
/// and records nothing.
#[derive(Clone, Debug)]
pub struct Pipeline {
    label: Arc<str>,
    /// The runtime that built the pipeline: the only one it can be dispatched on.
    runtime: RuntimeId,
    bindings: Arc<[BindingKind]>,
    layout: Arc<wgpu::BindGroupLayout>,
    raw: wgpu::ComputePipeline,
    /// What the sanitizer's reports of the pipeline refer to, when built with its checks.
    checked: Option<Arc<Checked>>,
}

impl Pipeline {
    /// The entry point's name; errors and timings use it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The bindings of group 0, in order.
    pub fn bindings(&self) -> &[BindingKind] {
        &self.bindings
    }

    /// The wgpu pipeline, for interoperation.
    pub fn raw(&self) -> &wgpu::ComputePipeline {
        &self.raw
    }

    /// The layout of bind group 0.
    pub fn bind_group_layout(&self) -> &wgpu::BindGroupLayout {
        &self.layout
    }

    /// The runtime that built the pipeline.
    pub(crate) fn runtime(&self) -> RuntimeId {
        self.runtime
    }

    /// Whether the pipeline was built with the sanitizer's checks
    /// ([`Runtime::with_sanitizer`]).
    pub fn sanitized(&self) -> bool {
        self.checked.is_some()
    }

    pub(crate) fn checked(&self) -> Option<&Arc<Checked>> {
        self.checked.as_ref()
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct PipelineKey {
    source: Arc<str>,
    entry_point: String,
    bindings: Vec<BindingKind>,
    /// Constants by name and bit pattern, so the key can be hashed.
    constants: Vec<(String, u64)>,
    bounds_checks: bool,
    sanitized: bool,
}

/// Built pipelines, shader modules and layouts, keyed by what identifies them. Lookups take a
/// read lock; a miss builds under no lock and the first result stored wins.
#[derive(Default)]
pub(crate) struct PipelineCache {
    /// Modules by source and whether they check bounds.
    modules: Cached<(Arc<str>, bool), wgpu::ShaderModule>,
    /// Sources parsed with the sanitizer's checks, and each entry point's module built from
    /// one (the sanitizer instruments one entry point at a time).
    prepared: Cached<Arc<str>, Arc<Prepared>>,
    sanitized: Cached<(Arc<str>, String), (wgpu::ShaderModule, Arc<Checked>)>,
    layouts: Cached<Vec<BindingKind>, Arc<wgpu::BindGroupLayout>>,
    pipelines: Cached<PipelineKey, Pipeline>,
}

struct Cached<K, V>(RwLock<HashMap<K, V>>);

impl<K, V> Default for Cached<K, V> {
    fn default() -> Self {
        Cached(RwLock::new(HashMap::new()))
    }
}

impl<K: Hash + Eq, V: Clone> Cached<K, V> {
    fn get_or_build(&self, key: K, build: impl FnOnce() -> Result<V>) -> Result<V> {
        if let Some(value) = self.0.read().ok().and_then(|map| map.get(&key).cloned()) {
            return Ok(value);
        }
        let value = build()?;
        match self.0.write() {
            Ok(mut map) => Ok(map.entry(key).or_insert(value).clone()),
            Err(_) => Ok(value),
        }
    }

    fn len(&self) -> usize {
        self.0.read().map(|map| map.len()).unwrap_or(0)
    }
}

impl Runtime {
    /// Returns the pipeline `desc` describes, building it on first use.
    ///
    /// # Errors
    ///
    /// [`Error::Validation`](crate::Error::Validation) when the WGSL does not compile, the entry
    /// point does not exist or the bindings do not match the module's.
    pub fn pipeline(&self, desc: &PipelineDesc<'_>) -> Result<Pipeline> {
        let key = PipelineKey {
            source: Arc::from(desc.source),
            entry_point: desc.entry_point.to_owned(),
            bindings: desc.bindings.to_vec(),
            constants: desc
                .constants
                .iter()
                .map(|(name, value)| ((*name).to_owned(), value.to_bits()))
                .collect(),
            // The sanitizer reports an index out of bounds, and keeps naga's checks behind it.
            bounds_checks: desc.bounds_checks || self.sanitizes(),
            sanitized: self.sanitizes(),
        };
        self.cache
            .pipelines
            .get_or_build(key.clone(), || self.build_pipeline(desc, &key))
    }

    /// How many distinct pipelines this runtime has built.
    pub fn cached_pipelines(&self) -> usize {
        self.cache.pipelines.len()
    }

    fn build_pipeline(&self, desc: &PipelineDesc<'_>, key: &PipelineKey) -> Result<Pipeline> {
        let (module, checked) = if key.sanitized {
            let (module, checked) = self.sanitized_module(desc, key)?;
            (module, Some(checked))
        } else {
            (self.plain_module(desc, key)?, None)
        };
        let layout = self.bind_group_layout(desc.bindings)?;
        let sanitizer_layout = match checked {
            Some(_) => Some(self.bind_group_layout(&[BindingKind::ReadWriteStorage])?),
            None => None,
        };
        let raw = self.scoped(
            format_args!("creating the pipeline `{}`", desc.entry_point),
            || {
                let pipeline_layout =
                    self.device()
                        .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                            label: Some(desc.entry_point),
                            bind_group_layouts: &[Some(&layout), sanitizer_layout.as_deref()],
                            immediate_size: 0,
                        });
                self.device()
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(desc.entry_point),
                        layout: Some(&pipeline_layout),
                        module: &module,
                        entry_point: Some(desc.entry_point),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: desc.constants,
                            zero_initialize_workgroup_memory: true,
                        },
                        cache: None,
                    })
            },
        )?;
        Ok(Pipeline {
            label: desc.entry_point.into(),
            runtime: self.id(),
            bindings: desc.bindings.into(),
            layout,
            raw,
            checked,
        })
    }

    /// The bind-group layout of `bindings`, numbered from 0.
    pub(crate) fn bind_group_layout(
        &self,
        bindings: &[BindingKind],
    ) -> Result<Arc<wgpu::BindGroupLayout>> {
        self.cache.layouts.get_or_build(bindings.to_vec(), || {
            self.scoped("creating a bind-group layout", || {
                let entries: Vec<_> = (0u32..)
                    .zip(bindings)
                    .map(|(i, kind)| kind.layout_entry(i))
                    .collect();
                Arc::new(
                    self.device()
                        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                            label: Some("tessera bindings"),
                            entries: &entries,
                        }),
                )
            })
        })
    }

    /// The entry point's module with the sanitizer's checks, and what its reports refer to.
    fn sanitized_module(
        &self,
        desc: &PipelineDesc<'_>,
        key: &PipelineKey,
    ) -> Result<(wgpu::ShaderModule, Arc<Checked>)> {
        let operation = || {
            format!(
                "building `{}` with the sanitizer's checks",
                desc.entry_point
            )
        };
        let failed = |message: String| Error::Validation {
            operation: operation(),
            message,
        };
        // The checks take one more storage binding than the kernel's own.
        let storage = desc
            .bindings
            .iter()
            .filter(|b| **b != BindingKind::Uniform)
            .count() as u64;
        let available = u64::from(self.info().limits.max_storage_buffers_per_shader_stage);
        if storage + 1 > available {
            return Err(Error::LimitExceeded {
                kernel: desc.entry_point.to_owned(),
                limit: "max_storage_buffers_per_shader_stage (with the sanitizer's binding)",
                needed: storage + 1,
                available,
            });
        }
        let cache_key = (Arc::clone(&key.source), desc.entry_point.to_owned());
        self.cache.sanitized.get_or_build(cache_key, || {
            let prepared = self
                .cache
                .prepared
                .get_or_build(Arc::clone(&key.source), || {
                    sanitizer::prepare(desc.source)
                        .map(Arc::new)
                        .map_err(failed)
                })?;
            let instrumented = prepared.instrument(desc.entry_point).map_err(failed)?;
            let checked = Checked::new(desc.entry_point, &instrumented);
            let module = self.scoped(operation(), || {
                self.device()
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(desc.entry_point),
                        source: wgpu::ShaderSource::Naga(std::borrow::Cow::Owned(
                            instrumented.module,
                        )),
                    })
            })?;
            Ok((module, checked))
        })
    }

    /// The module of `desc`'s source, as it is.
    fn plain_module(
        &self,
        desc: &PipelineDesc<'_>,
        key: &PipelineKey,
    ) -> Result<wgpu::ShaderModule> {
        self.cache
            .modules
            .get_or_build((Arc::clone(&key.source), key.bounds_checks), || {
                self.scoped(
                    format_args!("compiling the WGSL of `{}`", desc.entry_point),
                    || {
                        let module = wgpu::ShaderModuleDescriptor {
                            label: Some(desc.entry_point),
                            source: wgpu::ShaderSource::Wgsl(desc.source.into()),
                        };
                        if key.bounds_checks {
                            self.device().create_shader_module(module)
                        } else {
                            // SAFETY: only `PipelineDesc::without_bounds_checks` clears
                            // `bounds_checks`, and its caller promised every index is in
                            // bounds.
                            unsafe {
                                self.device().create_shader_module_trusted(
                                    module,
                                    wgpu::ShaderRuntimeChecks {
                                        bounds_checks: false,
                                        ..wgpu::ShaderRuntimeChecks::checked()
                                    },
                                )
                            }
                        }
                    },
                )
            })
    }
}
