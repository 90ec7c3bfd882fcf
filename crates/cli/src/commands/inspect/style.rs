//! Colours for `inspect`: ANSI escapes on a terminal, nothing otherwise.

use std::io::IsTerminal;

use crate::flags::ColorWhen;

/// The escapes in use; all empty when colours are off.
#[derive(Clone, Copy)]
pub struct Palette {
    pub on: bool,
}

/// What part of a frame a byte belongs to, as the reference page colours them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Region {
    Frame,
    Header,
    Body,
    Tagged,
}

impl Palette {
    /// Colours on with `always`; with `auto`, only when standard output is a terminal and
    /// `NO_COLOR` is unset or empty (<https://no-color.org>).
    pub fn new(when: ColorWhen) -> Palette {
        let on = match when {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                !no_color && std::io::stdout().is_terminal()
            }
        };
        Palette { on }
    }

    fn code(&self, code: &'static str) -> &'static str {
        if self.on {
            code
        } else {
            ""
        }
    }

    pub fn reset(&self) -> &'static str {
        self.code("\x1b[0m")
    }
    pub fn bold(&self) -> &'static str {
        self.code("\x1b[1m")
    }
    pub fn dim(&self) -> &'static str {
        self.code("\x1b[2m")
    }
    pub fn ty(&self) -> &'static str {
        self.code("\x1b[36m")
    }
    pub fn value(&self) -> &'static str {
        self.code("\x1b[33m")
    }
    pub fn error(&self) -> &'static str {
        self.code("\x1b[1;31m")
    }
    /// The failing byte in the hex layout.
    pub fn error_byte(&self) -> &'static str {
        self.code("\x1b[1;37;41m")
    }

    pub fn region(&self, region: Option<Region>) -> &'static str {
        match region {
            None => self.code("\x1b[2m"),
            Some(Region::Frame) => self.code("\x1b[35m"),
            Some(Region::Header) => self.code("\x1b[34m"),
            Some(Region::Body) => self.code("\x1b[32m"),
            Some(Region::Tagged) => self.code("\x1b[33m"),
        }
    }
}
