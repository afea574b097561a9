//! The types of the kernel language: scalars, vectors, arrays, atomics and matrix fragments
//! ([`Ty`]), their sizes and Rust spellings, and the element types a kernel's or generic
//! helper's type parameter stands for ([`Element`]).

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
