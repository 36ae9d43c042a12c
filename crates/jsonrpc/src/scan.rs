//! Byte scans that run before (or instead of) serde: the nesting-depth
//! check and a word-at-a-time newline search.

/// Returns true if `bytes` nests arrays/objects more than `max_depth` deep.
///
/// The top-level container counts as depth 1. The scan is a single O(n)
/// pass with no recursion: it tracks whether it is inside a string (and
/// skips escaped characters there) so brackets inside strings do not count.
/// It does not validate JSON; unbalanced closers just floor the depth at 0
/// and leave the syntax error for the parser to report.
pub(crate) fn exceeds_depth(bytes: &[u8], max_depth: usize) -> bool {
    // Each level needs at least one byte, so short inputs cannot exceed it.
    if bytes.len() <= max_depth {
        return false;
    }
    // Nor can one with no more opening brackets than levels allowed (strings included):
    // a count the compiler vectorizes, where the scan below goes a byte at a time.
    let openers = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if openers <= max_depth {
        return false;
    }
    let mut depth = 0usize;
    let mut iter = bytes.iter();
    while let Some(&b) = iter.next() {
        match b {
            b'"' => {
                while let Some(&c) = iter.next() {
                    match c {
                        b'\\' => {
                            iter.next();
                        }
                        b'"' => break,
                        _ => {}
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > max_depth {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

const LO: u64 = u64::from_ne_bytes([0x01; 8]);
const HI: u64 = u64::from_ne_bytes([0x80; 8]);

/// True if any byte of `word` is zero (the classic bit trick; exact for the
/// yes/no question, which is all we use it for).
#[inline]
fn has_zero_byte(word: u64) -> bool {
    word.wrapping_sub(LO) & !word & HI != 0
}

/// The index of the first `needle` in `haystack`, scanning eight bytes at a
/// time (no `unsafe`, no dependency).
pub(crate) fn find_byte(needle: u8, haystack: &[u8]) -> Option<usize> {
    let pattern = u64::from_ne_bytes([needle; 8]);
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        if has_zero_byte(u64::from_ne_bytes(word) ^ pattern) {
            break;
        }
        offset += 8;
    }
    haystack[offset..]
        .iter()
        .position(|&b| b == needle)
        .map(|i| offset + i)
}

/// Replaces every raw `\n` in `bytes` with a space.
///
/// Only used on serialized JSON, where a raw newline can only be whitespace
/// between tokens (inside strings it must be escaped), so the meaning is
/// unchanged and the output stays one line.
pub(crate) fn flatten_newlines(bytes: &mut [u8]) {
    let mut start = 0;
    while let Some(i) = find_byte(b'\n', &bytes[start..]) {
        bytes[start + i] = b' ';
        start += i + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn depth_scan_table() {
        table! { |input: &str, max: usize, want: bool| assert_eq!(exceeds_depth(input.as_bytes(), max), want, "input {input} max {max}");
            ("", 0, false);
            ("1", 0, false);
            ("{}", 0, true);
            ("{}", 1, false);
            ("[[]]", 1, true);
            ("[[]]", 2, false);
            ("[[],[],[]]", 2, false);
            (r#"{"a":{"b":[1]}}"#, 3, false);
            (r#"{"a":{"b":[1]}}"#, 2, true);
            (r#"["[[[[[[["]"#, 1, false);
            (r#"{"k":"{{{{{{{{"}"#, 1, false);
            (r#"["\"[[[[[[["]"#, 1, false);
            (r#"["\\",[[]]]"#, 2, true);
            (r#"["\\",[[]]]"#, 3, false);
            (r#"["\\\"[[[["]"#, 1, false);
            (r#"["\u005b[[[[[["]"#, 1, false);
            ("]]]]][[", 1, true);
            ("]]]]][", 1, false);
            (r#""unterminated [[[[[[[[["#, 1, false);
            // No more openers than levels allowed: settled by the count alone.
            (r#"{"a":[1],"b":"c"}"#, 2, false);
            (r#"{"a":[1],"b":"c"}"#, 1, true);
        }
    }

    #[test]
    fn depth_scan_of_a_million_levels_is_fast() {
        let input = vec![b'['; 1_000_000];
        let mut balanced = vec![b'['; 500_000];
        balanced.extend(std::iter::repeat_n(b']', 500_000));
        let started = Instant::now();
        // Stops at level 129.
        assert!(exceeds_depth(&input, 128));
        // A full pass over balanced input is still linear.
        assert!(!exceeds_depth(&balanced, 1_000_000));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn find_byte_table() {
        table! { |hay: &[u8], want: Option<usize>| assert_eq!(find_byte(b'\n', hay), want, "haystack {hay:?}");
            (b"", None);
            (b"\n", Some(0));
            (b"abc", None);
            (b"abc\n", Some(3));
            (b"abcdefg\n", Some(7));
            (b"abcdefgh\n", Some(8));
            (b"abcdefghijklmno\nq\n", Some(15));
            (b"abcdefghijklmnop", None);
            (b"\x8a\x8a\x8a\x8a\x8a\x8a\x8a\x8a\x0b\n", Some(9));
            (b"\x0b\x0b\x0b\x0b\x0b\x0b\x0b\x0b", None);
            (b"\x00\x01\x0b\x0b\x0b\x0b\x0b\x0b\x0b", None);
            (b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\n", Some(12));
        }
    }

    #[test]
    fn find_byte_agrees_with_position_at_every_offset() {
        for len in 0..40 {
            for at in 0..=len {
                let mut hay = vec![b'x'; len];
                if at < len {
                    hay[at] = b'\n';
                }
                let want = hay.iter().position(|&b| b == b'\n');
                assert_eq!(find_byte(b'\n', &hay), want, "len {len} at {at}");
            }
        }
    }

    #[test]
    fn flatten_newlines_table() {
        table! { |input: &str, want: &str| { let mut bytes = input.as_bytes().to_vec(); flatten_newlines(&mut bytes); assert_eq!(bytes, want.as_bytes(), "input {input:?}") };
            ("", "");
            ("{}", "{}");
            ("{\n}", "{ }");
            ("{\r\n  \"a\": 1\n}\n", "{\r   \"a\": 1 } ");
            ("\n\n\n\n\n\n\n\n\n", "         ");
        }
    }
}
