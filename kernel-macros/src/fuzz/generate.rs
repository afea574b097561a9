//! Random kernels modules written in the language `src/lib.rs` documents: params structs,
//! module constants, helpers, kernels with `constants(..)`, `specialize(..)`, `features(..)`,
//! workgroup memory, local arrays, loops (`#[unroll]`, ranges, `while`, `loop`), `if`/`match`,
//! builtins, math methods, vectors, casts and bit operations. Expressions are generated for a
//! wanted type, so most modules are valid and reach naga and Tint; a few percent of choices
//! are deliberately wrong (a barrier under a branch, a mismatched type), and about one module
//! in a hundred nests or chains far past what a person writes.

use super::rng::Rng;

/// The types the generator writes values of.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Ty {
    F32,
    U32,
    I32,
    Bool,
    F16,
    /// `Vec2<f32>`, `Vec3<f32>`, `Vec4<f32>`.
    Vec(u8),
}

const SCALARS: &[Ty] = &[Ty::F32, Ty::U32, Ty::I32, Ty::Bool];

impl Ty {
    fn rust(self) -> String {
        match self {
            Ty::F32 => "f32".into(),
            Ty::U32 => "u32".into(),
            Ty::I32 => "i32".into(),
            Ty::Bool => "bool".into(),
            Ty::F16 => "f16".into(),
            Ty::Vec(n) => format!("Vec{n}<f32>"),
        }
    }
}

/// A variable in scope.
struct Var {
    name: String,
    ty: Ty,
    mutable: bool,
    /// A local array of this many `f32`s (then `ty` is its element type).
    array: Option<usize>,
}

/// A helper the kernels may call: name, parameter types, result type.
struct Helper {
    name: String,
    params: Vec<Ty>,
    result: Ty,
}

/// The state of one module's generation.
struct Gen<'r> {
    rng: &'r mut Rng,
    vars: Vec<Var>,
    fresh: usize,
    helpers: Vec<Helper>,
    /// `u32` constants in scope (module constants, the kernel's `constants(..)`).
    constants: Vec<String>,
    /// Inside a kernel: buffers and invocation ids can be used.
    in_kernel: bool,
    /// The kernel's workgroup array and its length.
    tile: Option<usize>,
    f16: bool,
    subgroups: bool,
    loops: usize,
}

/// A random module, as Rust source text: `mod name { .. }`.
pub fn module(rng: &mut Rng) -> String {
    let mut generator = Gen {
        rng,
        vars: Vec::new(),
        fresh: 0,
        helpers: Vec::new(),
        constants: Vec::new(),
        in_kernel: false,
        tile: None,
        f16: false,
        subgroups: false,
        loops: 0,
    };
    generator.module()
}

