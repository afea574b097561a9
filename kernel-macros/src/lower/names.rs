//! WGSL names for what the user named: Rust identifiers that are WGSL keywords or reserved
//! words, or that collide once scopes are flattened, get a suffix; generated names start with
//! `tsr_`, which user names never keep.

use std::collections::{HashMap, HashSet};

/// WGSL keywords, reserved words and the builtin functions lowering calls, none of which a user
/// name may take.
const RESERVED: &[&str] = &[
    "alias",
    "array",
    "atomic",
    "bitcast",
    "bool",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "f16",
    "f32",
    "false",
    "fn",
    "for",
    "i32",
    "if",
    "let",
    "loop",
    "mat2x2",
    "mat3x3",
    "mat4x4",
    "override",
    "ptr",
    "requires",
    "return",
    "sampler",
    "struct",
    "switch",
    "true",
    "u32",
    "var",
    "vec2",
    "vec3",
    "vec4",
    "while",
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
    // builtin functions lowering emits
    "abs",
    "acos",
    "asin",
    "atan",
    "atan2",
    "arrayLength",
    "atomicAdd",
    "atomicAnd",
    "atomicExchange",
    "atomicLoad",
    "atomicMax",
    "atomicMin",
    "atomicOr",
    "atomicStore",
    "atomicSub",
    "atomicXor",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "countLeadingZeros",
    "countOneBits",
    "countTrailingZeros",
    "cross",
    "degrees",
    "distance",
    "dot",
    "exp",
    "exp2",
    "floor",
    "fma",
    "fract",
    "length",
    "log",
    "log2",
    "max",
    "min",
    "normalize",
    "pow",
    "radians",
    "reverseBits",
    "round",
    "select",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "storageBarrier",
    "tan",
    "tanh",
    "trunc",
    "workgroupBarrier",
];

/// The prefix of every name lowering invents.
pub const GENERATED: &str = "tsr_";

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
    /// A WGSL name for the user's `name`, unique among the names handed out so far.
    pub fn claim(&mut self, name: &str) -> String {
        if name == "_" {
            return self.generated("unused");
        }
        let base =
            if RESERVED.contains(&name) || name.starts_with(GENERATED) || name.starts_with("__") {
                format!("{}_", name.trim_start_matches('_'))
            } else {
                name.to_owned()
            };
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
        assert_eq!(names.generated("t"), "tsr_t0");
        assert_eq!(names.generated("t"), "tsr_t1");
    }
}
