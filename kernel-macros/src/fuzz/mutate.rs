//! Token-level mutations of the project's modules: delete, duplicate, swap and move tokens,
//! replace literals with edge values and identifiers with reserved words or odd names, change
//! types and operators, nest a token deeply. Each mutation keeps delimiters balanced (a token
//! stream cannot hold anything else), so the macro sees what rustc would hand it.

use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};

use super::rng::Rng;

/// Literals that sit on an edge: zero, one past a type's range, a float past `f32`, ...
const EDGE_LITERALS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "32",
    "64",
    "255",
    "256",
    "1024",
    "65535",
    "65536",
    "262144",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "18446744073709551616",
    "99999999999999999999999999999999999999999",
    "0u32",
    "1i32",
    "7u8",
    "3u64",
    "5usize",
    "0.0",
    "-0.0",
    "0.5",
    "1e39",
    "1e-50",
    "3.4028235e38",
    "65504.0",
    "65520.0",
    "1.0f16",
    "2.5f64",
    "1e10",
    "0x7fff_ffff",
    "0xffff_ffff",
    "0b1",
    "0o17",
    "1_000",
    "'a'",
    "\"text\"",
    "b'x'",
    "true",
    "false",
];

/// Identifiers that are reserved somewhere (Rust, WGSL, tessera) or odd.
const ODD_IDENTS: &[&str] = &[
    "match",
    "r#match",
    "r#type",
    "r#loop",
    "self_",
    "_3x3",
    "__",
    "_",
    "_x",
    "x_",
    "Self",
    "self",
    "super",
    "crate",
    "fn",
    "let",
    "mut",
    "loop",
    "while",
    "async",
    "dyn",
    "f16",
    "f32",
    "u32",
    "i32",
    "bool",
    "u64",
    "usize",
    "vec2",
    "vec4",
    "array",
    "ptr",
    "var",
    "override",
    "const_assert",
    "workgroup",
    "storage",
    "uniform",
    "bitcast",
    "main",
    "tsr_x",
    "WGSL",
    "global_id",
    "local_index",
    "workgroup_barrier",
    "ceil_div",
    "min",
    "abs",
    "T",
    "Vec4",
    "Vec3",
    "AtomicU32",
    "Option",
    "None",
    "Some",
    "été",
    "x1234567890123456789012345678901234567890",
];

const TYPES: &[&str] = &[
    "f32",
    "u32",
    "i32",
    "f16",
    "bool",
    "u64",
    "f64",
    "usize",
    "Vec2",
    "Vec3",
    "Vec4",
    "AtomicU32",
    "AtomicI32",
];

const PUNCTS: &[char] = &[
    '+', '-', '*', '/', '%', '&', '|', '^', '<', '>', '=', '!', '.', ',', ';', ':', '#', '?', '@',
    '~',
];

/// A token tree that can be edited in place.
#[derive(Clone)]
enum Node {
    Leaf(TokenTree),
    Group(Delimiter, Span, Vec<Node>),
}

/// `module` after `count` random mutations.
pub fn mutate(module: TokenStream, rng: &mut Rng, count: usize) -> TokenStream {
    let mut nodes = tree(module);
    for _ in 0..count {
        let total = size(&nodes);
        let target = rng.below(total);
        let words = words(&nodes);
        edit(&mut nodes, target, rng, &words);
    }
    stream(&nodes)
}

fn tree(tokens: TokenStream) -> Vec<Node> {
    tokens
        .into_iter()
        .map(|t| match t {
            TokenTree::Group(g) => Node::Group(g.delimiter(), g.span(), tree(g.stream())),
            leaf => Node::Leaf(leaf),
        })
        .collect()
}

fn stream(nodes: &[Node]) -> TokenStream {
    nodes
        .iter()
        .map(|n| match n {
            Node::Leaf(t) => t.clone(),
            Node::Group(d, span, inner) => {
                let mut group = Group::new(*d, stream(inner));
                group.set_span(*span);
                TokenTree::Group(group)
            }
        })
        .collect()
}

