//! Fragment loads and multiply-adds inside branches, written as calls. naga 30 takes a
//! function's parameters and `var`s for values that may differ between invocations, and
//! rejects a cooperative-matrix load or multiply-add inside an `if` or `switch` on one (or
//! after a `return` inside one), though the condition is uniform: a helper's `if across`
//! where every call passes a literal. `check/uniformity.rs` has already proven every such
//! operation uniform, with the whole program in view. naga checks the expressions of a
//! function, not the calls it makes, so there the operation is written as a call to a small
//! function that does only it; the driver inlines it.

use std::collections::HashMap;

/// The functions written for fragment operations in branches, one per distinct operation.
#[derive(Default)]
pub struct FragmentCalls {
    /// Function text with `{name}` for its name -> its name.
    by_text: HashMap<String, String>,
    /// Every function's name and text, in the order first asked for.
    functions: Vec<(String, String)>,
}

impl FragmentCalls {
    /// The name of a function `fn {name}(params) -> ret { return body; }`, declaring it the
    /// first time it is asked for.
    pub fn function(&mut self, params: &[String], ret: &str, body: &str) -> String {
        let text = format!(
            "fn {{name}}({}) -> {ret} {{\n    return {body};\n}}",
            params.join(", ")
        );
        if let Some(name) = self.by_text.get(&text) {
            return name.clone();
        }
        // `tsr_` names are never the user's (see `names.rs`), and no other is `tsr_fragment`;
        // the parameters' are `tsr_` names too, so they hide no variable the body names.
        let name = format!("tsr_fragment{}", self.functions.len());
        self.functions
            .push((name.clone(), text.replace("{name}", &name)));
        self.by_text.insert(text, name.clone());
        name
    }

    /// The functions' names and WGSL, in the order first asked for.
    pub fn functions(&self) -> &[(String, String)] {
        &self.functions
    }
}
