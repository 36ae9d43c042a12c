//! `search_files` against what an attacker tries, over the real binary: a directory swapped
//! for a link to outside the roots while the walk runs, names that are not UTF-8, and
//! integer-valued numbers written as `1.0`.

use crate::search_files::{Tree, ok, refused};
use rustix::fs::{CWD, RenameFlags, renameat_with};
use serde_json::json;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Searches per `follow_symlinks` value. The old walker (check a directory, then open it
/// by path) leaked outside names in a few percent of these searches on a 2-core machine.
const RACE_SEARCHES: usize = 400;

/// While a thread keeps exchanging `root/race` (a real directory) with a symlink to
/// `outside/` (atomically, `renameat2(RENAME_EXCHANGE)`), hundreds of recursive searches
/// never report a name that exists only outside, and no count grows past what the root
/// holds.
#[test]
fn a_directory_swapped_for_a_link_out_never_leaks() {
    let t = Tree::new(&[]);
    for i in 0..200 {
        fs::write(t.outside.join(format!("only-outside-{i:03}.txt")), "x").unwrap();
    }
    for i in 0..40 {
        t.touch(&format!("f{i:02}.txt"));
    }
    t.touch("race/inside.txt");
    // What the root can hold at any moment: 40 files, `race`, and `race/inside.txt`.
    let most = 42;
    let spare = t.root.parent().unwrap().join("spare");
    symlink(&t.outside, &spare).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (stop.clone(), swaps.clone());
        let race = t.root.join("race");
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                renameat_with(CWD, &race, CWD, &spare, RenameFlags::EXCHANGE).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };

    let mut s = t.server();
    s.validate = false;
    let started = Instant::now();
    let mut leaks: Vec<String> = Vec::new();
    for follow in [false, true] {
        for i in 0..RACE_SEARCHES {
            // Every name, then only the outside names: their count must stay 0.
            let pattern = if i % 2 == 0 { "*" } else { "only-outside-*" };
            let r = ok(
                &mut s,
                json!({"directory": ".", "pattern": pattern, "recursive": true,
                       "include_hidden": true, "follow_symlinks": follow, "max_results": 1000}),
            );
            let text = r["matches"].to_string();
            let matched = r["matched"].as_u64().unwrap();
            let scanned = r["scanned"].as_u64().unwrap();
            let outside_count = pattern != "*" && matched > 0;
            if text.contains("only-outside") || outside_count || matched > most || scanned > most {
                leaks.push(format!(
                    "follow {follow}, search {i} ({pattern}): matched {matched}, scanned {scanned}, {} matches",
                    r["matches"].as_array().unwrap().len()
                ));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(
        leaks.is_empty(),
        "{} of {} searches revealed outside names ({swaps} swaps in {:?}):\n{}",
        leaks.len(),
        2 * RACE_SEARCHES,
        started.elapsed(),
        leaks.join("\n")
    );
    assert!(swaps > 1000, "the swapper ran: {swaps} swaps");
}

/// Decodes a reported path: U+FFFD followed by two hex digits is that byte, U+FFFD twice is
/// a real U+FFFD, anything else is itself.
fn decode(reported: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = reported.chars();
    while let Some(c) = chars.next() {
        if c != '\u{FFFD}' {
            let mut b = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            continue;
        }
        let next = chars.next().expect("an escape is complete");
        if next == '\u{FFFD}' {
            out.extend_from_slice("\u{FFFD}".as_bytes());
        } else {
            let hex: String = [next, chars.next().expect("two hex digits")]
                .into_iter()
                .collect();
            out.push(u8::from_str_radix(&hex, 16).expect("hex digits"));
        }
    }
    out
}

#[test]
fn names_that_are_not_utf8_are_escaped_not_replaced() {
    let t = Tree::new(&[]);
    let raw = OsStr::from_bytes(b"bad\xffname.txt");
    let lookalike = "bad\u{FFFD}name.txt";
    fs::write(t.root.join(raw), "raw bytes").unwrap();
    fs::write(t.root.join(lookalike), "a real U+FFFD").unwrap();
    fs::create_dir(t.root.join(OsStr::from_bytes(b"d\xe9j\xe0"))).unwrap();
    fs::write(
        t.root.join(OsStr::from_bytes(b"d\xe9j\xe0/inner.txt")),
        "inner",
    )
    .unwrap();
    let mut s = t.server();
    let r = ok(
        &mut s,
        json!({"directory": ".", "pattern": "*", "recursive": true}),
    );
    let matches: Vec<String> = serde_json::from_value(r["matches"].clone()).unwrap();
    assert_eq!(
        matches,
        [
            "bad\u{FFFD}\u{FFFD}name.txt",
            "bad\u{FFFD}ffname.txt",
            "d\u{FFFD}e9j\u{FFFD}e0/",
            "d\u{FFFD}e9j\u{FFFD}e0/inner.txt",
        ],
        "{r}"
    );
    // Each reported path leads back to its own file.
    let content = |m: &str| fs::read_to_string(t.root.join(OsStr::from_bytes(&decode(m)))).unwrap();
    assert_eq!(content(&matches[0]), "a real U+FFFD");
    assert_eq!(content(&matches[1]), "raw bytes");
    assert_eq!(content(&matches[3]), "inner");
    // A reported directory can be searched as it was reported.
    let r = ok(
        &mut s,
        json!({"directory": matches[2].trim_end_matches('/'), "pattern": "*"}),
    );
    assert_eq!(r["matches"], json!(["inner.txt"]), "{r}");
    let dir = decode(r["directory"].as_str().unwrap());
    assert_eq!(
        dir,
        t.root
            .join(OsStr::from_bytes(b"d\xe9j\xe0"))
            .as_os_str()
            .as_bytes()
    );
}

#[test]
fn integer_valued_numbers_count_as_integers() {
    let t = Tree::new(&["a.py", "b.py", "c.py"]);
    let mut s = t.server();
    let r = ok(
        &mut s,
        json!({"directory": ".", "pattern": "*.py", "max_results": 1.0}),
    );
    assert_eq!(r["matches"], json!(["a.py"]), "{r}");
    assert_eq!(r["truncated"], true);
    let r = ok(
        &mut s,
        json!({"directory": ".", "pattern": "*.py", "max_results": 2e0}),
    );
    assert_eq!(r["matches"], json!(["a.py", "b.py"]), "{r}");
    let text = refused(
        &mut s,
        json!({"directory": ".", "pattern": "*", "max_results": 1.5}),
    );
    assert!(text.contains("max_results"), "{text}");
}
