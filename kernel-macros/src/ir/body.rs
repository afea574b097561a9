//! The bodies of kernels and helpers: statements, expressions, operators and loops, as
//! `parse/` writes them and `check/` types them.

use proc_macro2::Ident;

use super::builtins::{self, Builtin, Form};
use super::{written_name, Span, Ty};

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

/// `text` without the parentheses around all of it (`(a + b)` -> `a + b`), as
/// [`Expr::rust_text`] and the WGSL writer put around operations.
pub fn strip_parens(text: &str) -> &str {
    match text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        Some(inner) if balanced(inner) => inner,
        _ => text,
    }
}

/// Whether every `(` in `text` is closed, in order (so outer parentheses can be dropped).
fn balanced(text: &str) -> bool {
    let mut depth = 0i32;
    for c in text.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth < 0 {
            return false;
        }
    }
    depth == 0
}
