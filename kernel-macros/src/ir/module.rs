//! The tree above the bodies: the module, its sets of constants, `Params` structs, helpers
//! (generic ones and their copies' names) and kernels, each kernel's instances and variants, the
//! bindings and workgroup arrays a variant declares, and the expressions the launcher
//! evaluates on the host.

use proc_macro2::Ident;

use super::builtins;
use super::{visit_exprs, Block, Element, ExprKind, LocalId, Scalar, Span, Ty};

/// Compile-time constants that make instances of kernels: `constants(...)` of one kernel, or a
/// `#[constants(...)] struct Name;` of the module that several kernels name. An instance is
/// identified by the constants given as lists; derived constants are computed from them.
pub struct ConstantSet {
    /// The host type that names an instance: the set's own name, or `<Kernel>Constants`.
    pub name: Ident,
    pub docs: Vec<String>,
    pub home: SetHome,
    /// The constants that identify an instance, in declaration order.
    pub identity: Vec<Ident>,
    /// The derived constants, each computed from the identity and earlier derived constants.
    pub derived: Vec<(Ident, HostExpr)>,
    /// The identity values of each instance.
    pub instances: Vec<Vec<u32>>,
}

impl ConstantSet {
    /// Whether kernels name the set (`constants = Name`): declared as an item, of the module
    /// or of a library it imports.
    pub fn named(&self) -> bool {
        !matches!(self.home, SetHome::Kernel)
    }
}

/// Where a set of constants is declared, which says where its host type is emitted.
#[derive(Clone, Copy, PartialEq)]
pub enum SetHome {
    /// `constants(..)` of one kernel: emitted beside its launcher, as `<Kernel>Constants`.
    Kernel,
    /// `#[constants(..)] struct Name;` of the module: emitted once, for every kernel naming it.
    Module,
    /// `#[constants(..)] pub struct Name;` of an imported library: emitted by the library (one
    /// Rust type for every importing module), which the module `use`s.
    Library,
}

/// One `#[tessera::kernels]` module: its parameter structs, helpers and kernels.
pub struct Module {
    pub name: Ident,
    pub params: Vec<ParamsStruct>,
    pub constant_sets: Vec<ConstantSet>,
    /// The helpers no kernel calls, checked with the module's constants alone.
    pub helpers: Vec<Function>,
    /// The generic helpers those call.
    pub generic_helpers: Vec<GenericHelper>,
    pub kernels: Vec<Kernel>,
    pub families: Vec<Family>,
}

impl Module {
    /// Every variant of every kernel with its instance and kernel, in order.
    pub fn entries(&self) -> impl Iterator<Item = Entry<'_>> {
        self.kernels.iter().flat_map(|kernel| {
            kernel.instances.iter().flat_map(move |instance| {
                instance.variants.iter().map(move |variant| Entry {
                    kernel,
                    instance,
                    variant,
                })
            })
        })
    }

    /// Every feature some kernel of the module declares.
    pub fn features(&self) -> Vec<Feature> {
        let mut features: Vec<Feature> = Vec::new();
        let variants = self.kernels.iter().flat_map(Kernel::variants);
        for (feature, _) in variants.flat_map(|v| &v.requirements.features) {
            if !features.contains(feature) {
                features.push(*feature);
            }
        }
        features
    }
}

/// `#[family(first, second, ..)] struct Name { bindings }`: kernels launched in this order by
/// one generated method, over bindings declared once. Each member takes the bindings it uses,
/// by name; their kinds and lengths are the family's.
pub struct Family {
    pub name: Ident,
    pub docs: Vec<String>,
    pub members: Vec<Ident>,
    pub bindings: Vec<FamilyBinding>,
}

impl Family {
    pub fn binding(&self, name: &Ident) -> Option<&FamilyBinding> {
        self.bindings.iter().find(|b| b.binding.name == *name)
    }

