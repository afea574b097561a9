//! One launcher per kernel: `Name` (built once from a `Runtime`, holding its pipeline) and
//! `NameArgs<'a>` (one field per binding: `&GpuBuffer<T>` for read-only storage,
//! `&mut GpuBuffer<T>` for read-write storage, `&P` for the parameters).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::compile::Narrower;
use crate::expand::host;
use crate::ir::{
    Binding, BindingKind, Element, Feature, HostElement, Instance, Kernel, Module, Scalar, Ty,
    Variant,
};

/// The host type of a buffer element: `f32`, `half::f16`, `u32`, `i32`.
fn scalar_tokens(scalar: Option<Scalar>) -> TokenStream {
    match scalar {
        Some(Scalar::F32) => quote!(f32),
        Some(Scalar::F16) => quote!(::tessera::half::f16),
        Some(Scalar::I32) => quote!(i32),
        _ => quote!(u32),
    }
}

/// The host type of a buffer's elements: a scalar, or `[scalar; N]` for `VecN<scalar>`.
fn element_tokens(element: &Ty, scalar: TokenStream) -> TokenStream {
    match element {
        Ty::Vector(n, _) => {
            let n = usize::from(*n);
            quote!([#scalar; #n])
        }
        _ => scalar,
    }
}

/// The host type of an element type a kernel is instantiated for: `f32`, `[f32; 4]`.
fn host_element(element: Element) -> TokenStream {
    element_tokens(&element.ty(), scalar_tokens(Some(element.scalar)))
}

/// The type of the argument for `binding`; `generic` is the kernel's type parameter, the
/// element type of the instance `binding` comes from, and the launcher's element trait. A
/// generic binding's buffer holds the parameter (`x: &[T]`) or vectors of it (`x:
/// &[Vec4<T>]`, with `T` a scalar), or an associated type the trait carries (`x: &[T::F32]`).
pub fn field_ty(
    module: &Module,
    binding: &Binding,
    generic: Option<(&Ident, Element, &Ident)>,
) -> TokenStream {
    let span = binding.span.first;
    let element_of = |ty: &Ty| match (generic, binding.host) {
        (Some((param, element, _)), HostElement::Param) if *ty == element.ty() => quote!(#param),
        (Some((param, _, _)), HostElement::Param) => element_tokens(ty, quote!(#param)),
        (Some((param, _, element_trait)), HostElement::Associated(associated)) => {
            let name = Ident::new(&associated.name(), span);
            quote!(<#param as #element_trait>::#name)
        }
        _ => element_tokens(ty, scalar_tokens(ty.scalar())),
    };
    match &binding.kind {
        BindingKind::Storage {
            element,
            writable: false,
        } => {
            let element = element_of(element);
            quote_spanned!(span=> &'a ::tessera::__private::kernel_runtime::GpuBuffer<#element>)
        }
        BindingKind::Storage {
            element,
            writable: true,
        } => {
            let element = element_of(element);
            quote_spanned!(span=> &'a mut ::tessera::__private::kernel_runtime::GpuBuffer<#element>)
        }
        BindingKind::Uniform { params } => {
            let name = &module.params[*params].name;
            quote_spanned!(span=> &'a #name)
        }
    }
}

fn binding_kind_tokens(binding: &Binding) -> TokenStream {
    match binding.kind {
        BindingKind::Storage {
            writable: false, ..
        } => quote!(ReadOnlyStorage),
        BindingKind::Storage { writable: true, .. } => quote!(ReadWriteStorage),
        BindingKind::Uniform { .. } => quote!(Uniform),
    }
}

/// The binding's argument, read from the field of `args` (a binding may be named like any
/// local of the generated code, so the fields are not bound to locals).
fn arg_tokens(binding: &Binding) -> TokenStream {
    let name = &binding.name;
    match binding.kind {
        BindingKind::Storage {
            writable: false, ..
        } => quote!(::tessera::__private::kernel_runtime::Arg::read(args.#name)),
        BindingKind::Storage { writable: true, .. } => {
            quote!(::tessera::__private::kernel_runtime::Arg::read_write(args.#name))
        }
        BindingKind::Uniform { .. } => {
            quote!(::tessera::__private::kernel_runtime::Arg::uniform(args.#name))
        }
    }
}

/// A line per binding for the docs: `x: &[f32], binding 1, read-only storage, length >= ...`.
fn binding_doc(module: &Module, index: usize, binding: &Binding) -> String {
    let what = match &binding.kind {
        BindingKind::Storage { element, writable } => {
            let access = if *writable { "read-write" } else { "read-only" };
            format!("{access} storage of `{}`", element.rust_name())
        }
        BindingKind::Uniform { params } => format!("uniform `{}`", module.params[*params].name),
    };
    let len = if binding.len.is_some() {
        ", length checked before dispatch"
    } else {
        ""
    };
    format!("- `{}`: binding {index}, {what}{len}", binding.name)
}

/// Rust path of the runtime crate, as generated code reaches it.
fn rt() -> TokenStream {
    quote!(::tessera::__private::kernel_runtime)
}

/// The launcher and argument types of one kernel, from its instances and their variants (per
/// instance, the general body then each specialization) and their WGSL entry points.
pub fn launcher(
    module: &Module,
    kernel: &Kernel,
    narrower: &[Narrower],
    valid: bool,
) -> TokenStream {
    let Some(first) = kernel.instances.first() else {
        return TokenStream::new();
    };
    let general = first.general();
    let instances = &kernel.instances;
    let rt = rt();
    let launcher = kernel.launcher_name();
    let args_ty = kernel.args_name();
    let rust_name = syn::ext::IdentExt::unraw(&kernel.name).to_string();
    let uniform = general.bindings.iter().find_map(|b| match b.kind {
        BindingKind::Uniform { params } => Some((&b.name, &module.params[params])),
        _ => None,
    });
    let folds = kernel.variants().any(Variant::uses_invocation_ids);
    let generics = Generics::of(kernel);
    let Generics {
        param,
        declare,
        implement,
        apply,
        args_declare,
        args_apply,
        phantom,
        items: element_items,
    } = &generics;

    let names: Vec<&Ident> = general.bindings.iter().map(|b| &b.name).collect();
    let field_tys: Vec<TokenStream> = general
        .bindings
        .iter()
        .map(|b| {
            let first = param.as_ref().zip(kernel.instances[0].element);
            let element_trait = element_trait(&launcher);
            field_ty(module, b, first.map(|(p, e)| (p, e, &element_trait)))
        })
        .collect();
    let field_docs: Vec<String> = general
        .bindings
        .iter()
        .enumerate()
        .map(|(i, b)| binding_doc(module, i, b))
        .collect();
    let mut kinds: Vec<TokenStream> = general.bindings.iter().map(binding_kind_tokens).collect();
    let mut dispatch_args: Vec<TokenStream> = general.bindings.iter().map(arg_tokens).collect();
    if folds {
        kinds.push(quote!(Uniform));
        dispatch_args.push(quote!(#rt::Arg::uniform(&folded.logical)));
    }
    let marker = names.is_empty().then(|| {
        quote! {
            #[doc(hidden)]
            pub _lifetime: ::core::marker::PhantomData<&'a ()>,
        }
    });

    let entry_points = instances.iter().map(|instance| {
        let entries = instance.variants.iter().map(|v| &v.entry_point);
        quote!(&[#(#entries),*])
    });
    let sizes = instances.iter().map(|instance| {
        let [x, y, z] = instance.general().workgroup_size;
        quote!([#x, #y, #z])
    });
    let memories = instances.iter().map(|i| shared_bytes(i.general()));
    // An instance that needs fewer optional features than the module builds from the text
    // of the instances that need no more than it does.
    let sources = instances.iter().map(|instance| {
        let features = instance.general().requirements.feature_set();
        match narrower.iter().find(|n| n.features == features) {
            Some(n) => {
                let name = super::narrower_name(&n.features);
                quote!(#name)
            }
            None => quote!(WGSL),
        }
    });
    let grid_arms = instances.iter().enumerate().map(|(i, instance)| {
        let grid = &instance.general().grid;
        let axes = (0..3).map(|axis| match grid.get(axis).filter(|_| valid) {
            Some(expr) => host::tokens(expr, uniform),
            None => quote!(1u64),
        });
        quote!(#i => [#(#axes),*],)
    });
    let length_arms = instances.iter().enumerate().map(|(i, instance)| {
        let checks = length_checks(instance.general(), uniform, &rust_name, valid);
        quote!(#i => { #(#checks)* })
    });
    // Each storage buffer against the device's limit for one binding, named as the source
    // names the kernel and the parameter.
    // ... and made by the runtime it is recorded on.
    let storage = || {
        general.bindings.iter().filter_map(|binding| {
            let BindingKind::Storage { .. } = binding.kind else {
                return None;
            };
            let name = &binding.name;
            Some((name, syn::ext::IdentExt::unraw(name).to_string()))
        })
    };
    let size_checks = storage().map(|(name, name_text)| {
        quote! {
            #rt::check_binding_size(#rust_name, #name_text, #rt::GpuBuffer::raw(args.#name).size(), limits)?;
        }
    });
    let owner_checks = storage().map(|(name, name_text)| {
        quote! {
            #rt::check_buffer_owner(#rust_name, #name_text, args.#name, batch.runtime())?;
        }
    });
    let variant_choice = variant_choice(kernel, uniform.map(|u| u.0).filter(|_| valid));
    let device_checks = device_checks(instances, &rust_name);
    let constants = constants_items(module, kernel, &launcher, &rust_name, &generics);
    let variant_infos = instances.iter().flat_map(|instance| {
        instance
            .variants
            .iter()
            .map(move |variant| variant_info(module, kernel, instance, variant))
    });
    let dispatch = if folds {
        quote! {
            let limit = batch.runtime().info().limits.max_compute_workgroups_per_dimension;
            let folded = #rt::fold_grid(#rust_name, logical, limit)?;
            let pipeline = self.pipeline(batch.runtime(), variant)?;
            batch.dispatch(pipeline, &[#(#dispatch_args),*], folded.dispatch)
        }
    } else {
        quote! {
            let grid = logical.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            let pipeline = self.pipeline(batch.runtime(), variant)?;
            batch.dispatch(pipeline, &[#(#dispatch_args),*], grid)
        }
    };

    let doc = launcher_doc(module, kernel, &field_docs);
    let args_doc = format!("The arguments of [`{launcher}`], one per parameter of `{rust_name}`.");
    let phantom_value = param
        .as_ref()
        .map(|_| quote!(_element: ::core::marker::PhantomData));
    let instance_count = instances.len();
    quote_spanned! {Span::call_site()=>
        #[doc = #doc]
        #[derive(Clone, Debug)]
        pub struct #launcher #declare {
            instance: usize,
            /// The runtime the launcher was made for: its pipelines are built there, and
            /// another runtime is refused.
            runtime: #rt::RuntimeId,
            /// Whether the pipelines check bounds (not when built by an `unsafe` constructor).
            bounds_checks: bool,
            /// The instance's pipelines, each built when a dispatch first needs it (and shared
            /// by clones): the general body, then each specialization.
            pipelines: ::std::sync::Arc<[::std::sync::OnceLock<#rt::Pipeline>]>,
            #phantom
        }

        #[doc = #args_doc]
        pub struct #args_ty #args_declare {
            #(#[doc = #field_docs] pub #names: #field_tys,)*
            #marker
        }

        #element_items

        #constants

        impl #implement #launcher #apply {
            /// Every generated variant: each instance of the constants, general or specialized.
            pub const VARIANTS: &'static [#rt::VariantInfo] = &[#(#variant_infos),*];
            /// The kinds of the bindings of group 0, in binding order.
            pub const BINDINGS: &'static [#rt::BindingKind] = &[#(#rt::BindingKind::#kinds),*];
            const ENTRY_POINTS: [&'static [&'static str]; #instance_count] = [#(#entry_points),*];
            const WORKGROUP_SIZES: [[u32; 3]; #instance_count] = [#(#sizes),*];
            const WORKGROUP_MEMORY: [u32; #instance_count] = [#(#memories),*];
            const SOURCES: [&'static str; #instance_count] = [#(#sources),*];

            /// The launcher of `instance`, after checking the device; its pipelines, without
            /// bounds checks only when called by the `unsafe` constructors, are built at first
            /// use.
            fn build(rt: &#rt::Runtime, instance: usize, bounds_checks: bool) -> #rt::Result<Self> {
                // Only an element type implemented outside tessera can point past the list.
                if instance >= #instance_count {
                    return Err(#rt::Error::UnknownInstance {
                        kernel: #rust_name.into(),
                        requested: format!("instance {instance}"),
                        available: (0..#instance_count).map(|i| format!("instance {i}")).collect(),
                    });
                }
                Self::check_device(rt, instance)?;
                let pipelines = Self::ENTRY_POINTS[instance]
                    .iter()
                    .map(|_| ::std::sync::OnceLock::new())
                    .collect();
                Ok(Self { instance, runtime: rt.id(), bounds_checks, pipelines, #phantom_value })
            }

            /// The pipeline of `variant` (an index `variant` returns), built on `rt` (or
            /// fetched from its cache) the first time it is asked for; `rt` must be the
            /// runtime the launcher was made for.
            fn pipeline(&self, rt: &#rt::Runtime, variant: usize) -> #rt::Result<&#rt::Pipeline> {
                if rt.id() != self.runtime {
                    return Err(#rt::Error::ForeignPipeline { kernel: #rust_name.into() });
                }
                let (Some(cell), Some(entry)) = (
                    self.pipelines.get(variant),
                    Self::ENTRY_POINTS[self.instance].get(variant),
                ) else {
                    return Err(#rt::Error::UnknownInstance {
                        kernel: #rust_name.into(),
                        requested: format!("variant {variant}"),
                        available: (0..self.pipelines.len()).map(|v| format!("variant {v}")).collect(),
                    });
                };
                if let Some(pipeline) = cell.get() {
                    return Ok(pipeline);
                }
                let desc = #rt::PipelineDesc::new(Self::SOURCES[self.instance], entry, Self::BINDINGS);
                // SAFETY: `bounds_checks` is false only in the `unsafe` constructors, whose
                // callers promise what `without_bounds_checks` asks.
                let desc = if self.bounds_checks { desc } else { unsafe { desc.without_bounds_checks() } };
                let built = rt.pipeline(&desc)?;
                Ok(cell.get_or_init(|| built))
            }

            /// Builds every pipeline of this instance now (or fetches it from the runtime's
            /// cache) instead of at its first dispatch: where a program would rather pay the
            /// driver's compilation, and see its errors, before its first step than during it.
            pub fn prepare(&self, rt: &#rt::Runtime) -> #rt::Result<()> {
                for variant in 0..self.pipelines.len() {
                    self.pipeline(rt, variant)?;
                }
                Ok(())
            }

            /// Checks that the device has the limits and features this instance needs.
            fn check_device(rt: &#rt::Runtime, instance: usize) -> #rt::Result<()> {
                let [x, y, z] = Self::WORKGROUP_SIZES[instance];
                let memory = Self::WORKGROUP_MEMORY[instance];
                let _ = (x, y, z, memory);
                #device_checks
                Ok(())
            }

            /// Invocations per workgroup in x, y, z.
            pub fn workgroup_size(&self) -> [u32; 3] {
                Self::WORKGROUP_SIZES[self.instance]
            }

            /// Bytes of workgroup memory.
            pub fn workgroup_memory(&self) -> u32 {
                Self::WORKGROUP_MEMORY[self.instance]
            }

            /// The entry point of the general body of this instance.
            pub fn entry_point(&self) -> &'static str {
                Self::ENTRY_POINTS[self.instance][0]
            }

            /// The logical workgroup counts in x, y, z for `args`, from the kernel's grid.
            pub fn grid(&self, args: &#args_ty #args_apply) -> [u64; 3] {
                let _ = &args;
                match self.instance {
                    #(#grid_arms)*
                    _ => [0, 0, 0],
                }
            }

            /// Checks every buffer with a declared length against what `args` imply.
            pub fn check_lengths(&self, args: &#args_ty #args_apply) -> #rt::Result<()> {
                let _ = &args;
                match self.instance {
                    #(#length_arms)*
                    _ => {}
                }
                Ok(())
            }

            /// Which pipeline `args` run: 0 for the general body, `i + 1` for the first
            /// specialization `i` whose condition holds.
            pub fn variant(&self, args: &#args_ty #args_apply) -> usize {
                let _ = &args;
                #variant_choice
            }

            /// Checks the buffers and queues the dispatch on the runtime, which submits it with
            /// the dispatches queued around it when something needs its results: reading a
            /// buffer, submitting a batch, `wait`, `flush` (see `Runtime::flush`).
            pub fn launch(&self, rt: &#rt::Runtime, args: #args_ty #args_apply) -> #rt::Result<()> {
                let mut batch = rt.batch();
                self.record(&mut batch, args)?;
                batch.enqueue()
            }

            /// Checks the buffers (made by `batch`'s runtime, lengths, and sizes against the
            /// device's limit for one binding) and records the dispatch into `batch`.
            pub fn record(&self, batch: &mut #rt::Batch<'_>, args: #args_ty #args_apply) -> #rt::Result<()> {
                #(#owner_checks)*
                self.check_lengths(&args)?;
                let limits = &batch.runtime().info().limits;
                let _ = limits;
                #(#size_checks)*
                let logical = self.grid(&args);
                let variant = self.variant(&args);
                #dispatch
            }
        }

        impl #implement #rt::Prepare for #launcher #apply {
            fn prepare(&self, rt: &#rt::Runtime) -> #rt::Result<()> {
                Self::prepare(self, rt)
            }
        }
    }
}

/// Bytes of the kernel's workgroup arrays; `u32::MAX` past it (`check/` reported that).
fn shared_bytes(kernel: &Variant) -> u32 {
    let total = kernel
        .shared
        .iter()
        .try_fold(0u64, |total, s| total.checked_add(s.ty.byte_size()?));
    total
        .and_then(|t| u32::try_from(t).ok())
        .unwrap_or(u32::MAX)
}

fn length_checks<'a>(
    kernel: &'a Variant,
    uniform: Option<(&'a Ident, &'a crate::ir::ParamsStruct)>,
    rust_name: &'a str,
    valid: bool,
) -> impl Iterator<Item = TokenStream> + 'a {
    let rt = rt();
    kernel.bindings.iter().filter(move |_| valid).filter_map(move |binding| {
        let needed = host::tokens(binding.len.as_ref()?, uniform);
        let name = &binding.name;
        let name_text = name.to_string();
        Some(quote! {
            let needed: u64 = #needed;
            let given = args.#name.len() as u64;
            if given < needed {
                return Err(#rt::Error::BufferTooShort { kernel: #rust_name.into(), binding: #name_text.into(), needed, given });
            }
        })
    })
}

/// `if cond0 { 1 } else if cond1 { 2 } else { 0 }` over the specializations.
fn variant_choice(kernel: &Kernel, uniform: Option<&Ident>) -> TokenStream {
    let Some(uniform) = uniform else {
        return quote!(0);
    };
    let branches = kernel.specializations.iter().enumerate().map(|(i, spec)| {
        let index = i + 1;
        let tests = spec
            .conditions
            .iter()
            .map(|(field, value, _)| quote!((args.#uniform.#field as i64) == #value));
        quote!(if #(#tests)&&* { return #index; })
    });
    quote! { #(#branches)* 0 }
}

/// Device limits and features this kernel's instance needs, checked when it is built.
fn device_checks(instances: &[Instance], rust_name: &str) -> TokenStream {
    let rt = rt();
    let limit = |name: &str, needed: TokenStream, available: TokenStream| {
        quote! {
            if u64::from(#needed) > u64::from(#available) {
                return Err(#rt::Error::LimitExceeded { kernel: #rust_name.into(), limit: #name, needed: u64::from(#needed), available: u64::from(#available) });
            }
        }
    };
    let limits = [
        limit(
            "max_compute_invocations_per_workgroup",
            quote!(u64::from(x)
                .saturating_mul(u64::from(y))
                .saturating_mul(u64::from(z))),
            quote!(limits.max_compute_invocations_per_workgroup),
        ),
        limit(
            "max_compute_workgroup_size_x",
            quote!(x),
            quote!(limits.max_compute_workgroup_size_x),
        ),
        limit(
            "max_compute_workgroup_size_y",
            quote!(y),
            quote!(limits.max_compute_workgroup_size_y),
        ),
        limit(
            "max_compute_workgroup_size_z",
            quote!(z),
            quote!(limits.max_compute_workgroup_size_z),
        ),
        limit(
            "max_compute_workgroup_storage_size",
            quote!(memory),
            quote!(limits.max_compute_workgroup_storage_size),
        ),
    ];
    // Features are per instance: an `f16` instance of an element-type parameter needs one.
    let features = instances.iter().enumerate().map(|(index, instance)| {
        let features = &instance.general().requirements.features;
        let checks = features.iter().map(|(feature, _)| {
            let (flag, name) = match feature {
                Feature::F16 => (quote!(SHADER_F16), "SHADER_F16"),
                Feature::Subgroups => (quote!(SUBGROUP), "SUBGROUP"),
                Feature::CooperativeMatrix => (
                    quote!(EXPERIMENTAL_COOPERATIVE_MATRIX),
                    "EXPERIMENTAL_COOPERATIVE_MATRIX",
                ),
            };
            quote! {
                if !rt.info().features.contains(#rt::wgpu::Features::#flag) {
                    return Err(#rt::Error::MissingFeature { kernel: #rust_name.into(), feature: #name.into() });
                }
            }
        });
        // The tensor cores of a device run some sizes and element types only.
        let shapes = instance.general().multiply_adds().into_iter().map(|(size, ab, c)| {
            let scalar = |s: Scalar| match s {
                Scalar::F16 => quote!(#rt::wgpu::CooperativeScalarType::F16),
                _ => quote!(#rt::wgpu::CooperativeScalarType::F32),
            };
            let (size, inputs, accumulator) = (u32::from(size), scalar(ab), scalar(c));
            let name = format!(
                "cooperative matrices of {size}x{size}x{size} {} -> {}",
                ab.rust_name(),
                c.rust_name()
            );
            quote! {
                if !rt.info().has_cooperative_matrix(#size, #inputs, #accumulator) {
                    return Err(#rt::Error::MissingFeature { kernel: #rust_name.into(), feature: #name.into() });
                }
            }
        });
        quote!(#index => { #(#checks)* #(#shapes)* })
    });
    quote! {
        let limits = &rt.info().limits;
        #(#limits)*
        match instance {
            #(#features)*
            _ => {}
        }
    }
}

/// `new`, and for a kernel with constants its `…Constants` struct, `INSTANCES`,
/// `with_constants` and `constants`.
fn constants_items(
    module: &Module,
    kernel: &Kernel,
    launcher: &Ident,
    rust_name: &str,
    generics: &Generics,
) -> TokenStream {
    let rt = rt();
    let Generics {
        implement, apply, ..
    } = generics;
    // Instances are numbered element type first: `T::INDEX * per_type + constants`.
    let per_type = kernel.instances.len()
        / kernel
            .type_param
            .as_ref()
            .map_or(1, |p| p.types.len().max(1));
    let first = match &generics.param {
        Some(param) => {
            let element_trait = element_trait(launcher);
            quote!(<#param as #element_trait>::INDEX * #per_type)
        }
        None => quote!(0),
    };
    let new_doc = if generics.param.is_some() {
        "The first instance for this element type, after checking that the device has the \
         features and limits it needs; each pipeline is built (or fetched from the runtime's \
         cache) at its first dispatch, or by `prepare`."
    } else {
        "The first instance, after checking that the device has the features and limits it \
         needs; each pipeline is built (or fetched from the runtime's cache) at its first \
         dispatch, or by `prepare`."
    };
    let new = quote! {
        impl #implement #launcher #apply {
            #[doc = #new_doc]
            pub fn new(rt: &#rt::Runtime) -> #rt::Result<Self> {
                Self::build(rt, #first, true)
            }

            /// [`Self::new`], compiled without the bounds checks naga adds to every index.
            ///
            /// # Safety
            ///
            /// The caller promises that every index the kernel makes, into each buffer and
            /// array, is within bounds for every dispatch it will record: for example because
            /// the kernel compares each index with lengths its `#[len]` attributes check. An
            /// index out of bounds then reads or writes memory the kernel does not own.
            pub unsafe fn new_unchecked(rt: &#rt::Runtime) -> #rt::Result<Self> {
                Self::build(rt, #first, false)
            }
        }
    };
    let Some(set) = kernel.constant_set.map(|i| &module.constant_sets[i]) else {
        return new;
    };
    let constants_ty = &set.name;
    let fields: Vec<Ident> = set.identity.iter().map(super::constants::member).collect();
    // The instance's constants (`% 1` would trip clippy's `modulo_one` in the user's crate).
    let own_constants = match per_type {
        1 => quote!(Self::INSTANCES[0]),
        _ => quote!(Self::INSTANCES[self.instance % #per_type]),
    };
    let values = kernel.instances.iter().take(per_type).map(|instance| {
        let values = instance.constants.iter().map(|(_, value)| quote!(#value));
        quote!(#constants_ty { #(#fields: #values),* })
    });
    quote! {
        #new

        impl #implement #launcher #apply {
            /// The instances the kernel declares, in order; [`Self::new`] builds the first.
            pub const INSTANCES: &'static [#constants_ty] = &[#(#values),*];

            /// The instance with these constants, as [`Self::new`] makes the first.
            pub fn with_constants(rt: &#rt::Runtime, constants: #constants_ty) -> #rt::Result<Self> {
                Self::build(rt, #first + Self::instance_of(constants)?, true)
            }

            /// [`Self::with_constants`], compiled without the bounds checks naga adds to
            /// every index.
            ///
            /// # Safety
            ///
            /// What [`Self::new_unchecked`] asks.
            pub unsafe fn with_constants_unchecked(rt: &#rt::Runtime, constants: #constants_ty) -> #rt::Result<Self> {
                Self::build(rt, #first + Self::instance_of(constants)?, false)
            }

            fn instance_of(constants: #constants_ty) -> #rt::Result<usize> {
                Self::INSTANCES.iter().position(|c| *c == constants).ok_or_else(|| {
                    #rt::Error::UnknownInstance {
                        kernel: #rust_name.into(),
                        requested: format!("{constants:?}"),
                        available: Self::INSTANCES.iter().map(|c| format!("{c:?}")).collect(),
                    }
                })
            }

            /// The constants of the instance this launcher runs.
            pub fn constants(&self) -> #constants_ty {
                #own_constants
            }
        }
    }
}

/// `ScaleElement`: the trait of the element types a generic kernel is instantiated for.
fn element_trait(launcher: &Ident) -> Ident {
    Ident::new(&format!("{launcher}Element"), launcher.span())
}

/// The generic parameter of a launcher whose kernel declares `types(T = [..])`, as it appears
/// in each position; all empty (and `<'a>` / `<'_>` for the arguments) for other kernels.
struct Generics {
    param: Option<Ident>,
    /// `<T: ScaleElement = f32>` on the launcher struct.
    declare: TokenStream,
    /// `<T: ScaleElement>` after `impl`.
    implement: TokenStream,
    /// `<T>` after the launcher's name.
    apply: TokenStream,
    /// `<'a, T: ScaleElement = f32>` on the arguments struct.
    args_declare: TokenStream,
    /// `<'_, T>` where the arguments struct is used.
    args_apply: TokenStream,
    /// The launcher's marker field.
    phantom: TokenStream,
    /// The element trait and its implementations.
    items: TokenStream,
}

impl Generics {
    fn of(kernel: &Kernel) -> Self {
        let Some(type_param) = &kernel.type_param else {
            return Generics {
                param: None,
                declare: TokenStream::new(),
                implement: TokenStream::new(),
                apply: TokenStream::new(),
                args_declare: quote!(<'a>),
                args_apply: quote!(<'_>),
                phantom: TokenStream::new(),
                items: TokenStream::new(),
            };
        };
        let launcher = kernel.launcher_name();
        let element_trait = element_trait(&launcher);
        let param = &type_param.name;
        let first = type_param.types.first().copied().map(host_element);
        let listed: Vec<String> = type_param.types.iter().map(|t| t.rust_name()).collect();
        let list = listed
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let name = &kernel.name;
        let message = format!("`{{Self}}` is not an element type of the kernel `{name}`");
        let label = format!("`{name}` has no instance for this type");
        let note = format!(
            "`{name}` is instantiated for {list} by its `types({param} = [{}])`",
            listed.join(", ")
        );
        let doc = format!(
            " The element types the kernel `{name}` is instantiated for ({list}): the `{param}` \
             of [`{launcher}`]. Implemented by tessera for exactly those types."
        );
        // The associated types buffers are declared over where they differ between types.
        let mut associated = Vec::new();
        for binding in &kernel.instances[0].general().bindings {
            if let HostElement::Associated(ty) = binding.host {
                if !associated.contains(&ty) {
                    associated.push(ty);
                }
            }
        }
        let names: Vec<Ident> = associated
            .iter()
            .map(|ty| Ident::new(&ty.name(), Span::call_site()))
            .collect();
        let declared = names.iter().map(|name| {
            let doc = format!(" The host type of `{param}::{name}` for this type.");
            quote! {
                #[doc = #doc]
                type #name: ::tessera::__private::bytemuck::Pod + ::core::fmt::Debug;
            }
        });
        let impls = type_param.types.iter().enumerate().map(|(index, element)| {
            let ty = host_element(*element);
            let defined = associated.iter().zip(&names).map(|(associated, name)| {
                let host = host_element(associated.of(*element));
                quote!(type #name = #host;)
            });
            quote! {
                impl #element_trait for #ty {
                    const INDEX: usize = #index;
                    #(#defined)*
                }
            }
        });
        Generics {
            param: Some(param.clone()),
            declare: quote!(<#param: #element_trait = #first>),
            implement: quote!(<#param: #element_trait>),
            apply: quote!(<#param>),
            args_declare: quote!(<'a, #param: #element_trait = #first>),
            args_apply: quote!(<'_, #param>),
            phantom: quote!(_element: ::core::marker::PhantomData<fn() -> #param>,),
            items: quote! {
                #[doc = #doc]
                #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
                pub trait #element_trait:
                    ::tessera::__private::bytemuck::Pod + ::core::fmt::Debug
                {
                    /// The type's place in the kernel's `types(..)` list.
                    #[doc(hidden)]
                    const INDEX: usize;
                    #(#declared)*
                }
                #(#impls)*
            },
        }
    }
}

fn variant_info(
    module: &Module,
    kernel: &Kernel,
    instance: &Instance,
    variant: &Variant,
) -> TokenStream {
    let rt = rt();
    let entry = &variant.entry_point;
    let constants = constants_text(instance);
    let specialization = variant
        .specialization
        .map(|i| kernel.specializations[i].describe())
        .unwrap_or_default();
    let [x, y, z] = variant.workgroup_size;
    let memory = shared_bytes(variant);
    let bindings = bindings_summary(module, variant);
    quote! {
        #rt::VariantInfo {
            entry_point: #entry,
            constants: #constants,
            specialization: #specialization,
            workgroup_size: [#x, #y, #z],
            workgroup_memory: #memory,
            bindings: #bindings,
        }
    }
}

/// `REG = 8, BLOCK = 128`: the instance's constants as the user writes them.
fn constants_text(instance: &Instance) -> String {
    instance
        .constants
        .iter()
        .map(|(n, v)| format!("{n} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn bindings_summary(module: &Module, kernel: &Variant) -> String {
    kernel
        .bindings
        .iter()
        .map(|b| match &b.kind {
            BindingKind::Storage { element, writable } => {
                format!(
                    "{}: {} [{}]",
                    b.name,
                    if *writable { "read_write" } else { "read" },
                    element.rust_name()
                )
            }
            BindingKind::Uniform { params } => {
                format!("{}: uniform {}", b.name, module.params[*params].name)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn launcher_doc(module: &Module, kernel: &Kernel, field_docs: &[String]) -> String {
    let own = kernel
        .docs
        .iter()
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let rows: Vec<String> = kernel
        .instances
        .iter()
        .flat_map(|instance| instance.variants.iter().map(move |v| (instance, v)))
        .map(|(instance, variant)| {
            let spec = variant
                .specialization
                .map(|i| format!("`{}`", kernel.specializations[i].describe()))
                .unwrap_or_else(|| "general".into());
            let [x, y, z] = variant.workgroup_size;
            format!(
                "| `{}` | {} | {spec} | {x} x {y} x {z} | {} B |",
                variant.entry_point,
                constants_text(instance),
                shared_bytes(variant)
            )
        })
        .collect();
    format!(
        "{own}{sep}Launcher of the kernel `{name}` (module `{module}`). Make it once with `new` (each \
         variant's pipeline is built at its first dispatch, or all of them by `prepare`), then \
         `launch` it or `record` it into a batch.\n\n# Bindings\n\n{bindings}\n\n# Variants\n\n\
         | entry point | constants | specialization | workgroup | workgroup memory |\n| --- | --- | --- | --- | --- |\n{rows}",
        sep = if own.is_empty() { "" } else { "\n\n" },
        name = kernel.name,
        module = module.name,
        bindings = if field_docs.is_empty() { "none".to_owned() } else { field_docs.join("\n") },
        rows = rows.join("\n"),
    )
}
