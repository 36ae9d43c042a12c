//! Tests of the report writer (src/report.rs).

use super::*;

#[test]
fn thousands() {
    assert_eq!(fmt_num(78123.4), "78,123");
}
#[test]
fn millions() {
    assert_eq!(fmt_num(1234567.0), "1,234,567");
}
#[test]
fn hundreds() {
    assert_eq!(fmt_num(258.4), "258");
}
#[test]
fn tens() {
    assert_eq!(fmt_num(87.25), "87.2");
}
#[test]
fn small() {
    assert_eq!(fmt_num(2.345), "2.35");
}
#[test]
fn ratio_big() {
    assert_eq!(fmt_ratio(12.53), "12.5×");
}
#[test]
fn ratio_plain() {
    assert_eq!(fmt_ratio(0.97), "0.97×");
}
#[test]
fn ratio_small() {
    assert_eq!(fmt_ratio(0.0123), "0.012×");
}
#[test]
fn ratio_tiny() {
    assert_eq!(fmt_ratio(0.0037), "3.7e-3×");
}
#[test]
fn negative_thousands() {
    assert_eq!(fmt_num(-12345.0), "-12,345");
}

#[test]
fn collects_values_errors_and_missing() {
    let text = r#"{"measure":"stdio-seq","label":"a","run":1,"p50_us":10,"p99_us":20}
{"measure":"stdio-seq","label":"a","run":2,"p50_us":30,"p99_us":40}
{"measure":"http","label":"a","run":1,"error":"boom"}
{"measure":"missing","label":"b","error":"not built"}
not json"#;
    let c = collect(text);
    assert_eq!(c.values[&("a".to_owned(), "seq_p50_us")], vec![10.0, 30.0]);
    assert_eq!(c.errors[&("a".to_owned(), "http".to_owned())], "boom");
    assert_eq!(c.missing["b"], "not built");
    assert_eq!(c.runs, 2);
}

/// Run 2 is slow for both servers: the medians of the columns then pair a fast run of
/// one with a slow run of the other, while each run on its own meets the target.
#[test]
fn targets_are_also_checked_run_by_run() {
    let dir = std::env::temp_dir().join(format!("loadgen-paired-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("r.jsonl");
    let line = |label: &str, run: u32, calls: f64| {
        format!(
            r#"{{"measure":"http","label":"{label}","run":{run},"calls_per_s":{calls},"p50_us":1,"p99_us":1}}"#
        )
    };
    let lines = [
        line("toolwright", 1, 100.0),
        line("rmcp", 1, 45.0),
        line("toolwright", 2, 60.0),
        line("rmcp", 2, 29.0),
        line("toolwright", 3, 90.0),
        line("rmcp", 3, 50.0),
    ];
    std::fs::write(&results, lines.join("\n")).unwrap();
    let o = ReportOpts {
        results,
        out: dir.join("B.md"),
        servers: vec![
            ("toolwright".into(), "toolwright".into()),
            ("rmcp".into(), "rmcp".into()),
        ],
        ..Default::default()
    };
    run(&o).unwrap();
    let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
    // Medians 90 and 45: 90 ≥ 2 × 45 holds; runs: 100/90, 60/58, 90/100 → 2 of 3.
    assert!(
        md.contains("| HTTP throughput ≥ 2× rmcp | 90.0 | ≥ 90.0 | yes | 2/3 | 1.03× |"),
        "{md}"
    );
    assert_eq!(
        run_value(&collect(&lines.join("\n")), 2, "rmcp", "http_calls_per_s"),
        Some(29.0)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn report_lists_absent_figures() {
    let dir = std::env::temp_dir().join(format!("loadgen-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("r.jsonl");
    std::fs::write(
        &results,
        r#"{"measure":"stdio-seq","label":"a","run":1,"p50_us":10,"p99_us":20}"#,
    )
    .unwrap();
    let o = ReportOpts {
        results,
        out: dir.join("B.md"),
        servers: vec![("a".into(), "A".into())],
        ..Default::default()
    };
    let absent = run(&o).unwrap();
    assert_eq!(absent.len(), FIGURES.len() - 2);
    let md = std::fs::read_to_string(dir.join("B.md")).unwrap();
    assert!(md.contains("| Sequential tools/call p50, stdio ↓ | µs | 10.0 |"));
    std::fs::remove_dir_all(dir).unwrap();
}
