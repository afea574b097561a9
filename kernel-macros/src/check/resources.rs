//! What one kernel may declare under WebGPU's default limits and WGSL's implementation
//! limits, beyond the workgroup size and workgroup memory (`check::limits`): storage buffers
//! per kernel, elements per array, and bytes of local variables per function.
//! Each is checked per instance (constants change array lengths) and reported at the
//! declaration that goes past the limit, with the limit and the amount.

use crate::diag::Errors;
use crate::ir::{
    repeats_through_a_loop, visit_expr, Binding, BindingKind, Block, ExprKind, Function, ParamKind,
    Span, StmtKind, Ty, Variant,
};

/// WebGPU's default `maxStorageBuffersPerShaderStage`.
pub const MAX_STORAGE_BUFFERS: usize = 8;
/// WGSL's limit on the elements of a fixed-size array (Tint refuses 65536 and more).
pub const MAX_ARRAY_ELEMENTS: u32 = 65535;
/// WGSL's limit on the bytes of function-address-space variables of one function.
pub const MAX_FUNCTION_MEMORY: u64 = 8192;

/// Checks one instance's kernel (after its types are known) and the helpers it calls.
pub fn check(kernel: &Variant, instance: &str, errors: &mut Errors) {
    buffers(kernel, errors);
    for shared in &kernel.shared {
        array_elements(
            &shared.ty,
            &shared.name.to_string(),
            shared.span,
            instance,
            errors,
        );
    }
    let name = format!("the kernel `{}`", kernel.name);
    function(&kernel.body, 0, &name, instance, errors);
    for helper in &kernel.helpers {
        self::helper(helper, instance, errors);
    }
}

/// Checks a helper: its local arrays and its local memory.
pub fn helper(helper: &Function, instance: &str, errors: &mut Errors) {
    // A `mut` value parameter is copied into a variable.
    let copies = helper
        .params
        .iter()
        .filter(|p| p.kind == ParamKind::Value && p.mutable)
        .map(|p| u64::from(p.ty.size_align().0))
        .sum();
    let name = format!("the helper `{}`", crate::ir::written_name(&helper.name));
    function(&helper.body, copies, &name, instance, errors);
}

/// Storage buffers against WebGPU's default limit per shader stage. (Uniform buffers, 12 by
/// default, need no check: a kernel takes at most one `Params` struct, and the launcher of a
/// kernel that uses invocation ids passes its grid in one more.)
fn buffers(kernel: &Variant, errors: &mut Errors) {
    let storage: Vec<&Binding> = kernel
        .bindings
        .iter()
        .filter(|b| matches!(b.kind, BindingKind::Storage { .. }))
        .collect();
    if let Some(first_over) = storage.get(MAX_STORAGE_BUFFERS) {
        errors.at(
            first_over.span,
            format!(
                "`{}` is storage buffer number {} of the kernel `{}`, and WebGPU's \
                 default limit is {MAX_STORAGE_BUFFERS} per kernel \
                 (maxStorageBuffersPerShaderStage); pass fewer buffers, e.g. by keeping several \
                 arrays in one",
                first_over.name,
                MAX_STORAGE_BUFFERS + 1,
                kernel.name,
            ),
        );
    }
}

/// Reports an array type (or an array inside it) of more elements than WGSL allows.
fn array_elements(ty: &Ty, name: &str, span: Span, instance: &str, errors: &mut Errors) {
    let Ty::Array(element, len) = ty else {
        return;
    };
    if *len > MAX_ARRAY_ELEMENTS {
        errors.at(
            span,
            format!(
                "{instance}`{name}` is an array of {len} elements, and WebGPU's WGSL compilers \
                 (Tint) take at most {MAX_ARRAY_ELEMENTS} in one array; split it into several \
                 arrays, or use vectors (`Vec4<f32>`) as elements"
            ),
        );
        return;
    }
    array_elements(element, name, span, instance, errors);
}

/// The local variables of one function: each local array's elements, and their total size
/// against WGSL's limit, counted as lowering declares them (`var`s: mutable locals, arrays,
/// locals declared without a value, loop counters, temporaries of `if` and `match` values; an
/// `#[unroll]`ed loop declares its body's once per iteration).
fn function(body: &Block, copies: u64, name: &str, instance: &str, errors: &mut Errors) {
    let mut memory = Memory {
        used: copies,
        reported: false,
        fills: false,
        name,
        instance,
    };
    memory.block(body, 1, errors);
}

