//! The Rust types the macro adds to a kernels module, against each other and against the
//! user's own: each kernel's launcher (`GradPre`), its arguments (`GradPreArgs`), its element
//! trait (`GradPreElement`) and its constants type (`GradPreConstants`), and each family's
//! arguments (`BackwardArgs`) and its method per member (`backward.d_x()`). Two kernels whose names differ only in underscores
//! (`conv2d`, `conv_2d`) would make the same launcher: the second is refused at its name, and
//! left out so its launcher does not collide again in rustc's errors.

use proc_macro2::Ident;

use crate::diag::Errors;
use crate::ir::{Family, Kernel, Module, Span};

/// Who holds a type name of the module.
enum Holder<'a> {
    /// A type the user declared: a `Params` struct, another struct, a set of constants, a
    /// family.
    User(&'a Ident),
    /// A type generated for the kernel (`what` it is: "launcher", ..).
    Kernel(&'a Ident, &'static str),
    /// A family's arguments type.
    Family(&'a Ident),
}

/// Reports every generated type whose name is already taken, and leaves out the kernels
/// concerned.
pub fn check(module: &mut Module, user_types: &[Ident], errors: &mut Errors) {
    let mut taken: Vec<(String, Holder<'_>)> = Vec::new();
    let user = module
        .params
        .iter()
        .map(|p| &p.name)
        .chain(user_types)
        .chain(
            module
                .constant_sets
                .iter()
                .filter(|s| s.named())
                .map(|s| &s.name),
        )
        .chain(module.families.iter().map(|f| &f.name));
    for name in user {
        taken.push((name.to_string(), Holder::User(name)));
    }
    for family in &module.families {
        member_methods(family, errors);
        let args = format!("{}Args", family.name);
        if let Some((_, holder)) = taken.iter().find(|(t, _)| *t == args) {
            let by = describe(holder);
            errors.at(
                family.name.span(),
                format!(
                    "the family `{}` gets the arguments type `{args}`, which is already {by}; \
                     rename one of them",
                    family.name
                ),
            );
        }
        taken.push((args, Holder::Family(&family.name)));
    }
    let mut refused = Vec::new();
    for (index, kernel) in module.kernels.iter().enumerate() {
        let generated = generated_types(module, kernel);
        let clash = generated.iter().find_map(|(name, what)| {
            let (_, holder) = taken.iter().find(|(t, _)| t == name)?;
            Some((name, *what, holder))
        });
        match clash {
            Some((name, what, Holder::User(user))) => errors.at(
                user.span(),
                format!(
                    "`{name}` is the name of the {what} tessera generates for the kernel `{}`; \
                     rename this struct, e.g. `{name}{}`",
                    kernel.name,
                    if module.params.iter().any(|p| p.name == **user) {
                        "Params"
                    } else {
                        "Data"
                    }
                ),
            ),
            Some((name, what, holder)) => errors.at(
                kernel.name.span(),
                format!(
                    "the kernel `{}` would get the {what} `{name}`, which is already {}; rename \
                     one of them",
                    kernel.name,
                    describe(holder)
                ),
            ),
            None => {
                for (name, what) in generated {
                    taken.push((name, Holder::Kernel(&kernel.name, what)));
                }
                continue;
            }
        }
        refused.push(index);
    }
    for index in refused.into_iter().rev() {
        module.kernels.remove(index);
    }
}

/// The methods a family's type has besides one per member (which returns that member's
/// launcher and is named like it).
const FAMILY_METHODS: [&str; 5] = ["new", "from_members", "launch", "check_lengths", "record"];

/// A family member named like one of the family's own methods would give the family type two
/// methods of one name.
fn member_methods(family: &Family, errors: &mut Errors) {
    for member in &family.members {
        if FAMILY_METHODS.iter().any(|m| member == m) {
            errors.at(
                member.span(),
                format!(
                    "the family `{}` has a method `{member}` of its own, and one per member named \
                     like the member; rename the kernel `{member}`",
                    family.name
                ),
            );
        }
    }
}

/// "the launcher of the kernel `conv2d` (line 3)".
fn describe(holder: &Holder<'_>) -> String {
    match holder {
        Holder::User(name) => format!("the name of the struct `{name}`"),
        Holder::Kernel(name, what) => format!(
            "the {what} of the kernel `{name}` (line {})",
            Span::from(name.span()).line()
        ),
        Holder::Family(name) => format!("the arguments type of the family `{name}`"),
    }
}

/// The types generated for `kernel`, with what each is.
fn generated_types(module: &Module, kernel: &Kernel) -> Vec<(String, &'static str)> {
    let launcher = kernel.launcher_name().to_string();
    let mut names = vec![
        (launcher.clone(), "launcher"),
        (format!("{launcher}Args"), "arguments type"),
    ];
    if kernel.type_param.is_some() {
        names.push((format!("{launcher}Element"), "element-type trait"));
    }
    let own_set = kernel
        .constant_set
        .and_then(|i| module.constant_sets.get(i))
        .filter(|s| !s.named());
    if let Some(set) = own_set {
        names.push((set.name.to_string(), "constants type"));
    }
    names
}
