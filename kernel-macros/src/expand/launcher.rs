//! One launcher per kernel: `Name` (built once from a `Runtime`, holding its pipeline) and
//! `NameArgs<'a>` (one field per binding: `&GpuBuffer<T>` for read-only storage,
//! `&mut GpuBuffer<T>` for read-write storage, `&P` for the parameters).

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::expand::host;
use crate::ir::{Binding, BindingKind, Kernel, Module, Scalar, Ty};

fn element_tokens(element: &Ty) -> TokenStream {
    match element.scalar() {
        Some(Scalar::F32) => quote!(f32),
        Some(Scalar::I32) => quote!(i32),
        _ => quote!(u32),
    }
}

fn field_ty(module: &Module, binding: &Binding) -> TokenStream {
    let span = binding.span.first;
    match &binding.kind {
        BindingKind::Storage {
            element,
            writable: false,
        } => {
            let element = element_tokens(element);
            quote_spanned!(span=> &'a ::tessera::__private::kernel_runtime::GpuBuffer<#element>)
        }
        BindingKind::Storage {
            element,
            writable: true,
        } => {
            let element = element_tokens(element);
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

fn arg_tokens(binding: &Binding) -> TokenStream {
    let name = &binding.name;
    match binding.kind {
        BindingKind::Storage {
            writable: false, ..
        } => quote!(::tessera::__private::kernel_runtime::Arg::read(#name)),
        BindingKind::Storage { writable: true, .. } => {
            quote!(::tessera::__private::kernel_runtime::Arg::read_write(#name))
        }
        BindingKind::Uniform { .. } => {
            quote!(::tessera::__private::kernel_runtime::Arg::uniform(#name))
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

/// The launcher and argument types of `kernel`.
pub fn launcher(module: &Module, kernel: &Kernel, entry: &str, valid: bool) -> TokenStream {
    let rust_name = kernel.name.to_string();
    let launcher = kernel.launcher_name();
    let args_ty = kernel.args_name();
    let [wx, wy, wz] = kernel.workgroup_size;
    let shared_bytes: u32 = kernel.shared.iter().map(|s| s.ty.size_align().0).sum();
    let uniform = kernel.bindings.iter().find_map(|b| match b.kind {
        BindingKind::Uniform { params } => Some((&b.name, &module.params[params])),
        _ => None,
    });

    let names: Vec<&Ident> = kernel.bindings.iter().map(|b| &b.name).collect();
    let field_tys: Vec<TokenStream> = kernel
        .bindings
        .iter()
        .map(|b| field_ty(module, b))
        .collect();
    let field_docs: Vec<String> = kernel
        .bindings
        .iter()
        .enumerate()
        .map(|(i, b)| binding_doc(module, i, b))
        .collect();
    let kinds: Vec<TokenStream> = kernel.bindings.iter().map(binding_kind_tokens).collect();
    let dispatch_args: Vec<TokenStream> = kernel.bindings.iter().map(arg_tokens).collect();
    let marker = names.is_empty().then(|| {
        quote! {
            #[doc(hidden)]
            pub _lifetime: ::core::marker::PhantomData<&'a ()>,
        }
    });
    let rest = names.is_empty().then(|| quote!(..));

    let grid: Vec<TokenStream> = (0..3)
        .map(|axis| match kernel.grid.get(axis).filter(|_| valid) {
            Some(expr) => {
                let value = host::tokens(expr, uniform);
                quote! { u32::try_from(#value).unwrap_or(u32::MAX) }
            }
            None => quote!(1u32),
        })
        .collect();
    let length_checks = kernel
        .bindings
        .iter()
        .filter(|_| valid)
        .filter_map(|binding| {
            let len = binding.len.as_ref()?;
            let needed = host::tokens(len, uniform);
            let name = &binding.name;
            let name_text = name.to_string();
            Some(quote! {
                let needed: u64 = #needed;
                let given = args.#name.len() as u64;
                if given < needed {
                    return Err(::tessera::__private::kernel_runtime::Error::BufferTooShort {
                        kernel: #rust_name.into(),
                        binding: #name_text.into(),
                        needed,
                        given,
                    });
                }
            })
        });

    let own_docs = kernel
        .docs
        .iter()
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let doc = format!(
        "{own_docs}{sep}Launcher of the kernel `{rust_name}` (module `{module}`): workgroup size {wx} x {wy} x {wz}, \
         {shared_bytes} bytes of workgroup memory.\n\n# Bindings\n\n{bindings}\n\nBuild it once with \
         [`{launcher}::new`], then [`launch`]({launcher}::launch) it or [`record`]({launcher}::record) \
         it into a batch.",
        sep = if own_docs.is_empty() { "" } else { "\n\n" },
        module = module.name,
        bindings = if field_docs.is_empty() { "none".to_owned() } else { field_docs.join("\n") },
    );
    let args_doc = format!("The arguments of [`{launcher}`], one per parameter of `{rust_name}`.");
    let span = Span::call_site();
    quote_spanned! {span=>
        #[doc = #doc]
        #[derive(Clone, Debug)]
        pub struct #launcher {
            pipeline: ::tessera::__private::kernel_runtime::Pipeline,
        }

        #[doc = #args_doc]
        pub struct #args_ty<'a> {
            #(#[doc = #field_docs] pub #names: #field_tys,)*
            #marker
        }

        impl #launcher {
            /// The entry point's name in [`WGSL`].
            pub const ENTRY_POINT: &'static str = #entry;
            /// Invocations per workgroup in x, y, z.
            pub const WORKGROUP_SIZE: [u32; 3] = [#wx, #wy, #wz];
            /// Bytes of workgroup memory the kernel declares.
            pub const WORKGROUP_MEMORY: u32 = #shared_bytes;
            /// The kinds of the bindings of group 0, in binding order.
            pub const BINDINGS: &'static [::tessera::__private::kernel_runtime::BindingKind] =
                &[#(::tessera::__private::kernel_runtime::BindingKind::#kinds),*];

            /// Builds (or fetches from the runtime's cache) the kernel's pipeline.
            pub fn new(rt: &::tessera::__private::kernel_runtime::Runtime) -> ::tessera::__private::kernel_runtime::Result<Self> {
                let desc = ::tessera::__private::kernel_runtime::PipelineDesc::new(WGSL, Self::ENTRY_POINT, Self::BINDINGS);
                Ok(Self { pipeline: rt.pipeline(&desc)? })
            }

            /// The workgroup counts in x, y, z for `args`, from the kernel's grid expression.
            pub fn grid(args: &#args_ty<'_>) -> [u32; 3] {
                let _ = &args;
                [#(#grid),*]
            }

            /// Checks every buffer with a declared length against what `args` imply.
            pub fn check_lengths(args: &#args_ty<'_>) -> ::tessera::__private::kernel_runtime::Result<()> {
                let _ = &args;
                #(#length_checks)*
                Ok(())
            }

            /// Checks the buffers and dispatches the kernel now (without waiting for it).
            pub fn launch(
                &self,
                rt: &::tessera::__private::kernel_runtime::Runtime,
                args: #args_ty<'_>,
            ) -> ::tessera::__private::kernel_runtime::Result<()> {
                let mut batch = rt.batch();
                self.record(&mut batch, args)?;
                batch.submit()
            }

            /// Checks the buffers and records the dispatch into `batch`.
            pub fn record(
                &self,
                batch: &mut ::tessera::__private::kernel_runtime::Batch<'_>,
                args: #args_ty<'_>,
            ) -> ::tessera::__private::kernel_runtime::Result<()> {
                Self::check_lengths(&args)?;
                let grid = Self::grid(&args);
                let #args_ty { #(#names,)* #rest } = args;
                batch.dispatch(&self.pipeline, &[#(#dispatch_args),*], grid)
            }
        }
    }
}
