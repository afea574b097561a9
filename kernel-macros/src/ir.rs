//! The kernel IR: what `parse/` produces from syn, what `check/` types and validates, what
//! `lower/` turns into WGSL and what `expand/` turns into launchers. It is the only thing the
//! stages share. Every node that can be the subject of an error carries the [`Span`] of the
//! user's tokens; types of expressions and locals start [`Ty::Unknown`] and are filled in by
//! `check/`.

pub mod builtins;
pub mod eval;

use proc_macro2::Ident;
use quote::ToTokens;

use builtins::{Builtin, Form};

/// Where in the user's code a node came from: the spans of its first and last token, so an
/// error underlines the whole expression (stable Rust cannot join spans).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub first: proc_macro2::Span,
    pub last: proc_macro2::Span,
}

impl Span {
    /// The span of everything in `tokens`.
    pub fn of(tokens: &impl ToTokens) -> Self {
        let mut trees = tokens.to_token_stream().into_iter();
        let first = trees
            .next()
            .map_or_else(proc_macro2::Span::call_site, |t| t.span());
        let last = trees.last().map_or(first, |t| t.span());
        Span { first, last }
    }

    /// The Rust source line the node starts on.
    pub fn line(self) -> usize {
        self.first.start().line
    }
}

impl From<proc_macro2::Span> for Span {
    fn from(span: proc_macro2::Span) -> Self {
        Span {
            first: span,
            last: span,
        }
    }
}

/// A scalar type of the kernel language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    F32,
    /// Half precision: only in kernels that declare `features(f16)`.
    F16,
    U32,
    I32,
    Bool,
}

impl Scalar {
    /// The Rust spelling, used in messages.
    pub fn rust_name(self) -> &'static str {
        match self {
            Scalar::F32 => "f32",
            Scalar::F16 => "f16",
            Scalar::U32 => "u32",
            Scalar::I32 => "i32",
            Scalar::Bool => "bool",
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, Scalar::U32 | Scalar::I32)
    }

    pub fn is_numeric(self) -> bool {
        !matches!(self, Scalar::Bool)
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F16)
    }

    /// Bytes of one value in WGSL's memory layout.
    pub fn size(self) -> u32 {
        match self {
            Scalar::F16 => 2,
            _ => 4,
        }
    }
}

/// A type of a value in a kernel body.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    /// Not yet known: set by `parse/`, replaced by `check/`.
    Unknown,
    Scalar(Scalar),
    /// `vecN<scalar>`, N in 2..=4.
    Vector(u8, Scalar),
    /// A fixed-size array (local register arrays, workgroup memory).
    Array(Box<Ty>, u32),
    /// An atomic integer (elements of atomic storage and workgroup arrays).
    Atomic(Scalar),
    /// An integer literal whose type is decided by inference (`check/` numbers them).
    IntVar(u32),
    /// A float literal whose type is decided by inference.
    FloatVar(u32),
    /// A vector of literals only (`vec3(0, 1, 0)`), of `N` lanes whose type (an `IntVar` or a
    /// `FloatVar`) is decided by inference, as the literals' own would be: beside a
    /// `Vec3<u32>` it is one.
    LiteralVector(u8, Box<Ty>),
    /// The result of a call that returns nothing.
    Unit,
    /// A matrix fragment held by a subgroup (`FragA16<f16>`): the operands and accumulator of
    /// the tensor cores, in kernels that declare `features(cooperative_matrix)`.
    Fragment(Fragment),
}

/// A square matrix fragment: `size` x `size` elements of `scalar`, spread over the invocations
/// of a subgroup, in one of the three roles of a multiply-add `A * B + C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fragment {
    pub role: Role,
    /// Rows and columns: 8 or 16 (the only shapes WGSL can spell).
    pub size: u8,
    pub scalar: Scalar,
}

impl Fragment {
    /// The Rust spelling: `FragA16<f16>`.
    pub fn rust_name(self) -> String {
        format!(
            "Frag{}{}<{}>",
            self.role.letter(),
            self.size,
            self.scalar.rust_name()
        )
    }
}

/// The role of a fragment in `A * B + C`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The left operand, `size` rows by `size` columns of the reduction.
    A,
    /// The right operand.
    B,
    /// The accumulator and result.
    C,
}

impl Role {
    /// The letter of the role, as in `FragA16` and WGSL's `coop_mat16x16<f16, A>`.
    pub fn letter(self) -> char {
        match self {
            Role::A => 'A',
            Role::B => 'B',
            Role::C => 'C',
        }
    }
}

