//! JSON Pointer (RFC 6901) helpers: building, decoding from a URI fragment,
//! and the order violations are reported in.

use std::cmp::Ordering;

/// Appends one segment to the JSON Pointer `pointer`, escaped (`~` as `~0`, `/` as `~1`).
pub fn push_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for ch in segment.chars() {
        match ch {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(ch),
        }
    }
}

/// A URI fragment with its `%XX` escapes decoded; text that is not valid
/// UTF-8 once decoded is kept as written.
pub(crate) fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .map_or_else(|_| text.to_owned(), std::borrow::Cow::into_owned)
}

/// The order of instance pointers in reports: segment by segment, with
/// all-digit segments (array indices) first and in numeric order, so
/// `/tags/2` comes before `/tags/10`; other segments compare as text. A
/// total order, whatever the segments.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    a.split('/')
        .map(segment_key)
        .cmp(b.split('/').map(segment_key))
}

/// Digits-only segments sort by (length, text): numeric order without
/// parsing, so no index is too long to compare.
fn segment_key(segment: &str) -> (bool, usize, &str) {
    let is_index = !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit());
    (!is_index, if is_index { segment.len() } else { 0 }, segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! orders {
        ($($name:ident: $a:expr, $b:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(compare($a, $b), $expected);
                assert_eq!(compare($b, $a), $expected.reverse());
            }
        )*};
    }

    orders! {
        root_before_child: "", "/a" => Ordering::Less;
        index_numeric: "/tags/2", "/tags/10" => Ordering::Less;
        huge_index: "/tags/99999999999999999999999999999999999999999", "/tags/10" => Ordering::Greater;
        names_lexical: "/b", "/a" => Ordering::Greater;
        parent_before_child: "/a", "/a/b" => Ordering::Less;
        indices_before_names: "/a/5", "/a/$b" => Ordering::Less;
        leading_zero_after: "/a/01", "/a/1" => Ordering::Greater;
        equal: "/a/0", "/a/0" => Ordering::Equal;
    }

    macro_rules! decodes {
        ($($name:ident: $text:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(percent_decode($text), $expected);
            }
        )*};
    }

    decodes! {
        decode_plain: "/$defs/a" => "/$defs/a";
        decode_space: "/a%20b" => "/a b";
        decode_utf8: "/caf%C3%A9" => "/café";
        decode_truncated_escape: "/a%2" => "/a%2";
        decode_not_hex: "/a%+f" => "/a%+f";
        decode_invalid_utf8_kept: "/a%FF" => "/a%FF";
    }

    #[test]
    fn push_segment_escapes() {
        let mut pointer = String::new();
        push_segment(&mut pointer, "a/b~c");
        push_segment(&mut pointer, "0");
        assert_eq!(pointer, "/a~1b~0c/0");
    }
}