impl Gen<'_> {
    fn module(&mut self) -> String {
        let mut out = String::from("mod fuzzed {\n");
        for c in 0..self.rng.below(3) {
            let value = self
                .rng
                .pick(&["1", "4", "16", "3 * 5", "64 / 4", "0", "255"]);
            out += &format!("    const C{c}: u32 = {value};\n");
            self.constants.push(format!("C{c}"));
        }
        out += "    #[repr(C)]\n    #[derive(Clone, Copy, tessera::Params)]\n    pub struct P { pub n: u32, pub a: f32, pub b: i32, pub pad: u32, pub v: [f32; 4] }\n";
        for h in 0..self.rng.below(3) {
            out += &self.helper(h);
        }
        for k in 0..self.rng.between(1, 3) {
            out += &self.kernel(k);
        }
        out + "}\n"
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn helper(&mut self, index: usize) -> String {
        let params: Vec<Ty> = (0..self.rng.between(1, 3))
            .map(|_| self.rng.pick(SCALARS))
            .collect();
        let result = self.rng.pick(&[Ty::F32, Ty::U32, Ty::I32]);
        self.vars.clear();
        let mut list = Vec::new();
        for (i, ty) in params.iter().enumerate() {
            let mutable = self.rng.percent(20);
            let name = format!("a{i}");
            list.push(format!(
                "{}{name}: {}",
                if mutable { "mut " } else { "" },
                ty.rust()
            ));
            self.vars.push(Var {
                name,
                ty: *ty,
                mutable,
                array: None,
            });
        }
        let body = self.statements(2, false, 3);
        let value = self.expr(result, 3);
        let name = format!("helper{index}");
        self.helpers.push(Helper {
            name: name.clone(),
            params,
            result,
        });
        format!(
            "    fn {name}({}) -> {} {{\n{body}        {value}\n    }}\n",
            list.join(", "),
            result.rust()
        )
    }

    fn kernel(&mut self, index: usize) -> String {
        let size = self.rng.pick(&[1usize, 32, 64, 64, 128, 256]);
        self.f16 = self.rng.percent(15);
        self.subgroups = self.rng.percent(10);
        self.tile = self.rng.percent(30).then_some(size);
        let mut attr = format!("workgroup = [{size}], grid = [ceil_div(p.n, {size})]");
        let kept_constants = self.constants.len();
        if self.rng.percent(25) {
            // A list of its own, or zipped with another that varies beside it.
            if self.rng.percent(50) {
                attr += ", constants(K = [2, 4])";
            } else {
                attr += ", constants(zip(K = [2, 4, 4], J = [1, 1, 3]))";
                self.constants.push("J".into());
            }
            self.constants.push("K".into());
        }
        if self.rng.percent(20) {
            attr += self.rng.pick(&[
                ", specialize(p.n == 1)",
                ", specialize(p.n == 64, p.b == 0)",
            ]);
        }
        let mut features = Vec::new();
        self.f16.then(|| features.push("f16"));
        self.subgroups.then(|| features.push("subgroups"));
        if !features.is_empty() {
            attr += &format!(", features({})", features.join(", "));
        }
        let tile = match self.tile {
            Some(n) => format!(", #[workgroup] tile: &mut [f32; {n}]"),
            None => String::new(),
        };
        self.in_kernel = true;
        self.vars.clear();
        self.declare("i", Ty::U32);
        self.declare("lid", Ty::U32);
        let body = self.statements(3, true, 6);
        let store = self.expr(Ty::F32, 3);
        self.in_kernel = false;
        self.constants.truncate(kept_constants);
        format!(
            "    #[kernel({attr})]\n    pub fn kernel{index}(p: &P, #[len(p.n)] x: &[f32], #[len(p.n)] y: &mut [f32], #[len(p.n)] u: &[u32]{tile}) {{\n        let i = global_id().x;\n        let lid = local_index();\n{body}        if i < p.n {{\n            y[i] = {store};\n        }}\n    }}\n"
        )
    }

    fn declare(&mut self, name: &str, ty: Ty) {
        self.vars.push(Var {
            name: name.into(),
            ty,
            mutable: false,
            array: None,
        });
    }

    /// Up to `count` statements, at nesting `depth` left; `uniform` when every invocation of the
    /// workgroup reaches them together (barriers may go there).
    fn statements(&mut self, depth: usize, uniform: bool, count: usize) -> String {
        let scope = self.vars.len();
        let mut out = String::new();
        for _ in 0..self.rng.below(count + 1) {
            out += &self.statement(depth, uniform);
        }
        self.vars.truncate(scope);
        out
    }

    fn block(&mut self, depth: usize, uniform: bool) -> String {
        let body = self.statements(depth.saturating_sub(1), uniform, 3);
        format!("{{\n{body}        }}")
    }

    fn statement(&mut self, depth: usize, uniform: bool) -> String {
        let choice = if depth == 0 {
            self.rng.below(4)
        } else {
            self.rng.below(16)
        };
        let line = match choice {
            0 | 1 => self.let_statement(),
            2 => self.assignment(),
            3 => self.store(),
            4 | 5 => {
                let condition = self.expr(Ty::Bool, 2);
                let then = self.block(depth, false);
                match self.rng.percent(50) {
                    true => format!("if {condition} {then} else {}", self.block(depth, false)),
                    false => format!("if {condition} {then}"),
                }
            }
            6 => self.for_loop(depth, uniform),
            7 => self.unrolled(depth, uniform),
            8 => self.while_loop(depth),
            9 => self.match_statement(depth),
            10 if uniform || self.rng.percent(5) => self.barrier(),
            11 => self.local_array(),
            12 if self.loops > 0 => self.rng.pick(&["break;", "continue;"]).to_string(),
            13 if super::STRESS && self.rng.percent(3) => self.stress(),
            14 if self.in_kernel && self.rng.percent(10) => "return;".into(),
            _ => self.let_statement(),
        };
        format!("        {line}\n")
    }

    fn let_statement(&mut self) -> String {
        let ty = self.value_type();
        let value = self.expr(ty, 3);
        let name = self.name("v");
        let mutable = self.rng.percent(40);
        let annotation = match self.rng.percent(30) {
            true => format!(": {}", ty.rust()),
            false => String::new(),
        };
        self.vars.push(Var {
            name: name.clone(),
            ty,
            mutable,
            array: None,
        });
        format!(
            "let {}{name}{annotation} = {value};",
            if mutable { "mut " } else { "" }
        )
    }

    fn value_type(&mut self) -> Ty {
        match self.rng.below(10) {
            0 if self.f16 => Ty::F16,
            1 => Ty::Vec(self.rng.pick(&[2, 3, 4])),
            _ => self.rng.pick(SCALARS),
        }
    }

    fn assignment(&mut self) -> String {
        let targets: Vec<(String, Ty, Option<usize>)> = self
            .vars
            .iter()
            .filter(|v| v.mutable)
            .map(|v| (v.name.clone(), v.ty, v.array))
            .collect();
        if targets.is_empty() {
            return self.let_statement();
        }
        let (name, ty, array) = self.rng.pick(&targets).clone();
        let place = match array {
            Some(_) => format!("{name}[{}]", self.expr(Ty::U32, 1)),
            None => name,
        };
        let value = self.expr(ty, 3);
        let op = match ty {
            Ty::Bool => "=",
            Ty::U32 | Ty::I32 => self.rng.pick(&["=", "+=", "-=", "*=", "|=", "^="]),
            _ => self.rng.pick(&["=", "+=", "-=", "*="]),
        };
        format!("{place} {op} {value};")
    }

    fn store(&mut self) -> String {
        if !self.in_kernel {
            return self.let_statement();
        }
        let value = self.expr(Ty::F32, 3);
        match self.tile {
            Some(_) if self.rng.percent(50) => format!("tile[lid] = {value};"),
            _ => format!("if i < p.n {{ y[i] = {value}; }}"),
        }
    }

    fn for_loop(&mut self, depth: usize, uniform: bool) -> String {
        let var = self.name("k");
        let start = self.expr(Ty::U32, 1);
        let end = self.expr(Ty::U32, 1);
        let range = match self.rng.below(4) {
            0 => format!("{start}..={end}"),
            1 => format!("({start}..{end}).rev()"),
            2 => format!("({start}..{end}).step_by({})", self.rng.between(1, 4)),
            _ => format!("{start}..{end}"),
        };
        let uniform = uniform && self.rng.percent(30);
        self.loop_body(&var, depth, &format!("for {var} in {range} "), uniform)
    }

    fn unrolled(&mut self, depth: usize, uniform: bool) -> String {
        let var = self.name("e");
        let end = self.rng.between(0, 8);
        self.loop_body(
            &var,
            depth,
            &format!("#[unroll]\n        for {var} in 0..{end} "),
            uniform,
        )
    }

    fn loop_body(&mut self, var: &str, depth: usize, head: &str, uniform: bool) -> String {
        self.declare(var, Ty::U32);
        self.loops += 1;
        let body = self.block(depth, uniform);
        self.loops -= 1;
        self.vars.pop();
        format!("{head}{body}")
    }

    fn while_loop(&mut self, depth: usize) -> String {
        let counter = self.name("w");
        self.loops += 1;
        let body = self.block(depth, false);
        let exit = self.expr(Ty::Bool, 1);
        self.loops -= 1;
        match self.rng.percent(50) {
            true => format!("let mut {counter} = 0u32;\n        while {counter} < 4 {{ {counter} += 1; {body} }}"),
            false => format!("loop {{ if {exit} {{ break; }} {body} }}"),
        }
    }

    fn match_statement(&mut self, depth: usize) -> String {
        let ty = self.rng.pick(&[Ty::U32, Ty::I32]);
        let scrutinee = self.expr(ty, 2);
        let first = self.block(depth, false);
        let second = self.block(depth, false);
        let rest = self.block(depth, false);
        let arms = match ty {
            Ty::I32 => "-1 | 3",
            _ => "1 | 2",
        };
        format!("match {scrutinee} {{ 0 => {first}, {arms} => {second}, _ => {rest} }}")
    }

    fn barrier(&mut self) -> String {
        self.rng
            .pick(&["workgroup_barrier();", "storage_barrier();"])
            .to_string()
    }

    fn local_array(&mut self) -> String {
        let name = self.name("acc");
        let len = self.rng.between(1, 8);
        self.vars.push(Var {
            name: name.clone(),
            ty: Ty::F32,
            mutable: true,
            array: Some(len),
        });
        format!("let mut {name} = [0.0f32; {len}];")
    }

    /// Far past what a person writes: a long sum, deep parentheses, deeply nested `if`s.
    fn stress(&mut self) -> String {
        let n = self.rng.between(100, 3000);
        let name = self.name("s");
        self.declare(&name, Ty::F32);
        match self.rng.below(3) {
            0 => format!("let {name} = {};", vec!["1.0"; n].join(" + ")),
            1 => format!("let {name} = {}1.0{};", "(".repeat(n), ")".repeat(n)),
            _ => format!(
                "let mut {name} = 0.0; {} {name} = 1.0; {}",
                "if i < p.n {".repeat(n / 4),
                "}".repeat(n / 4)
            ),
        }
    }

    /// An expression of type `ty`, at most `depth` operators deep.
    fn expr(&mut self, ty: Ty, depth: usize) -> String {
        if depth == 0 || self.rng.percent(30) {
            return self.atom(ty);
        }
        let d = depth - 1;
        match ty {
            Ty::F32 => self.float_expr(d),
            Ty::U32 => self.u32_expr(d),
            Ty::I32 => self.i32_expr(d),
            Ty::Bool => self.bool_expr(d),
            Ty::F16 => format!("({} as f16)", self.expr(Ty::F32, d)),
            Ty::Vec(n) => self.vec_expr(n, d),
        }
    }

    fn atom(&mut self, ty: Ty) -> String {
        let vars: Vec<String> = self
            .vars
            .iter()
            .filter(|v| v.ty == ty)
            .map(|v| match v.array {
                Some(len) => format!("{}[{}]", v.name, self.rng.below(len + 1)),
                None => v.name.clone(),
            })
            .collect();
        if !vars.is_empty() && self.rng.percent(50) {
            return self.rng.pick(&vars).clone();
        }
        match ty {
            Ty::F32 => self.float_atom(),
            Ty::U32 => self.u32_atom(),
            Ty::I32 if self.in_kernel => self
                .rng
                .pick(&["0", "-1", "7", "p.b", "-2147483648", "2147483647"])
                .to_string(),
            Ty::I32 => self
                .rng
                .pick(&["0", "-1", "7", "-2147483648", "2147483647"])
                .to_string(),
            Ty::Bool if self.in_kernel => self
                .rng
                .pick(&["true", "false", "i < p.n", "p.b > 0"])
                .to_string(),
            Ty::Bool => self.rng.pick(&["true", "false"]).to_string(),
            Ty::F16 => self
                .rng
                .pick(&["1.5f16", "0.0f16", "(0.25 as f16)", "65504.0f16"])
                .to_string(),
            Ty::Vec(2) if self.in_kernel => self
                .rng
                .pick(&["vec2(1.0, 2.0)", "p.v.xy", "p.v.zw"])
                .to_string(),
            Ty::Vec(3) if self.in_kernel => self
                .rng
                .pick(&["vec3(0.5, 1.0, p.a)", "p.v.xyz"])
                .to_string(),
            Ty::Vec(4) if self.in_kernel => self
                .rng
                .pick(&["p.v", "vec4(1.0, 0.0, 0.0, p.a)"])
                .to_string(),
            Ty::Vec(2) => "vec2(1.0, 2.0)".into(),
            Ty::Vec(3) => "vec3(0.5, 1.0, 2.0)".into(),
            Ty::Vec(_) => "vec4(1.0, 0.0, 0.0, 0.5)".into(),
        }
    }

    fn float_atom(&mut self) -> String {
        let mut options = vec![
            "1.0",
            "0.5",
            "-3.25",
            "0.0",
            "1e-3",
            "100.0",
            "3.4028235e38",
        ];
        if self.in_kernel {
            options.extend(["p.a", "p.v.x", "x[i]", "x[lid]", "x[i + 1]"]);
            if self.tile.is_some() {
                options.extend(["tile[lid]", "tile[0]"]);
                // A barrier too: in varying flow it is an error the macro must report.
                if self.rng.percent(10) {
                    options.push("workgroup_uniform_load(&tile[0])");
                }
            }
        }
        self.rng.pick(&options).to_string()
    }

    fn u32_atom(&mut self) -> String {
        let mut options: Vec<String> = ["0", "1", "3", "31", "4294967295"]
            .map(String::from)
            .to_vec();
        options.extend(self.constants.iter().cloned());
        if self.in_kernel {
            options.extend(
                [
                    "p.n",
                    "i",
                    "lid",
                    "global_id().y",
                    "workgroup_id().x",
                    "num_workgroups().x",
                    "local_id().x",
                    "x.len()",
                    "u[i]",
                ]
                .map(String::from),
            );
            if self.subgroups {
                options.extend(["subgroup_size()", "subgroup_invocation_id()"].map(String::from));
            }
        }
        self.rng.pick(&options).clone()
    }

    fn float_expr(&mut self, d: usize) -> String {
        let a = self.expr(Ty::F32, d);
        match self.rng.below(14) {
            0 | 1 => format!(
                "({a} {} {})",
                self.rng.pick(&["+", "-", "*", "/"]),
                self.expr(Ty::F32, d)
            ),
            2 => format!("(-{a})"),
            3 => {
                let method = self.rng.pick(&[
                    "abs",
                    "sqrt",
                    "floor",
                    "ceil",
                    "round",
                    "trunc",
                    "fract",
                    "exp",
                    "exp2",
                    "ln",
                    "log2",
                    "sin",
                    "cos",
                    "tanh",
                    "signum",
                    "recip",
                    "to_degrees",
                ]);
                format!("{a}.{method}()")
            }
            4 => format!(
                "{a}.{}({})",
                self.rng.pick(&["min", "max", "powf", "atan2"]),
                self.expr(Ty::F32, d)
            ),
            5 => format!(
                "{a}.{}({}, {})",
                self.rng.pick(&["clamp", "mul_add"]),
                self.expr(Ty::F32, d),
                self.expr(Ty::F32, d)
            ),
            6 => self.cast(&[Ty::U32, Ty::I32], "f32", d),
            7 => format!(
                "(if {} {{ {a} }} else {{ {} }})",
                self.expr(Ty::Bool, d),
                self.expr(Ty::F32, d)
            ),
            8 => format!("{{ let t = {a}; t * t }}"),
            9 => {
                let n = self.rng.pick(&[2, 3, 4]);
                match self.rng.below(3) {
                    0 => format!(
                        "{}.dot({})",
                        self.expr(Ty::Vec(n), d),
                        self.expr(Ty::Vec(n), d)
                    ),
                    1 => format!("{}.length()", self.expr(Ty::Vec(n), d)),
                    _ => format!(
                        "{}.{}",
                        self.expr(Ty::Vec(n), d),
                        self.rng.pick(&["x", "y"])
                    ),
                }
            }
            10 => self.call(Ty::F32, d).unwrap_or(a),
            11 => format!("f32::from_bits({})", self.expr(Ty::U32, d)),
            12 if self.f16 => format!("({} as f32)", self.expr(Ty::F16, d)),
            13 if self.subgroups => format!(
                "{}({a})",
                self.rng.pick(&[
                    "subgroup_add",
                    "subgroup_max",
                    "subgroup_broadcast_first",
                    "subgroup_mul",
                    "subgroup_inclusive_add",
                    "subgroup_exclusive_mul",
                ])
            ),
            _ => a,
        }
    }

    fn u32_expr(&mut self, d: usize) -> String {
        let a = self.expr(Ty::U32, d);
        match self.rng.below(12) {
            0..=2 => format!(
                "({a} {} {})",
                self.rng.pick(&["+", "-", "*", "/", "%", "&", "|", "^"]),
                self.expr(Ty::U32, d)
            ),
            3 => format!(
                "({a} {} {})",
                self.rng.pick(&["<<", ">>"]),
                self.rng.below(32)
            ),
            4 => format!(
                "{a}.{}({})",
                self.rng
                    .pick(&["min", "max", "wrapping_add", "wrapping_mul"]),
                self.expr(Ty::U32, d)
            ),
            5 => format!(
                "{a}.{}()",
                self.rng.pick(&[
                    "count_ones",
                    "leading_zeros",
                    "trailing_zeros",
                    "reverse_bits"
                ])
            ),
            6 => format!("ceil_div({a}, {})", self.expr(Ty::U32, d)),
            7 => self.cast(&[Ty::F32, Ty::I32], "u32", d),
            8 => format!("{}.to_bits()", self.expr(Ty::F32, d)),
            9 => format!(
                "(if {} {{ {a} }} else {{ {} }})",
                self.expr(Ty::Bool, d),
                self.expr(Ty::U32, d)
            ),
            10 => self.call(Ty::U32, d).unwrap_or(a),
            _ => format!("bitcast::<u32>({})", self.expr(Ty::I32, d)),
        }
    }

    fn i32_expr(&mut self, d: usize) -> String {
        let a = self.expr(Ty::I32, d);
        match self.rng.below(7) {
            0 | 1 => format!(
                "({a} {} {})",
                self.rng.pick(&["+", "-", "*", "/", "%", "&"]),
                self.expr(Ty::I32, d)
            ),
            2 => format!("(-{a})"),
            3 => format!("{a}.{}()", self.rng.pick(&["abs", "signum"])),
            4 => self.cast(&[Ty::F32, Ty::U32], "i32", d),
            5 => format!(
                "{a}.{}({})",
                self.rng.pick(&["min", "max"]),
                self.expr(Ty::I32, d)
            ),
            _ => self.call(Ty::I32, d).unwrap_or(a),
        }
    }

    fn bool_expr(&mut self, d: usize) -> String {
        match self.rng.below(5) {
            0 => format!("({} && {})", self.expr(Ty::Bool, d), self.expr(Ty::Bool, d)),
            1 => format!("({} || {})", self.expr(Ty::Bool, d), self.expr(Ty::Bool, d)),
            2 => format!("!{}", self.expr(Ty::Bool, d)),
            _ => {
                let ty = self.rng.pick(&[Ty::F32, Ty::U32, Ty::I32]);
                let op = self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", self.expr(ty, d), self.expr(ty, d))
            }
        }
    }

    fn vec_expr(&mut self, n: u8, d: usize) -> String {
        match self.rng.below(5) {
            0 => format!(
                "({} + {})",
                self.expr(Ty::Vec(n), d),
                self.expr(Ty::Vec(n), d)
            ),
            1 => format!("({} * {})", self.expr(Ty::Vec(n), d), self.expr(Ty::F32, d)),
            2 => format!("{}.normalize()", self.expr(Ty::Vec(n), d)),
            3 if n == 4 => format!("unpack_4x8_unorm({})", self.expr(Ty::U32, d)),
            _ => {
                let parts: Vec<String> = (0..n).map(|_| self.expr(Ty::F32, d)).collect();
                format!("vec{n}({})", parts.join(", "))
            }
        }
    }

    /// `(value as target)` for a value of one of `from`.
    fn cast(&mut self, from: &[Ty], target: &str, d: usize) -> String {
        let ty = self.rng.pick(from);
        format!("({} as {target})", self.expr(ty, d))
    }

    /// A call of a helper returning `ty`, when there is one.
    fn call(&mut self, ty: Ty, d: usize) -> Option<String> {
        let candidates: Vec<(String, Vec<Ty>)> = self
            .helpers
            .iter()
            .filter(|h| h.result == ty)
            .map(|h| (h.name.clone(), h.params.clone()))
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let (name, params) = self.rng.pick(&candidates).clone();
        let args: Vec<String> = params.iter().map(|t| self.expr(*t, d)).collect();
        Some(format!("{name}({})", args.join(", ")))
    }
}
