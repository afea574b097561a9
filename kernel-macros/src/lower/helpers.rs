//! Which WGSL functions the helpers become. A helper is a device function: it sees the
//! constants of the instance that calls it and may be lent that instance's workgroup arrays,
//! local arrays, buffers and parameters. WGSL lets a function take a pointer only to function
//! (or private) memory, so a helper becomes one WGSL function per distinct use: lent workgroup
//! arrays, buffers and parameters are named directly (they are module-scope variables), lent
//! local arrays arrive as `ptr<function, ...>` parameters. Copies that come out the same (same
//! tokens after constants, same lent variables, same callees) are written once.

use std::collections::HashMap;

use crate::ir::{Entry, Expr, ExprKind, Function, Variant};
use crate::lower::names::Names;

/// Where a reference parameter of a helper copy points.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Lent {
    /// A module-scope variable: a binding or a workgroup array, by its WGSL name.
    Global(String),
    /// The caller's local array, through a `ptr<function, ...>` parameter.
    Pointer,
}

/// The place an argument lends: a module-scope variable named in `context`, or a local array.
pub fn lent(arg: &Expr, context: &HashMap<String, Lent>) -> Lent {
    let place = match &arg.kind {
        ExprKind::Ref(_, inner) => inner,
        _ => arg,
    };
    match &place.kind {
        ExprKind::Path(name, None) => context
            .get(&name.to_string())
            .cloned()
            .unwrap_or_else(|| Lent::Global(name.to_string())),
        _ => Lent::Pointer,
    }
}

/// One WGSL function made from a helper.
pub struct Copy {
    /// The entry (in [`crate::ir::Module::entries`] order) whose helper list holds it, and its
    /// index there.
    pub kernel: usize,
    pub helper: usize,
    /// Its reference parameters' places, by name.
    pub lent: HashMap<String, Lent>,
    pub name: String,
}

/// Every WGSL function made from helpers, and which one each call uses.
#[derive(Default)]
pub struct Copies {
    pub copies: Vec<Copy>,
    /// (kernel, helper name, places of its reference parameters) -> WGSL name.
    by_use: HashMap<(usize, String, Vec<Lent>), String>,
    /// (fingerprint, places, callees) -> WGSL name, so equal copies are written once.
    by_content: HashMap<(String, Vec<Lent>, Vec<String>), String>,
}

impl Copies {
    /// Plans the copies every kernel needs; their names are claimed in `names`.
    pub fn plan(
        entries: &[Entry<'_>],
        kernel_vars: &[HashMap<String, String>],
        names: &mut Names,
    ) -> Self {
        let mut copies = Copies::default();
        for (index, entry) in entries.iter().enumerate() {
            let kernel = entry.variant;
            let context = kernel_vars[index]
                .iter()
                .map(|(name, wgsl)| (name.clone(), Lent::Global(wgsl.clone())))
                .collect();
            copies.calls_in(index, kernel, &kernel.body, &context, names);
        }
        copies
    }

    /// The WGSL name of the copy of `helper` that a call from `kernel` lending `places` uses.
    pub fn name(&self, kernel: usize, helper: &str, places: Vec<Lent>) -> Option<&str> {
        self.by_use
            .get(&(kernel, helper.to_owned(), places))
            .map(String::as_str)
    }

    /// Plans the copies the helper calls in `body` need; returns their names in call order.
    fn calls_in(
        &mut self,
        index: usize,
        kernel: &Variant,
        body: &crate::ir::Block,
        context: &HashMap<String, Lent>,
        names: &mut Names,
    ) -> Vec<String> {
        let mut called = Vec::new();
        crate::ir::visit_exprs(body, &mut |e| {
            if let ExprKind::Call(name, args) = &e.kind {
                called.push((name.to_string(), args.clone()));
            }
        });
        let mut out = Vec::new();
        for (name, args) in called {
            let Some(position) = kernel.helpers.iter().position(|h| h.name == name) else {
                continue;
            };
            let helper = &kernel.helpers[position];
            let places = places(helper, &args, context);
            out.push(self.copy(index, kernel, position, places, names));
        }
        out
    }

    fn copy(
        &mut self,
        index: usize,
        kernel: &Variant,
        position: usize,
        places: Vec<Lent>,
        names: &mut Names,
    ) -> String {
        let helper = &kernel.helpers[position];
        let use_key = (index, helper.name.to_string(), places.clone());
        if let Some(name) = self.by_use.get(&use_key) {
            return name.clone();
        }
        let lent: HashMap<String, Lent> = helper
            .reference_params()
            .map(|p| p.name.to_string())
            .zip(places.iter().cloned())
            .collect();
        let callees = self.calls_in(index, kernel, &helper.body, &lent, names);
        let content_key = (helper.fingerprint.clone(), places, callees);
        let name = match self.by_content.get(&content_key) {
            Some(name) => name.clone(),
            None => {
                let name = names.claim(&crate::ir::wgsl_base_name(&helper.name));
                self.by_content.insert(content_key, name.clone());
                self.copies.push(Copy {
                    kernel: index,
                    helper: position,
                    lent,
                    name: name.clone(),
                });
                name
            }
        };
        self.by_use.insert(use_key, name.clone());
        name
    }
}

/// What a call lends each reference parameter of `helper`.
pub fn places(helper: &Function, args: &[Expr], context: &HashMap<String, Lent>) -> Vec<Lent> {
    helper
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| p.kind != crate::ir::ParamKind::Value)
        .map(|(_, arg)| lent(arg, context))
        .collect()
}
