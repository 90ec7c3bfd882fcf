//! The annotated tree that `inspect` prints: one node per field, drawn with `+--` and `|`
//! branches as on the reference page.

use std::io::{self, Write};
use std::ops::Range;

use crate::style::{Palette, Region};

/// One line of the tree: `name type = value [0xOFFSET, SIZE B] about`.
pub struct Node {
    pub name: String,
    pub ty: String,
    pub value: Option<String>,
    pub range: Range<usize>,
    pub about: String,
    /// How the node's bytes are coloured in the hex layout (children paint over parents).
    pub region: Option<Region>,
    /// The error line of a malformed frame.
    pub error: bool,
    pub children: Vec<Node>,
}

pub fn leaf(
    name: impl Into<String>,
    ty: &str,
    value: impl ToString,
    range: Range<usize>,
    about: &str,
) -> Node {
    Node {
        name: name.into(),
        ty: ty.to_owned(),
        value: Some(value.to_string()),
        range,
        about: about.to_owned(),
        region: None,
        error: false,
        children: Vec::new(),
    }
}

pub fn group(
    name: impl Into<String>,
    ty: &str,
    value: Option<String>,
    range: Range<usize>,
    about: &str,
    children: Vec<Node>,
) -> Node {
    Node {
        name: name.into(),
        ty: ty.to_owned(),
        value,
        range,
        about: about.to_owned(),
        region: None,
        error: false,
        children,
    }
}

pub fn with_region(mut node: Node, region: Region) -> Node {
    node.region = Some(region);
    node
}

pub fn render(
    out: &mut dyn Write,
    p: &Palette,
    node: &Node,
    prefix: &str,
    root: bool,
    last: bool,
) -> io::Result<()> {
    if root {
        writeln!(out, "{}", line(p, node))?;
    } else {
        writeln!(out, "{}{prefix}+-- {}{}", p.dim(), p.reset(), line(p, node))?;
    }
    let child_prefix = if root {
        String::new()
    } else if last {
        format!("{prefix}    ")
    } else {
        format!("{prefix}|   ")
    };
    let count = node.children.len();
    for (i, child) in node.children.iter().enumerate() {
        render(out, p, child, &child_prefix, false, i + 1 == count)?;
    }
    Ok(())
}

pub fn line(p: &Palette, node: &Node) -> String {
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

pub fn paint(node: &Node, regions: &mut [Option<Region>]) {
    if let Some(region) = node.region {
        for slot in regions
            .iter_mut()
            .take(node.range.end)
            .skip(node.range.start)
        {
            *slot = Some(region);
        }
    }
    for child in &node.children {
        paint(child, regions);
    }
}
