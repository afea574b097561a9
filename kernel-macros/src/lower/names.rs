//! WGSL names for what the user named: Rust identifiers that are WGSL keywords or reserved
//! words, or that collide once scopes are flattened, get a suffix; generated names start with
//! `tsr_`, which user names never keep.

use std::collections::{HashMap, HashSet};

/// WGSL's keywords and reserved words (WGSL spec, "Keyword and Reserved Word Summary"):
/// never identifiers.
#[rustfmt::skip]
const KEYWORDS: &[&str] = &[
    "alias", "break", "case", "const", "const_assert", "continue", "continuing", "default",
    "diagnostic", "discard", "else", "enable", "false", "fn", "for", "if", "let", "loop",
    "override", "requires", "return", "struct", "switch", "true", "var", "while",
    "NULL", "Self", "abstract", "active", "alignas", "alignof", "as", "asm", "asm_fragment",
    "async", "attribute", "auto", "await", "become", "cast", "catch", "class", "co_await",
    "co_return", "co_yield", "coherent", "column_major", "common", "compile",
    "compile_fragment", "concept", "const_cast", "consteval", "constexpr", "constinit", "crate",
    "debugger", "decltype", "delete", "demote", "demote_to_helper", "do", "dynamic_cast", "enum",
    "explicit", "export", "extends", "extern", "external", "fallthrough", "filter", "final",
    "finally", "friend", "from", "fxgroup", "get", "goto", "groupshared", "highp", "impl",
    "implements", "import", "inline", "instanceof", "interface", "layout", "lowp", "macro",
    "macro_rules", "match", "mediump", "meta", "mod", "module", "move", "mut", "mutable",
    "namespace", "new", "nil", "noexcept", "noinline", "nointerpolation", "non_coherent",
    "noncoherent", "noperspective", "null", "nullptr", "of", "operator", "package", "packoffset",
    "partition", "pass", "patch", "pixelfragment", "precise", "precision", "premerge", "priv",
    "protected", "pub", "public", "readonly", "ref", "regardless", "register",
    "reinterpret_cast", "require", "resource", "restrict", "self", "set", "shared", "sizeof",
    "smooth", "snorm", "static", "static_assert", "static_cast", "std", "subroutine", "super",
    "target", "template", "this", "thread_local", "throw", "trait", "try", "type", "typedef",
    "typeid", "typename", "typeof", "union", "unless", "unorm", "unsafe", "unsized", "use",
    "using", "varying", "virtual", "volatile", "wgsl", "where", "with", "writeonly", "yield",
];

