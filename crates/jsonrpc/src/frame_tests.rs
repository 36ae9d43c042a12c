//! Table tests for [`LineDecoder`]: each case feeds chunks, drains
//! `next_line` after every chunk and `finish` at the end, and compares the
//! events (`E<n>` for a too-long line, `=<text>` for the final line).

use super::*;

fn events_of(decoder: &mut LineDecoder, chunks: &[&[u8]]) -> Vec<String> {
    fn show(r: Result<Line<'_>, FrameError>, prefix: &str) -> String {
        match r {
            Ok(line) => format!("{prefix}{}", String::from_utf8_lossy(line.as_bytes())),
            Err(FrameError::TooLong { len_so_far, .. }) => format!("E{len_so_far}"),
        }
    }
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        while let Some(r) = decoder.next_line() {
            events.push(show(r, ""));
        }
    }
    while let Some(r) = decoder.finish() {
        events.push(show(r, "="));
    }
    events
}

fn events(max_line: usize, chunks: &[&[u8]]) -> Vec<String> {
    events_of(&mut LineDecoder::new(max_line), chunks)
}

#[test]
fn framing_table() {
    table! { |max: usize, chunks: &[&[u8]], want: &[&str]| assert_eq!(events(max, chunks), want, "max {max} chunks {chunks:?}");
        (10, &[b"abc\n"], &["abc"]);
        (10, &[b"abc\ndef\n"], &["abc", "def"]);
        (10, &[b"ab", b"c\nde", b"f\n"], &["abc", "def"]);
        (10, &[b"a", b"b", b"c", b"\n"], &["abc"]);
        (10, &[b"a\r\nb\r\n"], &["a", "b"]);
        (10, &[b"a\r", b"\nb\r", b"\n"], &["a", "b"]);
        (10, &[b"a\r\r\n"], &["a\r"]);
        (10, &[b"a\rb\n"], &["a\rb"]);
        (10, &[b"\n\n  \n\t\r\n\r\na\n"], &["a"]);
        (10, &[b" a \n"], &[" a "]);
        (10, &[b"a\nbc"], &["a", "=bc"]);
        (10, &[b"a\nbc\r"], &["a", "=bc"]);
        (10, &[b"a\n", b"  "], &["a"]);
        (10, &[b""], &[]);
        (10, &[], &[]);
        (3, &[b"abc\n"], &["abc"]);
        (3, &[b"abc\r\n"], &["abc"]);
        (3, &[b"abc\r", b"\n"], &["abc"]);
        (3, &[b"abcd\n"], &["E4"]);
        (3, &[b"abcd\r\n"], &["E4"]);
        (3, &[b"abcd"], &["E4"]);
        (3, &[b"abc\r", b"x\n"], &["E5"]);
        (4, &[b"abcdefgh\nok\n"], &["E8", "ok"]);
        (4, &[b"abc", b"def", b"ghi", b"jk\nok\n"], &["E6", "ok"]);
        (4, &[b"abc", b"defghijkl", b"mnop", b"\n", b"ok\n"], &["E12", "ok"]);
        (4, &[b"ok\nabcdef", b"ghij\nfine\n"], &["ok", "E6", "fine"]);
        (4, &[b"abcdef", b"ghij"], &["E6"]);
        (4, &[b"abcdef\nxy"], &["E6", "=xy"]);
        (4, &[b"abcdefgh\nijklmnop\nq\n"], &["E8", "E8", "q"]);
        (0, &[b"\n\r\n"], &[]);
        (0, &[b" \n"], &["E1"]);
        (0, &[b"a\n"], &["E1"]);
    }
}

#[test]
fn every_split_point_gives_the_same_lines() {
    let input: &[u8] = b"{\"a\":1}\r\n\n{\"b\":\"x\\ny\"}\ntoo long line here\nlast\r\n  \ntail";
    let want = events(12, &[input]);
    assert_eq!(
        want,
        ["{\"a\":1}", "{\"b\":\"x\\ny\"}", "E18", "last", "=tail"]
    );
    // Where the long line is cut decides how much of it had arrived when
    // it was rejected, so only the count varies (between 13 and 18).
    let normalize = |events: Vec<String>| -> Vec<String> {
        events
            .into_iter()
            .map(
                |e| match e.strip_prefix('E').and_then(|n| n.parse::<usize>().ok()) {
                    Some(n) if (13..=18).contains(&n) => "E".to_owned(),
                    _ => e,
                },
            )
            .collect()
    };
    let want = normalize(want);
    for a in 0..=input.len() {
        for b in a..=input.len() {
            let got = events(12, &[&input[..a], &input[a..b], &input[b..]]);
            assert_eq!(normalize(got), want, "split at {a} and {b}");
        }
    }
    let bytewise: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(
        events(12, &bytewise),
        ["{\"a\":1}", "{\"b\":\"x\\ny\"}", "E13", "last", "=tail"]
    );
}

#[test]
fn an_endless_line_is_never_buffered_beyond_the_limit() {
    let max_line = 1000;
    let chunk = vec![b'x'; 4096];
    let mut decoder = LineDecoder::new(max_line);
    let mut reports = 0;
    for _ in 0..2_500 {
        decoder.push(&chunk);
        while let Some(r) = decoder.next_line() {
            assert_eq!(
                r,
                Err(FrameError::TooLong {
                    len_so_far: 4096,
                    id: None
                })
            );
            reports += 1;
        }
        assert!(decoder.buffered() <= max_line + chunk.len());
    }
    assert_eq!(reports, 1);
    assert!(decoder.buf.len() <= max_line + 2 * chunk.len());
    decoder.push(b"end of it\n{}\n");
    assert_eq!(decoder.next_line().unwrap().unwrap().as_bytes(), b"{}");
}

#[test]
fn the_decoder_is_reusable_after_finish() {
    let mut decoder = LineDecoder::new(8);
    assert_eq!(events_of(&mut decoder, &[b"a\nb"]), ["a", "=b"]);
    assert_eq!(decoder.buffered(), 0);
    assert_eq!(events_of(&mut decoder, &[b"c\n"]), ["c"]);
}

#[test]
fn line_accessors() {
    let mut decoder = LineDecoder::new(8);
    decoder.push(b"h\xc3\xa9\n\xff\n");
    let line = decoder.next_line().unwrap().unwrap();
    assert_eq!(
        (line.len(), line.is_empty(), line.to_str(), &line[..1]),
        (3, false, Ok("hé"), &b"h"[..])
    );
    assert_eq!(line.as_ref(), b"h\xc3\xa9");
    assert!(decoder.next_line().unwrap().unwrap().to_str().is_err());
    assert_eq!(decoder.max_line(), 8);
}

#[test]
fn an_over_long_line_keeps_the_id_it_began_with() {
    let mut decoder = LineDecoder::new(64);
    let mut line = br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"x":""#.to_vec();
    line.extend(std::iter::repeat_n(b'a', 200));
    decoder.push(&line);
    let err = decoder.next_line().unwrap().unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLong {
            len_so_far: line.len(),
            id: Some(crate::RequestId::String("big".into()))
        }
    );
    decoder.push(b"\"}}\n{\"id\":1}\n");
    assert_eq!(
        decoder.next_line().unwrap().unwrap().as_bytes(),
        b"{\"id\":1}"
    );
    // The whole line arrived at once: the same.
    decoder.push(b"{\"id\":7,\"params\":\"");
    decoder.push(&[b'b'; 100]);
    decoder.push(b"\"}\n");
    let err = decoder.next_line().unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            FrameError::TooLong {
                id: Some(crate::RequestId::Number(7)),
                ..
            }
        ),
        "{err:?}"
    );
}