impl Ty {
    pub const F32: Ty = Ty::Scalar(Scalar::F32);
    pub const U32: Ty = Ty::Scalar(Scalar::U32);
    pub const I32: Ty = Ty::Scalar(Scalar::I32);
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);

    /// Whether the type is a fragment or holds fragments (an array of them).
    pub fn holds_fragment(&self) -> bool {
        match self {
            Ty::Fragment(_) => true,
            Ty::Array(element, _) => element.holds_fragment(),
            _ => false,
        }
    }

    pub fn is_vector(&self) -> bool {
        matches!(self, Ty::Vector(..))
    }

    /// The scalar of a scalar, vector or atomic type.
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) | Ty::Vector(_, s) | Ty::Atomic(s) => Some(*s),
            _ => None,
        }
    }

    /// Size and alignment in bytes under WGSL's layout rules (used for workgroup memory and
    /// the uniform layout check).
    pub fn size_align(&self) -> (u32, u32) {
        match self {
            Ty::Scalar(s) => (s.size(), s.size()),
            Ty::Atomic(_) => (4, 4),
            Ty::Vector(2, s) => (2 * s.size(), 2 * s.size()),
            Ty::Vector(3, s) => (3 * s.size(), 4 * s.size()),
            Ty::Vector(_, s) => (4 * s.size(), 4 * s.size()),
            Ty::Array(element, len) => {
                let (size, align) = element.size_align();
                (size.next_multiple_of(align).saturating_mul(*len), align)
            }
            _ => (0, 1),
        }
    }

    /// Bytes of a value in WGSL's layout, computed without saturating: `None` past `u64`.
    /// Array lengths are the user's, so their products can be anything.
    pub fn byte_size(&self) -> Option<u64> {
        match self {
            Ty::Array(element, len) => {
                let (_, align) = element.size_align();
                let stride = element.byte_size()?.next_multiple_of(u64::from(align));
                stride.checked_mul(u64::from(*len))
            }
            other => Some(u64::from(other.size_align().0)),
        }
    }

    /// The Rust spelling, used in messages. A literal whose type is not decided is shown as
    /// the type it defaults to (`i32`, `f32`), never as rustc's `{integer}`, which the user
    /// never wrote.
    pub fn rust_name(&self) -> String {
        match self {
            Ty::Scalar(s) => s.rust_name().to_owned(),
            Ty::Vector(n, s) => format!("Vec{n}<{}>", s.rust_name()),
            Ty::Array(element, len) => format!("[{}; {len}]", element.rust_name()),
            Ty::Atomic(Scalar::I32) => "AtomicI32".to_owned(),
            Ty::Atomic(_) => "AtomicU32".to_owned(),
            Ty::IntVar(_) => "i32".to_owned(),
            Ty::FloatVar(_) => "f32".to_owned(),
            Ty::LiteralVector(n, element) => format!("Vec{n}<{}>", element.rust_name()),
            Ty::Unit => "()".to_owned(),
            Ty::Unknown => "_".to_owned(),
            Ty::Fragment(fragment) => fragment.rust_name(),
        }
    }
}

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

/// A type a kernel's element-type parameter stands for: a scalar, or a vector of 2 or 4 of one
/// (`types(T = [f32, Vec4<f32>])`), so that one body serves scalar and wide loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Element {
    pub scalar: Scalar,
    /// 1 for the scalar itself, else 2 or 4.
    pub lanes: u8,
}

impl Element {
    /// The type the body sees.
    pub fn ty(self) -> Ty {
        match self.lanes {
            1 => Ty::Scalar(self.scalar),
            n => Ty::Vector(n, self.scalar),
        }
    }

    /// The Rust spelling: `f32`, `Vec4<f32>`.
    pub fn rust_name(self) -> String {
        self.ty().rust_name()
    }

