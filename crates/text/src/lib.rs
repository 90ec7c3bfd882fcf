//! Text a peer sent, made safe to show.
//!
//! Topic names, client ids, principals and a broker's advertised host name come off the
//! wire and end up in a log line, an HTML page or a terminal. Shown as they are, a newline
//! in one writes a log line of the peer's choosing, markup in one writes into a page, and a
//! bidi control (U+202E) makes a line read otherwise than its bytes. The workspace's crates
//! (the guard's diagnostics and status page, the tool's HTML summary) all show such text
//! through this one crate, so that they escape it alike:
//!
//! - [`is_hidden`]: the characters a reader does not see but that change how the text
//!   around them reads;
//! - [`one_line`]: a log line, control characters and hidden ones written as escapes;
//! - [`html`]: text for an HTML element or a quoted attribute value.
//!
//! It depends on nothing and allocates only when something must be escaped (`one_line`) or
//! for the result (`html`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is a character a reader does not see but that changes how text around it
/// reads: Unicode's format characters (general category Cf, as of Unicode 15.1: the bidi
/// controls U+061C, U+200E, U+200F, U+202A to U+202E and U+2066 to U+2069, zero-width
/// characters, the byte order mark, tag characters...) and the line and paragraph
/// separators U+2028 and U+2029. Control characters (Cc) are not among them: every user of
/// this crate escapes those already.
///
/// ```
/// use kafka_elect_leaders_text::is_hidden;
/// assert!(is_hidden('\u{202e}'));
/// assert!(!is_hidden('é') && !is_hidden('\n'));
/// ```
pub fn is_hidden(c: char) -> bool {
    /// General category Cf (Unicode 15.1), then Zl and Zp.
    const HIDDEN: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x2028, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];
    let c = u32::from(c);
    // Everything below U+00AD is ASCII or Latin-1: the common case, decided at once.
    c >= 0xAD
        && HIDDEN
            .binary_search_by(|&(first, last)| {
                if last < c {
                    std::cmp::Ordering::Less
                } else if first > c {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

/// `message` as one line: control characters (a newline, a carriage return, an escape
/// sequence) written escaped as Rust writes them (`\n`, `\u{1b}`), and so are the
/// characters [`is_hidden`] finds, as `\u{202e}`. Borrowed when there is nothing to escape.
/// A backslash is not escaped, so escaping twice changes nothing more.
///
/// ```
/// use kafka_elect_leaders_text::one_line;
/// assert_eq!(one_line("broker\nFAKE LINE"), "broker\\nFAKE LINE");
/// assert_eq!(one_line("abc\u{202e}def"), "abc\\u{202e}def");
/// assert_eq!(one_line(&one_line("a\nb")), "a\\nb");
/// ```
pub fn one_line(message: &str) -> Cow<'_, str> {
    if !message.chars().any(|c| c.is_control() || is_hidden(c)) {
        return Cow::Borrowed(message);
    }
    let mut out = String::with_capacity(message.len() + 8);
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else if is_hidden(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for HTML, in an element or in an attribute's quoted value (single or double
/// quotes): `&`, `<`, `>`, `"` and `'` as entities, a control character as U+FFFD (HTML
/// has no way to show one), a character [`is_hidden`] finds as its code (`\u{202e}`), so
/// that a bidi control cannot turn the rest of a table cell around.
///
/// ```
/// use kafka_elect_leaders_text::html;
/// assert_eq!(html("a\"b'c&d<e>"), "a&quot;b&#39;c&amp;d&lt;e&gt;");
/// assert_eq!(html("x\u{202e}y\u{7}"), "x\\u{202e}y\u{fffd}");
/// ```
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c if is_hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character of the table is hidden, its neighbours are not (the table's ranges
    /// are sorted and do not overlap, or the binary search would miss some).
    #[test]
    fn the_table_finds_its_ranges_and_nothing_beside_them() {
        for (first, last) in [
            (0x00AD, 0x00AD),
            (0x200B, 0x200F),
            (0x2028, 0x202E),
            (0x2066, 0x206F),
            (0xE0020, 0xE007F),
        ] {
            for c in first..=last {
                assert!(is_hidden(char::from_u32(c).unwrap()), "{c:x}");
            }
            for c in [first - 1, last + 1] {
                assert!(!is_hidden(char::from_u32(c).unwrap()), "{c:x}");
            }
        }
        assert!((0u32..0xAD)
            .filter_map(char::from_u32)
            .all(|c| !is_hidden(c)));
    }

    /// Whatever a peer sent, the line has no control character and nothing hidden left,
    /// and what needed no escape is borrowed.
    #[test]
    fn one_line_leaves_nothing_to_break_or_turn_a_line() {
        let nasty = "a\r\nb\u{1b}[31mc\u{202e}d\u{2028}e\u{feff}f\u{0}";
        let shown = one_line(nasty);
        assert!(
            !shown.chars().any(|c| c.is_control() || is_hidden(c)),
            "{shown}"
        );
        assert_eq!(
            shown,
            "a\\r\\nb\\u{1b}[31mc\\u{202e}d\\u{2028}e\\u{feff}f\\0"
        );
        assert!(matches!(one_line("tópico 🚀 \"quoted\""), Cow::Borrowed(_)));
    }

    #[test]
    fn html_leaves_no_markup_and_nothing_hidden() {
        let shown = html("<script>alert('x')</script>&\u{202e}\u{0}\"");
        assert!(
            !shown.contains(['<', '>', '\'', '"', '\u{202e}', '\u{0}']),
            "{shown}"
        );
        assert_eq!(
            shown,
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;\\u{202e}\u{fffd}&quot;"
        );
        assert_eq!(html("tópico 🚀"), "tópico 🚀");
    }
}

// The README's example is compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
