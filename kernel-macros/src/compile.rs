//! The pipeline in one function: parse -> check -> specialize -> lower (entry-point names into
//! the IR, then WGSL) -> validate. The macro (`expand`) and the tests of every stage call
//! [`compile`]; `expand` then turns the result into Rust tokens.

use proc_macro2::TokenStream;

use crate::diag::Errors;
use crate::ir::{Feature, Instance, Module};
use crate::lower::Wgsl;
use crate::{check, lower, parse, specialize, validate};

/// A module through every stage before `expand`.
pub struct Compiled {
    pub parsed: parse::Parsed,
    /// The WGSL of every kernel; `None` when an earlier stage reported errors.
    pub wgsl: Option<Wgsl>,
    /// Narrower texts for the instances that need fewer optional features than the whole
    /// module uses (see [`narrower`]).
    pub narrower: Vec<Narrower>,
}

/// The WGSL of the instances whose features are among `features`: the text those instances
/// build from, so that they run on a device with only those features. (A module that uses
/// `enable f16;` or a subgroup operation anywhere fails to build, as a whole, on a device
/// without the feature.)
pub struct Narrower {
    pub features: Vec<Feature>,
    pub wgsl: Wgsl,
}

/// Runs the stages on `#[kernels(args)] mod item { .. }`. Errors of every stage land in
/// `errors`; `None` only when the module cannot be read at all.
pub fn compile(args: TokenStream, item: syn::ItemMod, errors: &mut Errors) -> Option<Compiled> {
    let span = item.ident.span();
    let mut parsed = parse::module(args, item, errors)?;
    check::check(&mut parsed.module, errors);
    let other_types = parsed.other_types();
    check::names::check(&mut parsed.module, &other_types, errors);
    if !errors.is_empty() {
        return Some(Compiled {
            parsed,
            wgsl: None,
            narrower: Vec::new(),
        });
    }
    specialize::specialize(&mut parsed.module, errors);
    if !errors.is_empty() {
        return Some(Compiled {
            parsed,
            wgsl: None,
            narrower: Vec::new(),
        });
    }
    lower::name_entry_points(&mut parsed.module);
    let wgsl = lower::module(&parsed.module);
    // naga validates each text on a thread of its own while the next one is lowered.
    let whole = validate::start(&wgsl.text, &parsed.module.features());
    let narrower = narrower(&mut parsed.module);
    validate::report(whole.finish(), &wgsl, span.into(), errors);
    let narrower = narrower
        .into_iter()
        .map(|(text, pending)| {
            validate::report(pending.finish(), &text.wgsl, span.into(), errors);
            text
        })
        .collect();
    Some(Compiled {
        parsed,
        wgsl: Some(wgsl),
        narrower,
    })
}

/// For each set of optional features some instance declares, the WGSL of the instances whose
/// features are among that set, when the whole module needs more: every instance then builds
/// from a text that needs nothing its own `new` has not checked the device for. Each text
/// comes with its validation, started (`validate::start`).
fn narrower(module: &mut Module) -> Vec<(Narrower, validate::Pending)> {
    let features = |i: &Instance| i.general().requirements.feature_set();
    let within = |i: &Instance, set: &[Feature]| features(i).iter().all(|f| set.contains(f));
    let mut sets: Vec<Vec<Feature>> = module
        .kernels
        .iter()
        .flat_map(|k| &k.instances)
        .map(features)
        .collect();
    sets.sort();
    sets.dedup();
    let all = module.kernels.clone();
    let mut texts = Vec::new();
    for set in sets {
        if all
            .iter()
            .flat_map(|k| &k.instances)
            .all(|i| within(i, &set))
        {
            continue;
        }
        for kernel in &mut module.kernels {
            kernel.instances.retain(|i| within(i, &set));
        }
        module.kernels.retain(|k| !k.instances.is_empty());
        let wgsl = lower::module(module);
        let pending = validate::start(&wgsl.text, &module.features());
        texts.push((
            Narrower {
                features: set,
                wgsl,
            },
            pending,
        ));
        module.kernels = all.clone();
    }
    texts
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// How long the pipeline takes on `nn/src/kernels/mod.rs`, the largest kernels module of the
    /// project (docs/guide.md's "Compile time" quotes it). Not a timed assertion: it checks the
    /// module compiles without errors and prints the time. Run it in the profile the macro is
    /// built with, e.g. `cargo test -p kernel-macros expansion_time -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints a measurement; run on demand"]
    fn expansion_time_of_the_nn_module() {
        let source = include_str!("../../nn/src/kernels/mod.rs");
        let file = syn::parse_file(source).expect("nn/src/kernels/mod.rs parses");
        let mut module = file
            .items
            .into_iter()
            .find_map(|item| match item {
                syn::Item::Mod(module) if module.ident == "nn" => Some(module),
                _ => None,
            })
            .expect("nn/src/kernels/mod.rs has the `nn` kernels module");
        // Its libraries (nn/src/kernels/*.rs) in place of its `#[device] use` items, as the
        // libraries' macros would put them.
        crate::fuzz::corpus::resolve_imports(&mut module);
        let runs = 5;
        let start = Instant::now();
        let mut bytes = 0;
        for _ in 0..runs {
            let mut errors = Errors::default();
            let compiled = compile(TokenStream::new(), module.clone(), &mut errors);
            assert!(errors.is_empty(), "the nn module compiles without errors");
            let wgsl = compiled.and_then(|c| c.wgsl);
            bytes = wgsl.map(|w| w.text.len()).expect("the nn module has WGSL");
        }
        println!(
            "expanding nn/src/kernels/mod.rs: {:.0} ms per run, {:.1} MB of WGSL",
            start.elapsed().as_secs_f64() * 1e3 / f64::from(runs),
            bytes as f64 / 1e6
        );
    }
}