    /// A part of a WGSL name: `f32`, `vec4_f32`.
    pub fn name_part(self) -> String {
        match self.lanes {
            1 => self.scalar.rust_name().to_owned(),
            n => format!("vec{n}_{}", self.scalar.rust_name()),
        }
    }
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
    /// Declared over the kernel's type parameter (`&[T]`): the launcher's argument is
    /// `GpuBuffer<T>`.
    pub generic: bool,
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

/// A local variable, numbered per function by `check/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct LocalId(pub u32);

pub type Block = Vec<Stmt>;

#[derive(Clone)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone)]
pub enum StmtKind {
    Let {
        name: Ident,
        mutable: bool,
        declared: Option<Ty>,
        init: Option<Expr>,
        local: LocalId,
        ty: Ty,
    },
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Block,
        otherwise: Option<Block>,
    },
    For(Box<ForLoop>),
    While {
        cond: Expr,
        body: Block,
    },
    Loop(Block),
    /// A nested `{ ... }` with its own scope.
    Block(Block),
    Break,
    Continue,
    Return(Option<Expr>),
    Match {
        scrutinee: Expr,
        arms: Vec<MatchArm<Block>>,
    },
}

#[derive(Clone)]
pub struct ForLoop {
    pub var: Ident,
    pub local: LocalId,
    pub ty: Ty,
    pub start: Expr,
    pub end: Expr,
    pub inclusive: bool,
    /// `.rev()`: the values in decreasing order, from the range's last value down by the step
    /// (`(a..b).rev().step_by(s)`: `b - 1, b - 1 - s, ..`), or, when `steps_from_start`, from
    /// the last value the steps up from `a` reach (`(a..b).step_by(s).rev()`).
    pub reversed: bool,
    pub steps_from_start: bool,
    pub step: Option<Expr>,
    pub body: Block,
    /// `#[unroll]`: the loop is written out once per iteration (constant bounds only).
    pub unroll: bool,
}

/// The most iterations `#[unroll]` writes out.
pub const MAX_UNROLL: u64 = 1024;

impl ForLoop {
    /// The iteration values of an `#[unroll]`ed loop, when its bounds are literals (at most
    /// one more than [`MAX_UNROLL`], which is an error).
    pub fn unroll_values(&self) -> Option<Vec<u64>> {
        let f = self;
        let literal = constant_int;
        let (start, end) = (literal(&f.start)?, literal(&f.end)?);
        let step = match &f.step {
            Some(step) => literal(step)?.max(1),
            None => 1,
        };
        let end = if f.inclusive {
            end.checked_add(1)?
        } else {
            end
        };
        if end.saturating_sub(start) / step > MAX_UNROLL {
            return Some(vec![0; MAX_UNROLL as usize + 1]);
        }
        let mut values: Vec<u64> = if f.reversed && !f.steps_from_start {
            (start..end).rev().step_by(step as usize).collect()
        } else {
            (start..end).step_by(step as usize).collect()
        };
        if f.steps_from_start {
            values.reverse();
        }
        Some(values)
    }
}

/// The value of integer arithmetic on literals (`8u32 * 8u32` once constants are in place).
fn constant_int(e: &Expr) -> Option<u64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (constant_int(a)?, constant_int(b)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::Div => a.checked_div(b),
                BinOp::Rem => a.checked_rem(b),
                _ => None,
            }
        }
        _ => None,
    }
}

#[derive(Clone)]
pub struct MatchArm<T> {
    /// The integer values of the arm; empty for `_`.
    pub values: Vec<(i64, Span)>,
    pub body: T,
    pub span: Span,
}

#[derive(Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    pub ty: Ty,
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Self {
        Expr {
            kind,
            span,
            ty: Ty::Unknown,
        }
    }

    /// Whether the expression is a literal zero (or `false`), the value of WGSL's zero
    /// constructor `T()`.
    /// Whether the expression is a zero of its type: a zero literal, `false`, a zero cast to
    /// another number type or filling a vector (`0.0 as E`), or a vector of zeros.
    pub fn is_zero(&self) -> bool {
        match &self.kind {
            ExprKind::Int(v) => *v == 0,
            ExprKind::Float(v) => *v == 0.0,
            ExprKind::Bool(b) => !b,
            ExprKind::Cast(inner, _) => inner.is_zero(),
            ExprKind::Builtin(builtin, args) => {
                matches!(builtin.signature, builtins::Signature::Vector(_))
                    && args.iter().all(Expr::is_zero)
            }
            _ => false,
        }
    }
}

/// Whether `[value; n]` is written as a temporary array filled by a loop (rather than WGSL's
/// zero constructor or a constructor listing the value `n` times), which is one more local
/// array in the function.
pub fn repeats_through_a_loop(value: &Expr, n: u32) -> bool {
    !value.is_zero() && n > 16
}

