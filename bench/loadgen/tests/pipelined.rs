//! The pipelined burst against the floor responder, through the real binary.

use std::process::Command;

fn pipelined(calls: &str, inflight: &str) -> serde_json::Value {
    let exe = env!("CARGO_BIN_EXE_loadgen");
    let out = Command::new(exe)
        .args([
            "stdio-pipelined",
            "--calls",
            calls,
            "--warmup",
            "0",
            "--inflight",
            inflight,
        ])
        .args([
            "--max-secs",
            "5",
            "--timeout-secs",
            "20",
            "--",
            exe,
            "floor",
        ])
        .output()
        .expect("loadgen runs");
    serde_json::from_slice(&out.stdout).expect("one JSON line")
}

/// A burst that fits its window is written without the window ever being full: it must
/// still reach the server before the fence waits for a slot (it used to hang there).
#[test]
fn a_burst_that_fits_the_window_is_answered() {
    for (calls, inflight) in [("64", "64"), ("10", "64"), ("1", "1"), ("65", "64")] {
        let r = pipelined(calls, inflight);
        assert!(
            r.get("error").is_none(),
            "{calls} calls, {inflight} in flight: {r}"
        );
        assert_eq!(r["calls"].to_string(), calls, "{r}");
    }
}

#[test]
fn a_long_burst_counts_every_answer() {
    let r = pipelined("20000", "64");
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(r["calls"], 20000, "{r}");
}