/// WGSL's predeclared names: types, type aliases, enumerants (address spaces, access modes,
/// texel formats) and builtin functions. A declaration may shadow them, but generated code
/// names them after user declarations (`var<storage, read_write>`, `max(..)`), so no user name
/// takes one.
const PREDECLARED: &[&str] = &[
    // types and type generators
    "array",
    "atomic",
    "bool",
    "f16",
    "f32",
    "i32",
    "u32",
    "ptr",
    "sampler",
    "sampler_comparison",
    "vec2",
    "vec3",
    "vec4",
    "mat2x2",
    "mat2x3",
    "mat2x4",
    "mat3x2",
    "mat3x3",
    "mat3x4",
    "mat4x2",
    "mat4x3",
    "mat4x4",
    "coop_mat8x8",
    "coop_mat16x16",
    // the roles of cooperative matrices, resolved as names: a variable `A` would hide one
    "A",
    "B",
    "C",
    "texture_1d",
    "texture_2d",
    "texture_2d_array",
    "texture_3d",
    "texture_cube",
    "texture_cube_array",
    "texture_multisampled_2d",
    "texture_depth_multisampled_2d",
    "texture_external",
    "texture_storage_1d",
    "texture_storage_2d",
    "texture_storage_2d_array",
    "texture_storage_3d",
    "texture_depth_2d",
    "texture_depth_2d_array",
    "texture_depth_cube",
    "texture_depth_cube_array",
    "binding_array",
    // type aliases
    "vec2i",
    "vec3i",
    "vec4i",
    "vec2u",
    "vec3u",
    "vec4u",
    "vec2f",
    "vec3f",
    "vec4f",
    "vec2h",
    "vec3h",
    "vec4h",
    "mat2x2f",
    "mat2x3f",
    "mat2x4f",
    "mat3x2f",
    "mat3x3f",
    "mat3x4f",
    "mat4x2f",
    "mat4x3f",
    "mat4x4f",
    "mat2x2h",
    "mat2x3h",
    "mat2x4h",
    "mat3x2h",
    "mat3x3h",
    "mat3x4h",
    "mat4x2h",
    "mat4x3h",
    "mat4x4h",
    // enumerants
    "read",
    "write",
    "read_write",
    "function",
    "private",
    "workgroup",
    "uniform",
    "storage",
    "handle",
    "rgba8unorm",
    "rgba8snorm",
    "rgba8uint",
    "rgba8sint",
    "rgba16uint",
    "rgba16sint",
    "rgba16float",
    "r32uint",
    "r32sint",
    "r32float",
    "rg32uint",
    "rg32sint",
    "rg32float",
    "rgba32uint",
    "rgba32sint",
    "rgba32float",
    "bgra8unorm",
    "r8unorm",
    "r8snorm",
    "r8uint",
    "r8sint",
    "rg8unorm",
    "rg8snorm",
    "rg8uint",
    "rg8sint",
    "r16uint",
    "r16sint",
    "r16float",
    "rg16uint",
    "rg16sint",
    "rg16float",
    "rgb10a2uint",
    "rgb10a2unorm",
    "rg11b10ufloat",
    // builtin functions
    "bitcast",
    "all",
    "any",
    "select",
    "arrayLength",
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "atan2",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "countLeadingZeros",
    "countOneBits",
    "countTrailingZeros",
    "cross",
    "degrees",
    "determinant",
    "distance",
    "dot",
    "dot4U8Packed",
    "dot4I8Packed",
    "exp",
    "exp2",
    "extractBits",
    "faceForward",
    "firstLeadingBit",
    "firstTrailingBit",
    "floor",
    "fma",
    "fract",
    "frexp",
    "insertBits",
    "inverseSqrt",
    "ldexp",
    "length",
    "log",
    "log2",
    "max",
    "min",
    "mix",
    "modf",
    "normalize",
    "pow",
    "quantizeToF16",
    "radians",
    "reflect",
    "refract",
    "reverseBits",
    "round",
    "saturate",
    "sign",
    "sin",
    "sinh",
    "smoothstep",
    "sqrt",
    "step",
    "tan",
    "tanh",
    "transpose",
    "trunc",
    "dpdx",
    "dpdxCoarse",
    "dpdxFine",
    "dpdy",
    "dpdyCoarse",
    "dpdyFine",
    "fwidth",
    "fwidthCoarse",
    "fwidthFine",
    "textureDimensions",
    "textureGather",
    "textureGatherCompare",
    "textureLoad",
    "textureNumLayers",
    "textureNumLevels",
    "textureNumSamples",
    "textureSample",
    "textureSampleBias",
    "textureSampleCompare",
    "textureSampleCompareLevel",
    "textureSampleGrad",
    "textureSampleLevel",
    "textureSampleBaseClampToEdge",
    "textureStore",
    "atomicLoad",
    "atomicStore",
    "atomicAdd",
    "atomicSub",
    "atomicMax",
    "atomicMin",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "atomicExchange",
    "atomicCompareExchangeWeak",
    "pack4x8snorm",
    "pack4x8unorm",
    "pack4xI8",
    "pack4xU8",
    "pack4xI8Clamp",
    "pack4xU8Clamp",
    "pack2x16snorm",
    "pack2x16unorm",
    "pack2x16float",
    "unpack4x8snorm",
    "unpack4x8unorm",
    "unpack4xI8",
    "unpack4xU8",
    "unpack2x16snorm",
    "unpack2x16unorm",
    "unpack2x16float",
    "storageBarrier",
    "textureBarrier",
    "workgroupBarrier",
    "workgroupUniformLoad",
    "coopLoad",
    "coopLoadT",
    "coopMultiplyAdd",
    "coopStore",
    "coopStoreT",
    "subgroupAdd",
    "subgroupAll",
    "subgroupAnd",
    "subgroupAny",
    "subgroupBallot",
    "subgroupBroadcast",
    "subgroupBroadcastFirst",
    "subgroupElect",
    "subgroupExclusiveAdd",
    "subgroupExclusiveMul",
    "subgroupInclusiveAdd",
    "subgroupInclusiveMul",
    "subgroupMax",
    "subgroupMin",
    "subgroupMul",
    "subgroupOr",
    "subgroupShuffle",
    "subgroupShuffleDown",
    "subgroupShuffleUp",
    "subgroupShuffleXor",
    "subgroupXor",
    "quadBroadcast",
    "quadSwapDiagonal",
    "quadSwapX",
    "quadSwapY",
];