#[derive(Clone)]
pub enum ExprKind {
    Int(u64),
    Float(f64),
    Bool(bool),
    /// A name: a local (resolved by `check/`), a binding, a workgroup array or the uniform.
    Path(Ident, Option<LocalId>),
    Field(Box<Expr>, Ident),
    Index(Box<Expr>, Box<Expr>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Ty),
    /// `bitcast::<T>(x)` / `f32::from_bits(x)`: the same bits read as another type of the
    /// same size.
    Bitcast(Box<Expr>, Ty),
    /// A free function: a helper of the module or a builtin (`global_id`, `vec3`, ...).
    Call(Ident, Vec<Expr>),
    /// `load::<Vec4<f32>>(m, i)`: a call of a generic helper that names its element types.
    /// `check/` makes it a [`ExprKind::Call`] of the helper's copy for them.
    GenericCall(Ident, Vec<Ty>, Vec<Expr>),
    /// A method: math (`x.exp()`), atomics (`a[i].fetch_add(v)`), `x.len()`.
    Method(Box<Expr>, Ident, Vec<Expr>),
    /// A call of a builtin, resolved by `check/` from a `Call` or `Method` (a method's receiver
    /// is its first argument).
    Builtin(&'static Builtin, Vec<Expr>),
    If(Box<Expr>, Box<BlockExpr>, Box<BlockExpr>),
    Match(Box<Expr>, Vec<MatchArm<BlockExpr>>),
    /// `[a, b, c]`.
    Array(Vec<Expr>),
    /// `[value; n]`.
    Repeat(Box<Expr>, u32),
    /// `{ stmts; tail }` used as a value.
    Block(Box<BlockExpr>),
    /// `&x` / `&mut x`: an array or buffer lent to a helper (only as a helper's argument).
    Ref(bool, Box<Expr>),
}

/// A block with a value: statements, then the tail expression.
#[derive(Clone)]
pub struct BlockExpr {
    pub stmts: Block,
    pub tail: Expr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    /// `!`: logical for `bool`, bitwise for integers.
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }

    /// The verb for messages: "`f32` and `u32` cannot be added".
    pub fn verb(self) -> &'static str {
        match self {
            BinOp::Add => "added",
            BinOp::Sub => "subtracted",
            BinOp::Mul => "multiplied",
            BinOp::Div => "divided",
            BinOp::Rem => "combined with `%`",
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => "compared",
            _ => "combined",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }
}

/// Whether `block` holds a `break`, `continue` or `return` anywhere. Only a branch without one
/// may be dropped for a constant condition: a loop whose only exit sat in a dropped branch
/// would have none left, which WGSL rejects (Rust accepts `loop { if false { break; } }`).
pub fn leaves(block: &Block) -> bool {
    let exit = |kind: &StmtKind| {
        matches!(
            kind,
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(_)
        )
    };
    holds(block, &exit, true)
}

/// Whether `block` holds a `break` of the loop around it (one not inside a loop of its own).
/// Lowered inside a WGSL `switch`, such a `break` would leave only the `switch`. (Those in
/// value blocks inside a nested loop count as well, which only costs a `switch` where one
/// would do.)
pub fn breaks_out(block: &Block) -> bool {
    holds(block, &|kind| matches!(kind, StmtKind::Break), false)
}

/// Whether `block` holds a statement `wanted` picks, in its statements (in nested loops only
/// `into_loops`) or in the value blocks of any of its expressions.
fn holds(block: &Block, wanted: &impl Fn(&StmtKind) -> bool, into_loops: bool) -> bool {
    let inner = |body: &Block| holds(body, wanted, into_loops);
    let own = block.iter().any(|stmt| match &stmt.kind {
        kind if wanted(kind) => true,
        StmtKind::If {
            then, otherwise, ..
        } => inner(then) || otherwise.as_ref().is_some_and(inner),
        StmtKind::Block(body) => inner(body),
        StmtKind::Match { arms, .. } => arms.iter().any(|arm| inner(&arm.body)),
        StmtKind::For(l) => into_loops && inner(&l.body),
        StmtKind::While { body, .. } | StmtKind::Loop(body) => into_loops && inner(body),
        _ => false,
    });
    let mut in_values = false;
    visit_exprs(block, &mut |e| match &e.kind {
        ExprKind::Block(b) => in_values |= inner(&b.stmts),
        ExprKind::If(_, a, b) => in_values |= inner(&a.stmts) || inner(&b.stmts),
        ExprKind::Match(_, arms) => in_values |= arms.iter().any(|arm| inner(&arm.body.stmts)),
        _ => {}
    });
    own || in_values
}

