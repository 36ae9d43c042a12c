//! RFC 3986's character classes as `percent-encoding` sets: what each part of a URI may
//! hold literally, everything else percent-encoded. One copy, for declared HTTP tools'
//! URLs and for the JSON Pointers lint puts in URI fragments.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC};

/// Everything but `unreserved` (letters, digits, `-`, `.`, `_`, `~`) is escaped: a value
/// as one path segment or query component.
pub const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `pchar` without its escapes: `unreserved`, the sub-delims, `:` and `@`.
pub const PCHAR: &AsciiSet = &UNRESERVED
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b':')
    .remove(b'@');

/// A path's characters: [`PCHAR`]'s and `/`.
pub const PATH: &AsciiSet = &PCHAR.remove(b'/');

/// A query's (and a fragment's) characters: [`PATH`]'s and `?`.
pub const QUERY: &AsciiSet = &PATH.remove(b'?');

#[cfg(test)]
mod tests {
    use super::*;
    use percent_encoding::utf8_percent_encode;

    #[test]
    fn each_part_keeps_its_own_characters() {
        let text = "a b/c?d#e:f@g!h%";
        let enc = |set| utf8_percent_encode(text, set).to_string();
        assert_eq!(enc(UNRESERVED), "a%20b%2Fc%3Fd%23e%3Af%40g%21h%25");
        assert_eq!(enc(PCHAR), "a%20b%2Fc%3Fd%23e:f@g!h%25");
        assert_eq!(enc(PATH), "a%20b/c%3Fd%23e:f@g!h%25");
        assert_eq!(enc(QUERY), "a%20b/c?d%23e:f@g!h%25");
    }
}