    /// The binding names for messages: "`p`, `x`, `y`".
    pub fn binding_list(&self) -> String {
        self.bindings
            .iter()
            .map(|b| format!("`{}`", b.binding.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A binding of a family.
pub struct FamilyBinding {
    pub binding: Binding,
    /// Declared `Option<&[T]>` / `Option<&mut [T]>`: the caller may leave it out, and the
    /// members that use it are then not launched.
    pub optional: bool,
    pub docs: Vec<String>,
}

/// A device capability a kernel may declare and use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Feature {
    F16,
    Subgroups,
    /// Matrix fragments and their multiply-add on the tensor cores.
    CooperativeMatrix,
}

impl Feature {
    /// The name `features(...)` takes.
    pub fn name(self) -> &'static str {
        match self {
            Feature::F16 => "f16",
            Feature::Subgroups => "subgroups",
            Feature::CooperativeMatrix => "cooperative_matrix",
        }
    }
}

/// `specialize(p.stride == 1 && p.kernel == 3)`: a body generated with those values folded in.
#[derive(Clone)]
pub struct Specialization {
    /// Uniform fields and the values they must have.
    pub conditions: Vec<(Ident, i64, Span)>,
}

impl Specialization {
    /// The condition as the user wrote it, for names and reports: `stride == 1`.
    pub fn describe(&self) -> String {
        self.conditions
            .iter()
            .map(|(f, v, _)| format!("{f} == {v}"))
            .collect::<Vec<_>>()
            .join(" && ")
    }
}

/// What a kernel declares it needs beyond WebGPU's defaults.
#[derive(Clone, Default)]
pub struct Requirements {
    /// `limits(invocations = N)`: invocations per workgroup above 256.
    pub invocations: Option<(u32, Span)>,
    /// `limits(workgroup_memory = N)`: bytes of workgroup memory above 16 KiB.
    pub workgroup_memory: Option<(u32, Span)>,
    pub features: Vec<(Feature, Span)>,
}

impl Requirements {
    pub fn has(&self, feature: Feature) -> bool {
        self.features.iter().any(|(f, _)| *f == feature)
    }

    /// The features declared, each once, in order.
    pub fn feature_set(&self) -> Vec<Feature> {
        let mut set: Vec<Feature> = self.features.iter().map(|(f, _)| *f).collect();
        set.sort();
        set.dedup();
        set
    }
}

/// A `#[derive(Params)]` struct: the uniform parameters of kernels.
pub struct ParamsStruct {
    pub name: Ident,
    pub fields: Vec<ParamsField>,
    /// Fields left out because their type was refused (already reported): their uses are
    /// not reported again.
    pub refused: Vec<Ident>,
    /// Whether the struct carries `#[repr(C)]`.
    pub repr_c: bool,
}

impl ParamsStruct {
    /// Whether `field` was declared with a type that was refused.
    pub fn refused(&self, field: &Ident) -> bool {
        self.refused.contains(field)
    }

    /// The field names for messages: "`a`, `b`, `n`".
    pub fn field_list(&self) -> String {
        self.fields
            .iter()
            .map(|f| format!("`{}`", f.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub struct ParamsField {
    pub name: Ident,
    pub ty: Ty,
    pub span: Span,
}

/// A helper function callable from kernels: a device function. One is parsed per kernel
/// instance that calls it, with that instance's constants, so `[f32; REG]` in its signature is
/// the caller's `REG`.
#[derive(Clone)]
pub struct Function {
    pub name: Ident,
    pub params: Vec<FnParam>,
    pub ret: Option<Ty>,
    pub body: Block,
    /// Every local's name, indexed by [`LocalId`] (filled by `check/`).
    pub locals: Vec<Ident>,
    /// What makes two copies of this helper the same WGSL function: its tokens with the
    /// instance's constants in place, and the specialization folded into it (if any).
    pub fingerprint: String,
}

impl Function {
    /// Parameters that stand for memory of the caller (arrays, buffers, parameters).
    pub fn reference_params(&self) -> impl Iterator<Item = &FnParam> {
        self.params.iter().filter(|p| p.kind != ParamKind::Value)
    }
}

#[derive(Clone)]
pub struct FnParam {
    pub name: Ident,
    /// The value type; for a reference, the array's or the buffer element's type.
    pub ty: Ty,
    pub kind: ParamKind,
    /// `mut name: T` (values) or `&mut` (references).
    pub mutable: bool,
    pub span: Span,
    /// Assigned by `check/`.
    pub local: LocalId,
}

/// How a helper receives a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `x: T`: a copy of a value.
    Value,
    /// `tile: &[T; N]` / `&mut [T; N]`: the caller's workgroup array or local array.
    Array,
    /// `x: &[T]` / `&mut [T]`: the caller's storage buffer.
    Storage,
    /// `p: &P`: the caller's uniform parameters (index into `Module::params`).
    Uniform(usize),
}

/// A `#[kernel]` function: what its instances share, and the instances. The IR is a tree:
/// kernel -> instance (an element type and values of the constants) -> variant (the general
/// body or one specialization), and each variant is one WGSL entry point.
#[derive(Clone)]
pub struct Kernel {
    pub name: Ident,
    /// The launcher type's name: the kernel's name in CamelCase (see [`launcher_name`]).
    pub launcher: Ident,
    /// The kernel's own `///` documentation, carried to its launcher.
    pub docs: Vec<String>,
    /// The set its instances come from (index into `Module::constant_sets`).
    pub constant_set: Option<usize>,
    /// `types(T = [f32, f16])`: the kernel's element-type parameter, if it has one.
    pub type_param: Option<TypeParam>,
    pub specializations: Vec<Specialization>,
    /// In launcher order: every instance of the constants for the first element type, then
    /// for the next.
    pub instances: Vec<Instance>,
}

/// One instance of a kernel: its element type and the values of its constants.
#[derive(Clone)]
pub struct Instance {
    /// The element type, for a kernel with a type parameter.
    pub element: Option<Element>,
    /// The values of the constants that identify the instance, for names and reports.
    pub constants: Vec<(Ident, u32)>,
    /// The general body first, then (after `specialize`) one variant per specialization.
    pub variants: Vec<Variant>,
}

impl Instance {
    pub fn general(&self) -> &Variant {
        &self.variants[0]
    }
}

/// One entry point: an instance's general body or one specialization of it, with everything
/// `lower` and the launcher need.
#[derive(Clone)]
pub struct Variant {
    /// The kernel's name (for messages and WGSL names).
    pub name: Ident,
    /// Index into [`Kernel::specializations`], or `None` for the general body.
    pub specialization: Option<usize>,
    /// The WGSL entry point's name (filled by `lower::name_entry_points`).
    pub entry_point: String,
    pub requirements: Requirements,
    /// Invocations per workgroup in x, y, z (missing dimensions are 1).
    pub workgroup_size: [u32; 3],
    pub workgroup_span: Span,
    /// Workgroup counts in x, y, z as expressions of the parameters (missing ones are 1).
    pub grid: Vec<HostExpr>,
    /// Bindings in binding order.
    pub bindings: Vec<Binding>,
    /// `#[workgroup]` arrays.
    pub shared: Vec<SharedVar>,
    /// Parameters whose declaration was rejected: the body may still name them without
    /// follow-on errors.
    pub rejected_params: Vec<Ident>,
    pub body: Block,
    /// Every local's name, indexed by [`LocalId`] (filled by `check/`).
    pub locals: Vec<Ident>,
    /// The helpers this variant calls, directly or not, parsed with its instance's constants
    /// (and, after `specialize`, with its specialization folded in). `check/` adds a copy of
    /// a generic helper for each element type the calls pass it.
    pub helpers: Vec<Function>,
    /// The generic helpers (`fn load<E>(..)`) the variant may call, with its instance's
    /// constants in place: `check/` makes their copies as it types the calls.
    pub generic_helpers: Vec<GenericHelper>,
}

/// A helper generic over element types of its own (`fn load<E>(m: &[E], i: u32) -> E`): each
/// call passes arguments whose types say what `E` is, and calls with another `E` use another
/// copy, as Rust monomorphizes.
#[derive(Clone)]
pub struct GenericHelper {
    /// The helper as written, the calling instance's constants in place (its type parameters,
    /// which may shadow the caller's element type, are left).
    pub item: syn::ItemFn,
}

impl GenericHelper {
    pub fn name(&self) -> &Ident {
        &self.item.sig.ident
    }

    /// The helper's type parameters, in order.
    pub fn type_params(&self) -> impl Iterator<Item = &Ident> {
        self.item.sig.generics.type_params().map(|p| &p.ident)
    }
}

/// What separates a generic helper's name from its element types in the name of one of its
/// copies (`load·vec4_f32`): a character Rust accepts in identifiers that no one types.
const COPY_MARK: char = '\u{b7}';

/// The name of the copy of the generic helper `name` for `elements`.
pub fn generic_copy_name(name: &Ident, elements: &[Element]) -> Ident {
    let parts: Vec<String> = elements.iter().map(|e| e.name_part()).collect();
    Ident::new(
        &format!("{name}{COPY_MARK}{}", parts.join(&COPY_MARK.to_string())),
        name.span(),
    )
}

/// Whether the helper `name` is a copy of a generic helper.
pub fn is_generic_copy(name: &Ident) -> bool {
    name.to_string().contains(COPY_MARK)
}

/// A helper's name as the user wrote it: a generic helper's copy is named for messages by
/// the helper's name alone.
pub fn written_name(name: &impl std::fmt::Display) -> String {
    let name = name.to_string();
    match name.split_once(COPY_MARK) {
        Some((written, _)) => written.to_owned(),
        None => name,
    }
}

/// A helper's name as a base for WGSL names: a generic helper's copy becomes
/// `load_vec4_f32`.
pub fn wgsl_base_name(name: &Ident) -> String {
    name.to_string().replace(COPY_MARK, "_")
}

/// A variant with the instance and kernel it belongs to: what the stages after `specialize`
/// walk, in WGSL order.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub kernel: &'a Kernel,
    pub instance: &'a Instance,
    pub variant: &'a Variant,
}

/// A kernel's element-type parameter: `T` in `types(T = [f32, f16])`. Each type makes its own
/// instances (of every instance of the constants), and the launcher is generic over it.
#[derive(Clone)]
pub struct TypeParam {
    pub name: Ident,
    pub types: Vec<Element>,
    pub span: Span,
}

/// A resource binding: storage buffer or uniform struct.
#[derive(Clone)]
pub struct Binding {
    pub name: Ident,
    pub kind: BindingKind,
    /// `#[len(expr)]`: the elements the buffer must hold.
    pub len: Option<HostExpr>,
    pub span: Span,
    /// How the launcher's argument follows the kernel's type parameter, if at all.
    pub host: HostElement,
}

/// How the host type of a binding's buffer follows the kernel's type parameter `T`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum HostElement {
    /// One type for every instance (`&[f32]`, or `&[T::Scalar]` where the listed types share
    /// their scalar).
    Fixed,
    /// Declared over the parameter itself (`&[T]`, `&[Vec4<T>]`): `GpuBuffer<T>`.
    Param,
    /// Declared as an associated type of it that differs between instances (`&[T::F32]` over
    /// `f32` and `Vec4<f16>`): `GpuBuffer<<T as XElement>::F32>`, the element trait carrying
    /// the type.
    Associated(Associated),
}

/// An associated type of a kernel's type parameter a buffer may be declared over.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Associated {
    /// `T::Scalar`.
    Scalar,
    /// `T::F32`, `T::F16`, `T::U32`, `T::I32`: `T`'s lanes with that scalar.
    WithScalar(Scalar),
}

impl Associated {
    /// The type it is for the element type `element`.
    pub fn of(self, element: Element) -> Element {
        match self {
            Associated::Scalar => Element {
                scalar: element.scalar,
                lanes: 1,
            },
            Associated::WithScalar(scalar) => Element {
                scalar,
                lanes: element.lanes,
            },
        }
    }

    /// The associated type `name` names after `T::`, if any: `Scalar`, `F32`, `F16`, `U32`,
    /// `I32`.
    pub fn named(name: &str) -> Option<Associated> {
        Some(match name {
            "Scalar" => Associated::Scalar,
            "F32" => Associated::WithScalar(Scalar::F32),
            "F16" => Associated::WithScalar(Scalar::F16),
            "U32" => Associated::WithScalar(Scalar::U32),
            "I32" => Associated::WithScalar(Scalar::I32),
            _ => return None,
        })
    }

    /// Its name after `T::`: `Scalar`, `F32`.
    pub fn name(self) -> String {
        match self {
            Associated::Scalar => "Scalar".to_owned(),
            Associated::WithScalar(scalar) => scalar.rust_name().to_uppercase(),
        }
    }
}

#[derive(Clone)]
pub enum BindingKind {
    /// `&[T]` or `&mut [T]`.
    Storage { element: Ty, writable: bool },
    /// `&Params`, a `#[derive(Params)]` struct of this module (index into `Module::params`).
    Uniform { params: usize },
}

/// A `#[workgroup] name: &mut [T; N]` array in workgroup memory.
#[derive(Clone)]
pub struct SharedVar {
    pub name: Ident,
    pub ty: Ty,
    pub span: Span,
    /// False for a helper's `&[T; N]` parameter, which it may only read.
    pub writable: bool,
}

/// An expression evaluated on the host by the launcher: grid sizes and buffer lengths.
#[derive(Clone)]
pub enum HostExpr {
    Lit(u64),
    /// `p.field`: a field of the uniform parameters.
    Field {
        field: Ident,
        span: Span,
    },
    /// A constant of the instance (derived constants' expressions only).
    Const(Ident),
    /// `x.len()`: the length of a storage binding (grid expressions only).
    Len {
        binding: Ident,
        span: Span,
    },
    Binary(HostOp, Box<HostExpr>, Box<HostExpr>),
    /// `ceil_div(a, b)`, `min(a, b)`, `max(a, b)`.
    Call(HostFn, Box<HostExpr>, Box<HostExpr>),
}

impl HostExpr {
    /// Whether two expressions are the same, written anywhere (spans aside).
    pub fn same(&self, other: &HostExpr) -> bool {
        match (self, other) {
            (HostExpr::Lit(a), HostExpr::Lit(b)) => a == b,
            (HostExpr::Field { field: a, .. }, HostExpr::Field { field: b, .. })
            | (HostExpr::Const(a), HostExpr::Const(b))
            | (HostExpr::Len { binding: a, .. }, HostExpr::Len { binding: b, .. }) => a == b,
            (HostExpr::Binary(op, a, b), HostExpr::Binary(other_op, c, d)) => {
                op == other_op && a.same(c) && b.same(d)
            }
            (HostExpr::Call(f, a, b), HostExpr::Call(g, c, d)) => f == g && a.same(c) && b.same(d),
            _ => false,
        }
    }

    /// Whether the expression reads a field of the uniform parameters.
    pub fn reads_params(&self) -> bool {
        match self {
            HostExpr::Field { .. } => true,
            HostExpr::Lit(_) | HostExpr::Const(_) | HostExpr::Len { .. } => false,
            HostExpr::Binary(_, a, b) | HostExpr::Call(_, a, b) => {
                a.reads_params() || b.reads_params()
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostFn {
    CeilDiv,
    Min,
    Max,
}

impl Kernel {
    /// The launcher type's name: `grad_pre` -> `GradPre`.
    pub fn launcher_name(&self) -> Ident {
        self.launcher.clone()
    }

    /// The launcher's argument struct's name: `GradPreArgs`.
    pub fn args_name(&self) -> Ident {
        Ident::new(&format!("{}Args", self.launcher_name()), self.name.span())
    }

    /// The bindings, as the first instance declares them (every instance has the same names
    /// and kinds; only element types may differ).
    pub fn bindings(&self) -> &[Binding] {
        self.instances
            .first()
            .map_or(&[], |instance| &instance.general().bindings)
    }

    /// Every variant of every instance, in order.
    pub fn variants(&self) -> impl Iterator<Item = &Variant> {
        self.instances.iter().flat_map(|i| &i.variants)
    }
}

impl Variant {
    /// The span of the first `f16` value the kernel declares or computes, if any.
    pub fn first_f16(&self) -> Option<Span> {
        fn is_f16(ty: &Ty) -> bool {
            match ty {
                Ty::Array(element, _) => is_f16(element),
                Ty::Fragment(fragment) => fragment.scalar == Scalar::F16,
                other => other.scalar() == Some(Scalar::F16),
            }
        }
        let declared = self.bindings.iter().find_map(|b| match &b.kind {
            BindingKind::Storage { element, .. } if is_f16(element) => Some(b.span),
            _ => None,
        });
        let shared = self.shared.iter().find(|s| is_f16(&s.ty)).map(|s| s.span);
        let mut computed = None;
        visit_exprs(&self.body, &mut |e| {
            if computed.is_none() && is_f16(&e.ty) {
                computed = Some(e.span);
            }
        });
        declared.or(shared).or(computed)
    }

    /// The multiply-adds of fragments the variant and its helpers compute, each once: their
    /// size and the element types of their operands and accumulator. A device lists the
    /// combinations its tensor cores run.
    pub fn multiply_adds(&self) -> Vec<(u8, Scalar, Scalar)> {
        let mut found = Vec::new();
        let bodies = std::iter::once(&self.body).chain(self.helpers.iter().map(|h| &h.body));
        for body in bodies {
            visit_exprs(body, &mut |e| {
                let ExprKind::Builtin(builtin, args) = &e.kind else {
                    return;
                };
                let (Some(Ty::Fragment(a)), Some(Ty::Fragment(c))) =
                    (args.first().map(|a| &a.ty), args.get(2).map(|c| &c.ty))
                else {
                    return;
                };
                let shape = (a.size, a.scalar, c.scalar);
                if builtin.signature == builtins::Signature::MultiplyAdd && !found.contains(&shape)
                {
                    found.push(shape);
                }
            });
        }
        found
    }

    /// Whether the body asks for ids that depend on the grid (`global_id`, `workgroup_id`,
    /// `num_workgroups`); such kernels can have their grid folded past the device's limit.
    pub fn uses_invocation_ids(&self) -> bool {
        let mut uses = false;
        visit_exprs(&self.body, &mut |e| {
            if let ExprKind::Builtin(builtin, _) = &e.kind {
                uses |= builtin.id().is_some_and(|id| id.is_grid_dependent());
            }
        });
        uses
    }
}

/// The launcher type's name for the kernel `name`: `grad_pre` -> `GradPre`, `r#match` ->
/// `Match`. `None` when the CamelCase spelling is not a Rust type name (`_3x3` gives `3x3`,
/// `__` gives nothing, `self_` gives `Self`); the text it gives is then in the error.
pub fn launcher_name(name: &Ident) -> Result<Ident, String> {
    let name = syn::ext::IdentExt::unraw(name).to_string();
    let camel: String = name
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect();
    syn::parse_str::<Ident>(&camel).map_err(|_| camel)
}
