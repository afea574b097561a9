//! The instrumentation on WGSL texts, without a device: every instrumented module validates.

use super::*;

/// Instruments `entry` of `source` and validates the result as wgpu would.
fn instrumented(source: &str, entry: &str) -> Instrumented {
    let prepared = prepare(source).unwrap_or_else(|e| panic!("{e}"));
    let instrumented = prepared.instrument(entry).unwrap_or_else(|e| panic!("{e}"));
    let mut validator = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    );
    if let Err(error) = validator.validate(&instrumented.module) {
        let f = &instrumented.module.entry_points[0].function;
        let mut text = String::new();
        for (h, e) in f.expressions.iter() {
            text += &format!("{h:?} = {e:?}\n");
        }
        text += &format!("{:?}", f.body.iter().collect::<Vec<_>>());
        panic!("{}\n{text}", error.emit_to_string(""));
    }
    instrumented
}

#[test]
fn a_compound_assignment_validates() {
    let source = "
@group(0) @binding(0) var<storage, read_write> sums: array<f32>;
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn k(@builtin(local_invocation_index) t: u32) {
    partial[t] = 1.0;
    workgroupBarrier();
    partial[t] += partial[t + 32u];
    sums[t] = partial[0];
}
";
    let i = instrumented(source, "k");
    assert_eq!(i.sites.len(), 6);
}

#[test]
fn helpers_call_checks_declared_before_them() {
    let source = "enable f16;
@group(0) @binding(0) var<storage, read_write> y: array<f16>;
var<workgroup> tile: array<array<f32, 4>, 8>;
fn put(i: u32, j: u32, v: f32) {
    tile[i][j] = v;
    workgroupBarrier();
}
fn fetch(i: i32) -> f32 { return tile[i][1]; }
@compute @workgroup_size(8, 4)
fn k(@builtin(local_invocation_id) id: vec3<u32>) {
    put(id.x, id.y, 1.0);
    y[id.x] = f16(fetch(i32(id.x)) + tile[0][0]);
}
";
    let i = instrumented(source, "k");
    let mut lines: Vec<u32> = i.sites.iter().map(|s| s.wgsl_line).collect();
    lines.sort();
    assert_eq!(lines, [5, 8, 12, 12]);
    assert_eq!(i.shadowed, [(0, 2)]);
}

#[test]
fn the_environment_variable_takes_on_or_off() {
    assert!(!wanted("").unwrap());
    assert!(!wanted("off").unwrap());
    assert!(wanted("on").unwrap());
    assert!(wanted(" ON ").unwrap());
    let error = wanted("yes").unwrap_err().to_string();
    assert!(
        error.contains("TESSERA_SANITIZE") && error.contains("`yes`"),
        "{error}"
    );
}

#[test]
fn a_module_using_the_checks_prefix_is_refused() {
    let source = "@compute @workgroup_size(1) fn tessera_sanitizer_k() {}";
    let error = prepare(source).err().expect("refused");
    assert!(error.contains("tessera_sanitizer"), "{error}");
}

#[test]
fn arrays_keep_the_rust_names_of_their_declarations() {
    let source = "
@group(0) @binding(0) var<storage, read_write> kernel_y: array<f32>; // `y` // line 4
var<workgroup> kernel_tile_2: array<vec4<f32>, 8>; // `tile` // line 5
@compute @workgroup_size(8)
fn kernel(@builtin(local_invocation_index) t: u32) {
    kernel_tile_2[t][t % 4u] = 1.0; // line 7
    workgroupBarrier(); // line 8
    kernel_y[t] = kernel_tile_2[t].x; // line 9
}
";
    let i = instrumented(source, "kernel");
    assert_eq!(i.workgroup[0].name, "tile");
    assert_eq!(i.workgroup[0].lanes, 4);
    assert_eq!(i.storage[0].name, "y");
    let lines: Vec<Option<u32>> = i.sites.iter().map(|s| s.rust_line).collect();
    assert_eq!(lines, [Some(7), Some(9), Some(9)]);
}

/// The calls of the instrumented entry point's body, in order, by the prelude's names
/// (`log`, `apply`, ...), nested blocks flattened.
fn calls(i: &Instrumented) -> Vec<String> {
    fn walk(module: &naga::Module, block: &naga::Block, out: &mut Vec<String>) {
        for statement in block.iter() {
            match statement {
                naga::Statement::Call { function, .. } => {
                    let name = module.functions[*function].name.clone().unwrap_or_default();
                    out.push(name.trim_start_matches("tessera_sanitizer_").to_owned());
                }
                naga::Statement::Block(inner) => walk(module, inner, out),
                naga::Statement::If { accept, reject, .. } => {
                    walk(module, accept, out);
                    walk(module, reject, out);
                }
                naga::Statement::Loop {
                    body, continuing, ..
                } => {
                    out.push("loop".into());
                    walk(module, body, out);
                    walk(module, continuing, out);
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&i.module, &i.module.entry_points[0].function.body, &mut out);
    out
}

#[test]
fn long_runs_are_logged_and_applied_at_loop_turns_and_on_return() {
    let run: String = (0..12)
        .map(|k| format!("        s[t] += s[(t + d * {k}u) % 64u];\n"))
        .collect();
    let source = format!(
        "
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
var<workgroup> s: array<f32, 64>;
@compute @workgroup_size(64)
fn k(@builtin(local_invocation_index) t: u32) {{
    s[t] = y[t];
    workgroupBarrier();
    for (var d = 0u; d < 4u; d++) {{
{run}    }}
    y[t] = s[t];
}}
"
    );
    let i = instrumented(&source, "k");
    let calls: Vec<String> = calls(&i)
        .into_iter()
        .filter(|c| !c.starts_with("place") && c != "enter" && c != "regions")
        .collect();
    // The few accesses before the barrier and after the loop are checked where they are made
    // (`here_s0` and `here_w0` find their shadows); the loop's 36 are logged, and its log
    // applied at each turn and before the entry point returns, checking only the kinds it
    // may hold (`apply_3`: workgroup reads and writes).
    let logs = vec!["log"; 36];
    let expected: Vec<&str> = [
        "here_s0", "here_31", "here_w0", "here_31", "barrier", "loop",
    ]
    .into_iter()
    .chain(["apply_3"])
    .chain(logs)
    .chain([
        "here_w0", "here_31", "here_s0", "here_31", "apply_3", "flush",
    ])
    .collect();
    assert_eq!(calls, expected);
}

#[test]
fn a_long_run_of_accesses_never_overfills_the_log() {
    let mut body = String::new();
    for n in 0..150 {
        body += &format!("    y[{n}] = y[{n} + 1] + 1.0;\n");
        if n == 40 {
            body += "    if t == 0u { helper(); }\n";
        }
    }
    let helper: String = (0..50).map(|n| format!("    y[{n}] = 0.0;\n")).collect();
    let source = format!(
        "
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
fn helper() {{
{helper}}}
@compute @workgroup_size(1)
fn k(@builtin(local_invocation_index) t: u32) {{
{body}}}
"
    );
    let i = instrumented(&source, "k");
    // In the entry point's straight-line body (the helper's 50 entries counted at its call).
    let mut held = 0;
    let mut most = 0;
    for call in calls(&i) {
        match call.as_str() {
            "log" => held += 1,
            "helper" => held += 50,
            apply if apply.starts_with("apply_") => held = 0,
            _ => {}
        }
        most = most.max(held);
    }
    assert!(most <= 64, "{most} entries held");
    assert_eq!(i.sites.len(), 350);
}