fn size(nodes: &[Node]) -> usize {
    nodes
        .iter()
        .map(|n| match n {
            Node::Leaf(_) => 1,
            Node::Group(_, _, inner) => 1 + size(inner),
        })
        .sum()
}

/// The module's identifiers, to move names around.
fn words(nodes: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for node in nodes {
        match node {
            Node::Leaf(TokenTree::Ident(i)) => out.push(i.to_string()),
            Node::Group(_, _, inner) => out.extend(words(inner)),
            Node::Leaf(_) => {}
        }
    }
    out
}

/// Edits the `target`th node (pre-order) in its parent list; `target` counts down.
fn edit(nodes: &mut Vec<Node>, mut target: usize, rng: &mut Rng, words: &[String]) -> usize {
    let mut i = 0;
    while i < nodes.len() {
        if target == 0 {
            apply(nodes, i, rng, words);
            return usize::MAX;
        }
        target -= 1;
        if let Node::Group(_, _, inner) = &mut nodes[i] {
            let inner_size = size(inner);
            if target < inner_size {
                edit(inner, target, rng, words);
                return usize::MAX;
            }
            target -= inner_size;
        }
        i += 1;
    }
    target
}

fn apply(nodes: &mut Vec<Node>, i: usize, rng: &mut Rng, words: &[String]) {
    match rng.below(12) {
        0 | 1 => {
            nodes.remove(i);
        }
        2 => nodes.insert(i, nodes[i].clone()),
        3 if i + 1 < nodes.len() => nodes.swap(i, i + 1),
        4 => {
            let node = nodes.remove(i);
            let to = rng.below(nodes.len() + 1);
            nodes.insert(to, node);
        }
        5 | 6 => nodes[i] = parsed(rng.pick(EDGE_LITERALS)),
        7 => nodes[i] = Node::Leaf(ident(rng.pick(ODD_IDENTS))),
        8 => nodes[i] = Node::Leaf(ident(rng.pick(TYPES))),
        9 if !words.is_empty() => nodes[i] = Node::Leaf(ident(&rng.pick(words))),
        10 => {
            nodes[i] = Node::Leaf(TokenTree::Punct(Punct::new(
                rng.pick(PUNCTS),
                Spacing::Alone,
            )))
        }
        _ => nodes[i] = nested(nodes[i].clone(), rng),
    }
}

/// `node` inside many parentheses, or negated many times, or summed with itself many times.
fn nested(node: Node, rng: &mut Rng) -> Node {
    let depth = match rng.below(10) {
        0 if super::STRESS => rng.between(200, 3000),
        _ => rng.between(1, 40),
    };
    match rng.below(3) {
        0 => (0..depth).fold(node, |inner, _| {
            Node::Group(Delimiter::Parenthesis, Span::call_site(), vec![inner])
        }),
        1 => {
            let mut nodes: Vec<Node> = (0..depth)
                .map(|_| Node::Leaf(TokenTree::Punct(Punct::new('-', Spacing::Alone))))
                .collect();
            nodes.push(node);
            Node::Group(Delimiter::None, Span::call_site(), nodes)
        }
        _ => {
            let mut nodes = vec![node.clone()];
            for _ in 0..depth {
                nodes.push(Node::Leaf(TokenTree::Punct(Punct::new(
                    '+',
                    Spacing::Alone,
                ))));
                nodes.push(node.clone());
            }
            Node::Group(Delimiter::Parenthesis, Span::call_site(), nodes)
        }
    }
}

/// `text`'s tokens as one node (`-0.0` is two tokens).
fn parsed(text: &str) -> Node {
    let mut nodes = tree(text.parse().unwrap_or_default());
    match nodes.len() {
        1 => nodes.remove(0),
        0 => Node::Leaf(TokenTree::Literal(Literal::u32_unsuffixed(0))),
        _ => Node::Group(Delimiter::None, Span::call_site(), nodes),
    }
}

fn ident(text: &str) -> TokenTree {
    match text
        .parse::<TokenStream>()
        .ok()
        .and_then(|s| s.into_iter().next())
    {
        Some(tree @ TokenTree::Ident(_)) => tree,
        _ => TokenTree::Ident(Ident::new("x", Span::call_site())),
    }
}
