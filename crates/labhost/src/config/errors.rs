//! [`BoardError`]: why a board file was refused, as one line that names the
//! file and the line (`lab.toml:7: unknown chip "w25q12" (known: …)`), and
//! [`Source`], which turns byte offsets into line numbers.

use std::fmt;
use std::ops::Range;

/// Why a board file could not be loaded or built: one line, naming the file
/// and, where the mistake has a place, its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardError {
    /// The file, as the caller named it.
    pub file: String,
    /// 1-based line of the mistake (of the table it is in, for a missing
    /// key or a device that could not be built); `None` for the file as a
    /// whole (it could not be read).
    pub line: Option<usize>,
    /// What is wrong and what is allowed, on one line.
    pub message: String,
}

impl fmt::Display for BoardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for BoardError {}

/// A board file's text and name, for errors.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The name errors give the file.
    pub name: &'a str,
    /// Its contents.
    pub text: &'a str,
}

impl Source<'_> {
    /// The 1-based line holding byte `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|&&b| b == b'\n').count() + 1
    }

    /// An error at the line where `span` starts.
    pub fn error(&self, span: Range<usize>, message: impl Into<String>) -> BoardError {
        self.error_at_line(self.line_of(span.start), message)
    }

    /// An error at `line`.
    pub fn error_at_line(&self, line: usize, message: impl Into<String>) -> BoardError {
        BoardError { file: self.name.to_owned(), line: Some(line), message: one_line(&message.into()) }
    }

    /// A parse error from the `toml` crate (syntax, unknown key, wrong type).
    pub fn toml_error(&self, e: &toml::de::Error) -> BoardError {
        let mut message = one_line(e.message());
        if message.is_empty() {
            // `toml` gives no text for some errors (a control character in
            // a comment): name the character it stopped at.
            let at = e.span().and_then(|s| self.text.get(s.start..)).and_then(|t| t.chars().next());
            message = match at {
                Some(c) => format!("character {c:?} is not allowed here (TOML)"),
                None => "not valid TOML".to_owned(),
            };
        }
        match e.span() {
            Some(span) => match self.key_of_value_at(span.start) {
                Some(key) => self.error(span, format!("{key}: {message}")),
                None => self.error(span, message),
            },
            None => BoardError { file: self.name.to_owned(), line: None, message },
        }
    }

    /// The key of the `key = value` line whose value holds byte `offset`
    /// (`toml` names the value's type, not its key).
    fn key_of_value_at(&self, offset: usize) -> Option<&str> {
        let start = self.text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
        let (key, _) = self.text[start..offset].split_once('=')?;
        let key = key.trim();
        let bare = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        bare.then_some(key)
    }
}

/// `text` with its line breaks turned into `; `, so an error stays one line.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}
