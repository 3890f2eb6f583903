//! The segments of `wirespeed spi ... xfer`: hex bytes, `r:N`, `w:HEX` and
//! a lone `/` (cs_change), parsed into transfers or refused with what was
//! wrong and what is allowed.

use std::fmt;

/// What a segment may be, for error messages and help.
const ALLOWED: &str = "a segment is hex bytes (9f000000, 0x9f_00_00_00, 9f:00:00:00), r:N (read N bytes, sending \
                       zeros) or w:HEX (write only); a lone / between two segments drops CS between them";

/// The most bytes one `r:N` segment reads.
pub const MAX_READ: usize = 1 << 20;

/// What a transfer does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Sends these bytes and keeps as many received.
    Duplex(Vec<u8>),
    /// Sends this many zero bytes and keeps what comes back.
    Read(usize),
    /// Sends these bytes, ignores what comes back.
    Write(Vec<u8>),
}

impl Op {
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Duplex(_) => "duplex",
            Op::Read(_) => "read",
            Op::Write(_) => "write",
        }
    }
}

/// One transfer of the message, parsed from a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// What it does.
    pub op: Op,
    /// Whether CS drops after it (a `/` follows it).
    pub cs_change: bool,
}

/// Why the segments do not make a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentError {
    /// No transfer at all.
    NoTransfers,
    /// A `/` before the first transfer.
    LeadingSlash,
    /// A `/` after the last transfer.
    TrailingSlash,
    /// Two `/` in a row, after transfer `after`.
    DoubledSlash {
        /// The transfer before them (0-based).
        after: usize,
    },
    /// A `/` inside a segment instead of alone between two.
    SlashInside {
        /// The segment.
        segment: String,
    },
    /// A segment with no bytes.
    Empty {
        /// The segment.
        segment: String,
    },
    /// A character that is not a hex digit or a separator.
    NotHex {
        /// The segment.
        segment: String,
        /// The character.
        ch: char,
    },
    /// An odd number of hex digits.
    OddDigits {
        /// The segment.
        segment: String,
        /// Hex digits in it.
        digits: usize,
    },
    /// A separator in the middle of a byte.
    SplitByte {
        /// The segment.
        segment: String,
        /// The group between separators with an odd number of digits.
        group: String,
    },
    /// `r:N` with an N that is not a byte count from 1 to [`MAX_READ`].
    ReadCount {
        /// The segment.
        segment: String,
    },
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SegmentError::NoTransfers => write!(f, "no transfer to send"),
            SegmentError::LeadingSlash => write!(f, "a / before the first segment: / goes between two segments"),
            SegmentError::TrailingSlash => write!(f, "a / after the last segment: / goes between two segments"),
            SegmentError::DoubledSlash { after } => {
                write!(f, "two / in a row after transfer {after}: one / drops CS once")
            }
            SegmentError::SlashInside { segment } => {
                write!(f, "segment {segment:?}: a / inside a segment; put it alone between two segments (9f / 00)")
            }
            SegmentError::Empty { segment } => write!(f, "segment {segment:?} has no bytes"),
            SegmentError::NotHex { segment, ch } => write!(f, "segment {segment:?}: {ch:?} is not a hex digit"),
            SegmentError::OddDigits { segment, digits } => {
                write!(f, "segment {segment:?}: {digits} hex digits, an odd number (two per byte)")
            }
            SegmentError::SplitByte { segment, group } => write!(
                f,
                "segment {segment:?}: {group:?} between separators has an odd number of digits (separators go \
                 between bytes)"
            ),
            SegmentError::ReadCount { segment } => {
                write!(f, "segment {segment:?}: r:N reads N bytes, N a decimal count from 1 to {MAX_READ}")
            }
        }?;
        write!(f, "; {ALLOWED}")
    }
}

impl std::error::Error for SegmentError {}

/// Parses the segments of `xfer` into the message's transfers.
pub fn parse_segments<S: AsRef<str>>(args: &[S]) -> Result<Vec<Segment>, SegmentError> {
    let mut out: Vec<Segment> = Vec::new();
    let mut slash_pending = false;
    for arg in args {
        let arg = arg.as_ref();
        if arg.trim() == "/" {
            match out.last_mut() {
                None => return Err(SegmentError::LeadingSlash),
                Some(_) if slash_pending => return Err(SegmentError::DoubledSlash { after: out.len() - 1 }),
                Some(last) => last.cs_change = true,
            }
            slash_pending = true;
            continue;
        }
        out.push(Segment { op: parse_one(arg)?, cs_change: false });
        slash_pending = false;
    }
    if slash_pending {
        return Err(SegmentError::TrailingSlash);
    }
    if out.is_empty() {
        return Err(SegmentError::NoTransfers);
    }
    Ok(out)
}

fn parse_one(segment: &str) -> Result<Op, SegmentError> {
    let owned = || segment.to_owned();
    if segment.contains('/') {
        return Err(SegmentError::SlashInside { segment: owned() });
    }
    let text = segment.trim();
    let prefixed = |p: &str| text.get(..2).filter(|h| h.eq_ignore_ascii_case(p)).map(|_| &text[2..]);
    if let Some(n) = prefixed("r:") {
        return match n.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_READ).contains(&n) => Ok(Op::Read(n)),
            _ => Err(SegmentError::ReadCount { segment: owned() }),
        };
    }
    if let Some(hex) = prefixed("w:") {
        return parse_hex(segment, hex).map(Op::Write);
    }
    parse_hex(segment, text).map(Op::Duplex)
}