/// Whether `name` is a WGSL keyword, reserved word or predeclared name.
pub fn is_reserved(name: &str) -> bool {
    KEYWORDS.contains(&name) || PREDECLARED.contains(&name)
}

/// The prefix of every name lowering invents.
pub const GENERATED: &str = "tsr_";

/// `name` itself when WGSL accepts it and it cannot meet a generated name; otherwise a
/// spelling that can: `filter` -> `filter_`, `__x` -> `x_`, `__` -> `u_`, `tsr_a` -> `tsr_a_`.
fn safe_base(name: &str) -> String {
    let unsafe_start = name.starts_with("__") || name.starts_with(GENERATED);
    if !unsafe_start && !is_reserved(name) {
        return name.to_owned();
    }
    match name.trim_start_matches('_') {
        "" => "u_".to_owned(),
        trimmed => format!("{trimmed}_"),
    }
}

/// Names taken in one scope of the WGSL module (module scope, or one function).
#[derive(Clone, Default)]
pub struct Names {
    taken: HashSet<String>,
    /// For each kind of generated name, the number to try first: counting from 0 on every
    /// call made lowering quadratic in the temporaries of a function (unrolled loops have
    /// thousands).
    next: HashMap<String, usize>,
}

impl Names {
    /// A WGSL name for the user's `name`, unique among the names handed out so far. A name
    /// WGSL would refuse (a keyword, a reserved or predeclared word, a leading `__`, a raw
    /// identifier's `r#`) or that could meet a generated one (`tsr_..`) gets a `_` suffix.
    pub fn claim(&mut self, name: &str) -> String {
        let name = name.strip_prefix("r#").unwrap_or(name);
        if name == "_" {
            return self.generated("unused");
        }
        let base = safe_base(name);
        let mut candidate = base.clone();
        let mut n = 1;
        while self.taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }

    /// Marks a name as taken without handing it out.
    pub fn reserve(&mut self, name: &str) {
        self.taken.insert(name.to_owned());
    }

    /// A fresh generated name (`tsr_<what>N`).
    pub fn generated(&mut self, what: &str) -> String {
        let next = self.next.entry(what.to_owned()).or_default();
        loop {
            let candidate = format!("{GENERATED}{what}{next}");
            *next += 1;
            if self.taken.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_and_colliding_names_get_suffixes() {
        let mut names = Names::default();
        assert_eq!(names.claim("x"), "x");
        assert_eq!(names.claim("x"), "x_1");
        assert_eq!(names.claim("x"), "x_2");
        assert_eq!(names.claim("filter"), "filter_");
        assert_eq!(names.claim("tsr_a"), "tsr_a_");
        assert_eq!(names.claim("r#match"), "match_");
        assert_eq!(names.claim("__"), "u_");
        assert_eq!(names.claim("__x"), "x_");
        assert_eq!(names.claim("x_"), "x__1");
        assert_eq!(names.claim("read_write"), "read_write_");
        assert_eq!(names.generated("t"), "tsr_t0");
        assert_eq!(names.generated("t"), "tsr_t1");
    }
}