/// Calls `f` on every expression of `block`, outer before inner (used by analyses that only
/// look, such as finding the builtins a kernel uses).
pub fn visit_exprs(block: &Block, f: &mut impl FnMut(&Expr)) {
    for stmt in block {
        match &stmt.kind {
            StmtKind::Let { init, .. } => init.iter().for_each(|e| visit_expr(e, f)),
            StmtKind::Assign { target, value, .. } => {
                visit_expr(target, f);
                visit_expr(value, f);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => visit_expr(e, f),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                visit_expr(cond, f);
                visit_exprs(then, f);
                otherwise.iter().for_each(|b| visit_exprs(b, f));
            }
            StmtKind::For(l) => {
                visit_expr(&l.start, f);
                visit_expr(&l.end, f);
                l.step.iter().for_each(|e| visit_expr(e, f));
                visit_exprs(&l.body, f);
            }
            StmtKind::While { cond, body } => {
                visit_expr(cond, f);
                visit_exprs(body, f);
            }
            StmtKind::Loop(body) | StmtKind::Block(body) => visit_exprs(body, f),
            StmtKind::Match { scrutinee, arms } => {
                visit_expr(scrutinee, f);
                arms.iter().for_each(|arm| visit_exprs(&arm.body, f));
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
}

fn visit_block_expr(block: &BlockExpr, f: &mut impl FnMut(&Expr)) {
    visit_exprs(&block.stmts, f);
    visit_expr(&block.tail, f);
}

pub fn visit_expr(e: &Expr, f: &mut impl FnMut(&Expr)) {
    f(e);
    match &e.kind {
        ExprKind::Field(a, _)
        | ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Bitcast(a, _)
        | ExprKind::Ref(_, a)
        | ExprKind::Repeat(a, _) => visit_expr(a, f),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            visit_expr(a, f);
            visit_expr(b, f);
        }
        ExprKind::Call(_, args)
        | ExprKind::GenericCall(_, _, args)
        | ExprKind::Builtin(_, args)
        | ExprKind::Array(args) => args.iter().for_each(|a| visit_expr(a, f)),
        ExprKind::Method(receiver, _, args) => {
            visit_expr(receiver, f);
            args.iter().for_each(|a| visit_expr(a, f));
        }
        ExprKind::If(cond, a, b) => {
            visit_expr(cond, f);
            visit_block_expr(a, f);
            visit_block_expr(b, f);
        }
        ExprKind::Match(scrutinee, arms) => {
            visit_expr(scrutinee, f);
            arms.iter().for_each(|arm| visit_block_expr(&arm.body, f));
        }
        ExprKind::Block(block) => visit_block_expr(block, f),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
    }
}

impl Expr {
    /// The expression written as Rust, for messages that suggest a rewrite. Operands that are
    /// themselves operations are parenthesized.
    pub fn rust_text(&self) -> String {
        let list = |args: &[Expr]| {
            args.iter()
                .map(Expr::rust_text)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Float(v) => format!("{v:?}"),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Path(name, _) => name.to_string(),
            ExprKind::Field(base, field) => format!("{}.{field}", base.rust_text()),
            ExprKind::Index(base, index) => format!("{}[{}]", base.rust_text(), index.rust_text()),
            ExprKind::Call(name, args) => format!("{}({})", written_name(name), list(args)),
            ExprKind::GenericCall(name, types, args) => {
                let types: Vec<String> = types.iter().map(Ty::rust_name).collect();
                format!("{name}::<{}>({})", types.join(", "), list(args))
            }
            ExprKind::Method(receiver, name, args) => {
                format!("{}.{name}({})", receiver.rust_text(), list(args))
            }
            ExprKind::Builtin(builtin, args) => match (builtin.form, &args[..]) {
                (Form::Function, _) | (_, []) => format!("{}({})", builtin.name, list(args)),
                (_, [receiver, rest @ ..]) => {
                    format!("{}.{}({})", receiver.rust_text(), builtin.name, list(rest))
                }
            },
            ExprKind::Unary(UnOp::Neg, e) => format!("-{}", e.rust_text()),
            ExprKind::Unary(UnOp::Not, e) => format!("!{}", e.rust_text()),
            ExprKind::Binary(op, a, b) => {
                format!("({} {} {})", a.rust_text(), op.symbol(), b.rust_text())
            }
            ExprKind::Cast(e, ty) => format!("({} as {})", e.rust_text(), ty.rust_name()),
            ExprKind::Bitcast(e, ty) => format!("bitcast::<{}>({})", ty.rust_name(), e.rust_text()),
            ExprKind::Ref(true, e) => format!("&mut {}", e.rust_text()),
            ExprKind::Ref(false, e) => format!("&{}", e.rust_text()),
            _ => "(...)".to_owned(),
        }
    }
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

/// A node of a mutable walk (see [`visit_block_mut`]).
pub enum NodeMut<'a> {
    Stmt(&'a mut Stmt),
    Expr(&'a mut Expr),
}

/// Calls `f` on every statement and expression of `block`, each before its parts (used by
/// passes that rewrite the IR: type finishing, specialization).
pub fn visit_block_mut(block: &mut Block, f: &mut impl FnMut(NodeMut<'_>)) {
    for stmt in block {
        f(NodeMut::Stmt(stmt));
        match &mut stmt.kind {
            StmtKind::Let { init, .. } => init.iter_mut().for_each(|e| visit_expr_mut(e, f)),
            StmtKind::Assign { target, value, .. } => {
                visit_expr_mut(target, f);
                visit_expr_mut(value, f);
            }
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => visit_expr_mut(e, f),
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => {
                visit_expr_mut(cond, f);
                visit_block_mut(then, f);
                otherwise.iter_mut().for_each(|b| visit_block_mut(b, f));
            }
            StmtKind::For(l) => {
                visit_expr_mut(&mut l.start, f);
                visit_expr_mut(&mut l.end, f);
                l.step.iter_mut().for_each(|e| visit_expr_mut(e, f));
                visit_block_mut(&mut l.body, f);
            }
            StmtKind::While { cond, body } => {
                visit_expr_mut(cond, f);
                visit_block_mut(body, f);
            }
            StmtKind::Loop(body) | StmtKind::Block(body) => visit_block_mut(body, f),
            StmtKind::Match { scrutinee, arms } => {
                visit_expr_mut(scrutinee, f);
                arms.iter_mut()
                    .for_each(|arm| visit_block_mut(&mut arm.body, f));
            }
            StmtKind::Break | StmtKind::Continue | StmtKind::Return(None) => {}
        }
    }
}

fn visit_expr_mut(e: &mut Expr, f: &mut dyn FnMut(NodeMut<'_>)) {
    f(NodeMut::Expr(e));
    children_mut(e, &mut |child| match child {
        Child::Expr(child) => visit_expr_mut(child, f),
        Child::Block(block) => {
            visit_block_mut(&mut block.stmts, &mut |node| f(node));
            visit_expr_mut(&mut block.tail, f);
        }
    });
}

/// A direct sub-expression or value block of an expression.
pub enum Child<'a> {
    Expr(&'a mut Expr),
    Block(&'a mut BlockExpr),
}

/// Calls `visit` on each direct sub-expression and value block of `e`.
pub fn children_mut(e: &mut Expr, visit: &mut impl FnMut(Child<'_>)) {
    let mut expr = |e: &mut Expr| visit(Child::Expr(e));
    match &mut e.kind {
        ExprKind::Field(a, _)
        | ExprKind::Unary(_, a)
        | ExprKind::Cast(a, _)
        | ExprKind::Bitcast(a, _)
        | ExprKind::Ref(_, a)
        | ExprKind::Repeat(a, _) => expr(a),
        ExprKind::Index(a, b) | ExprKind::Binary(_, a, b) => {
            expr(a);
            expr(b);
        }
        ExprKind::Call(_, args)
        | ExprKind::GenericCall(_, _, args)
        | ExprKind::Builtin(_, args)
        | ExprKind::Array(args) => args.iter_mut().for_each(expr),
        ExprKind::Method(receiver, _, args) => {
            expr(receiver);
            args.iter_mut().for_each(expr);
        }
        ExprKind::If(cond, a, b) => {
            expr(cond);
            visit(Child::Block(a));
            visit(Child::Block(b));
        }
        ExprKind::Match(scrutinee, arms) => {
            expr(scrutinee);
            arms.iter_mut()
                .for_each(|arm| visit(Child::Block(&mut arm.body)));
        }
        ExprKind::Block(b) => visit(Child::Block(b)),
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Path(..) => {}
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