/// Hex bytes, with optional `0x` prefixes on groups and `_`, `:`, `.`, `-`
/// or whitespace between bytes.
fn parse_hex(segment: &str, text: &str) -> Result<Vec<u8>, SegmentError> {
    let is_sep = |c: char| matches!(c, '_' | ':' | '.' | '-') || c.is_whitespace();
    let groups: Vec<&str> = text
        .split(is_sep)
        .filter(|g| !g.is_empty())
        .map(|g| g.strip_prefix("0x").or_else(|| g.strip_prefix("0X")).unwrap_or(g))
        .collect();
    if let Some(ch) = groups.iter().flat_map(|g| g.chars()).find(|c| !c.is_ascii_hexdigit()) {
        return Err(SegmentError::NotHex { segment: segment.to_owned(), ch });
    }
    let digits: usize = groups.iter().map(|g| g.len()).sum();
    if digits == 0 {
        return Err(SegmentError::Empty { segment: segment.to_owned() });
    }
    if !digits.is_multiple_of(2) {
        return Err(SegmentError::OddDigits { segment: segment.to_owned(), digits });
    }
    if let Some(g) = groups.iter().find(|g| !g.len().is_multiple_of(2)) {
        return Err(SegmentError::SplitByte { segment: segment.to_owned(), group: (*g).to_owned() });
    }
    let mut bytes = Vec::with_capacity(digits / 2);
    for g in groups {
        for pair in g.as_bytes().chunks(2) {
            // Checked above: two ASCII hex digits.
            let s = std::str::from_utf8(pair).unwrap_or("00");
            bytes.push(u8::from_str_radix(s, 16).unwrap_or(0));
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(args: &[&str]) -> Vec<Segment> {
        parse_segments(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn err(args: &[&str]) -> SegmentError {
        match parse_segments(args) {
            Ok(s) => panic!("{args:?} parsed as {s:?}"),
            Err(e) => e,
        }
    }

    fn duplex(b: &[u8], cs_change: bool) -> Segment {
        Segment { op: Op::Duplex(b.to_vec()), cs_change }
    }

    #[test]
    fn hex_segments_in_every_accepted_spelling_give_the_same_bytes() {
        let want = vec![duplex(&[0x9f, 0, 0, 0xab], false)];
        for s in ["9f0000ab", "9F0000AB", "0x9f0000ab", "0X9F0000AB", "9f_00_00_ab", "9f:00:00:ab", "9f 00 00 ab"] {
            assert_eq!(ok(&[s]), want, "{s}");
        }
        for s in ["0x9f 0x00 0x00 0xab", " 9f.00-00ab ", "9f::00__00ab"] {
            assert_eq!(ok(&[s]), want, "{s}");
        }
    }

    #[test]
    fn read_and_write_segments() {
        assert_eq!(ok(&["r:4"]), vec![Segment { op: Op::Read(4), cs_change: false }]);
        assert_eq!(ok(&["R:16"]), vec![Segment { op: Op::Read(16), cs_change: false }]);
        assert_eq!(ok(&["w:9f"]), vec![Segment { op: Op::Write(vec![0x9f]), cs_change: false }]);
        assert_eq!(ok(&["W:0x06:00"]), vec![Segment { op: Op::Write(vec![6, 0]), cs_change: false }]);
        assert_eq!(ok(&[&format!("r:{MAX_READ}")])[0].op, Op::Read(MAX_READ));
        for bad in ["r:0", "r:", "r:x", "r:-1", "r:0x10", &format!("r:{}", MAX_READ + 1)] {
            assert!(matches!(err(&[bad]), SegmentError::ReadCount { .. }), "{bad}");
        }
        assert!(matches!(err(&["w:"]), SegmentError::Empty { .. }));
    }

    #[test]
    fn a_lone_slash_marks_cs_change_after_the_transfer_before_it() {
        let s = ok(&["9f", "/", "00", "r:2", "/", "w:01"]);
        let flags: Vec<bool> = s.iter().map(|x| x.cs_change).collect();
        assert_eq!(flags, [true, false, true, false]);
        assert_eq!(s[0], duplex(&[0x9f], true));
        assert_eq!(err(&["/", "9f"]), SegmentError::LeadingSlash);
        assert_eq!(err(&["9f", "/"]), SegmentError::TrailingSlash);
        assert_eq!(err(&["9f", "00", "/", "/", "01"]), SegmentError::DoubledSlash { after: 1 });
        assert_eq!(err(&["/"]), SegmentError::LeadingSlash);
        assert_eq!(err(&[]), SegmentError::NoTransfers);
        assert!(matches!(err(&["9f/00"]), SegmentError::SlashInside { .. }));
    }

    #[test]
    fn bad_hex_is_refused_with_what_was_wrong_and_what_is_allowed() {
        assert_eq!(err(&["9g00"]), SegmentError::NotHex { segment: "9g00".into(), ch: 'g' });
        assert_eq!(err(&["9f0"]), SegmentError::OddDigits { segment: "9f0".into(), digits: 3 });
        assert_eq!(err(&["9f:0"]), SegmentError::OddDigits { segment: "9f:0".into(), digits: 3 });
        assert_eq!(err(&["9:f0:0"]), SegmentError::SplitByte { segment: "9:f0:0".into(), group: "9".into() });
        for empty in ["", "0x", "::", " "] {
            assert!(matches!(err(&["9f", empty]), SegmentError::Empty { .. }), "{empty:?}");
        }
        assert!(matches!(err(&["x9f"]), SegmentError::NotHex { ch: 'x', .. }));
        let text = err(&["12", "9g00"]).to_string();
        for needle in ["\"9g00\"", "'g'", "r:N", "w:HEX", "0x9f_00", "lone /"] {
            assert!(text.contains(needle), "lacks {needle:?}: {text}");
        }
    }
}
