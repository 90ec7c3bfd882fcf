//! The annotated tree that `inspect` prints: one node per field, drawn with `+--` and `|`
//! branches as on the reference page.
//!
//! A list's elements are children made on demand ([`Node::lazy`]): the tree is drawn as it
//! is made, so a frame with millions of partitions never has more than one path of nodes
//! from the root alive at a time.

use std::io::{self, Write};
use std::ops::Range;

use super::style::{Palette, Region};

/// Children made as they are drawn, after [`Node::children`]: how many, and the maker.
pub struct Lazy<'a> {
    pub count: usize,
    pub nodes: Box<dyn Iterator<Item = Node<'a>> + 'a>,
}

/// One line of the tree: `name type = value [0xOFFSET, SIZE B] about`.
pub struct Node<'a> {
    pub name: String,
    pub ty: String,
    pub value: Option<String>,
    pub range: Range<usize>,
    pub about: String,
    /// How the node's bytes are coloured in the hex layout (children paint over parents).
    pub region: Option<Region>,
    /// The error line of a malformed frame.
    pub error: bool,
    pub children: Vec<Node<'a>>,
    /// More children, made one at a time as the tree is drawn (a list's elements).
    pub lazy: Option<Lazy<'a>>,
}

impl<'a> Node<'a> {
    /// `self` with `count` more children, each made by `nodes` when it is drawn.
    pub fn lazy(mut self, count: usize, nodes: impl Iterator<Item = Node<'a>> + 'a) -> Self {
        self.lazy = Some(Lazy {
            count,
            nodes: Box::new(nodes),
        });
        self
    }
}

pub fn leaf<'a>(
    name: impl Into<String>,
    ty: &str,
    value: impl ToString,
    range: Range<usize>,
    about: &str,
) -> Node<'a> {
    Node {
        name: name.into(),
        ty: ty.to_owned(),
        value: Some(value.to_string()),
        range,
        about: about.to_owned(),
        region: None,
        error: false,
        children: Vec::new(),
        lazy: None,
    }
}

pub fn group<'a>(
    name: impl Into<String>,
    ty: &str,
    value: Option<String>,
    range: Range<usize>,
    about: &str,
    children: Vec<Node<'a>>,
) -> Node<'a> {
    Node {
        name: name.into(),
        ty: ty.to_owned(),
        value,
        range,
        about: about.to_owned(),
        region: None,
        error: false,
        children,
        lazy: None,
    }
}

pub fn with_region(mut node: Node<'_>, region: Region) -> Node<'_> {
    node.region = Some(region);
    node
}

/// Draws `node` and its children, made as they are drawn, and paints each node's bytes in
/// `regions` (children over parents) on the way.
pub fn render(
    out: &mut dyn Write,
    p: &Palette,
    node: Node<'_>,
    prefix: &str,
    root: bool,
    last: bool,
    regions: &mut [Option<Region>],
) -> io::Result<()> {
    if root {
        writeln!(out, "{}", line(p, &node))?;
    } else {
        writeln!(
            out,
            "{}{prefix}+-- {}{}",
            p.dim(),
            p.reset(),
            line(p, &node)
        )?;
    }
    if let Some(region) = node.region {
        for slot in regions
            .iter_mut()
            .take(node.range.end)
            .skip(node.range.start)
        {
            *slot = Some(region);
        }
    }
    let child_prefix = if root {
        String::new()
    } else if last {
        format!("{prefix}    ")
    } else {
        format!("{prefix}|   ")
    };
    let (count, lazy) = match node.lazy {
        Some(lazy) => (node.children.len() + lazy.count, Some(lazy.nodes)),
        None => (node.children.len(), None),
    };
    let children = node.children.into_iter().chain(lazy.into_iter().flatten());
    for (i, child) in children.enumerate() {
        render(out, p, child, &child_prefix, false, i + 1 == count, regions)?;
    }
    Ok(())
}

pub fn line(p: &Palette, node: &Node<'_>) -> String {
    if node.error {
        return format!("{}{}{}", p.error(), node.name, p.reset());
    }
    let mut s = format!("{}{}{}", p.bold(), node.name, p.reset());
    if !node.ty.is_empty() {
        s.push_str(&format!(" {}{}{}", p.ty(), node.ty, p.reset()));
    }
    if let Some(value) = &node.value {
        s.push_str(&format!(" = {}{value}{}", p.value(), p.reset()));
    }
    s.push_str(&format!(
        " {}[0x{:04x}, {}B]{}",
        p.dim(),
        node.range.start,
        node.range.len(),
        p.reset()
    ));
    if !node.about.is_empty() {
        s.push(' ');
        s.push_str(&node.about);
    }
    s
}