struct Memory<'a> {
    used: u64,
    reported: bool,
    /// Whether a `[value; n]` filled through a temporary array was counted.
    fills: bool,
    name: &'a str,
    instance: &'a str,
}

impl Memory<'_> {
    fn block(&mut self, block: &Block, times: u64, errors: &mut Errors) {
        for stmt in block {
            self.temporaries(stmt, times, errors);
            match &stmt.kind {
                StmtKind::Let {
                    name,
                    mutable,
                    init,
                    ty,
                    ..
                } => {
                    let text = name.to_string();
                    array_elements(ty, &text, stmt.span, self.instance, errors);
                    if *mutable || init.is_none() || matches!(ty, Ty::Array(..)) {
                        self.add(ty, times, &format!("`{text}`"), stmt.span, errors);
                    }
                }
                StmtKind::For(l) => match l.unroll.then(|| l.unroll_values()).flatten() {
                    Some(values) => {
                        let times = times.saturating_mul(values.len() as u64);
                        self.block(&l.body, times, errors);
                    }
                    None => {
                        // The counter and the loop's bounds.
                        let what = "this loop's counter";
                        self.add(&l.ty, times.saturating_mul(3), what, stmt.span, errors);
                        self.block(&l.body, times, errors);
                    }
                },
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    self.block(then, times, errors);
                    if let Some(otherwise) = otherwise {
                        self.block(otherwise, times, errors);
                    }
                }
                StmtKind::While { body, .. } | StmtKind::Loop(body) | StmtKind::Block(body) => {
                    self.block(body, times, errors)
                }
                StmtKind::Match { arms, .. } => {
                    for arm in arms {
                        self.block(&arm.body, times, errors);
                    }
                }
                StmtKind::Assign { .. }
                | StmtKind::Expr(_)
                | StmtKind::Break
                | StmtKind::Continue
                | StmtKind::Return(_) => {}
            }
        }
    }

    /// The variables lowering declares for `if`, `match` and blocks used as values, and for
    /// `[value; n]` filled by a loop, in the statement's own expressions (those in nested
    /// statements are counted with them).
    fn temporaries(&mut self, stmt: &crate::ir::Stmt, times: u64, errors: &mut Errors) {
        let exprs: Vec<&crate::ir::Expr> = match &stmt.kind {
            StmtKind::Let { init, .. } => init.iter().collect(),
            StmtKind::Assign { target, value, .. } => vec![target, value],
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) => vec![e],
            StmtKind::If { cond, .. } | StmtKind::While { cond, .. } => vec![cond],
            StmtKind::Match { scrutinee, .. } => vec![scrutinee],
            StmtKind::For(l) => [&l.start, &l.end].into_iter().chain(&l.step).collect(),
            _ => Vec::new(),
        };
        let mut found = Vec::new();
        for e in exprs {
            visit_expr(e, &mut |e| match &e.kind {
                ExprKind::If(..) | ExprKind::Match(..) | ExprKind::Block(..) => {
                    found.push((e.ty.clone(), e.span, false))
                }
                ExprKind::Repeat(value, n) if repeats_through_a_loop(value, *n) => {
                    found.push((e.ty.clone(), e.span, true))
                }
                _ => {}
            });
        }
        for (ty, span, fill) in found {
            self.fills |= fill;
            self.add(&ty, times, "this value", span, errors);
        }
    }

    /// Adds `times` variables of type `ty`; reports the first that goes past the limit.
    fn add(&mut self, ty: &Ty, times: u64, what: &str, span: Span, errors: &mut Errors) {
        let bytes = u64::from(ty.size_align().0).saturating_mul(times);
        self.used = self.used.saturating_add(bytes);
        if self.used <= MAX_FUNCTION_MEMORY || self.reported {
            return;
        }
        self.reported = true;
        let what = if times > 1 {
            format!(
                "{what} (declared {times} times by `#[unroll]`, {} bytes each)",
                ty.size_align().0
            )
        } else {
            format!("{what} ({bytes} bytes)")
        };
        let fills = if self.fills {
            ", counting the temporary array each `[value; n]` of a non-zero value is filled in"
        } else {
            ""
        };
        errors.at(
            span,
            format!(
                "{}{what} brings the local variables of {} to {} bytes{fills}, and WGSL allows \
                 {} bytes of local variables per function; keep large arrays in workgroup \
                 memory (`#[workgroup] name: &mut [T; N]`) or in a buffer",
                self.instance, self.name, self.used, MAX_FUNCTION_MEMORY
            ),
        );
    }
}
