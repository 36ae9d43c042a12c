//! How the report writes numbers.

/// Formats a figure with a precision that suits its size.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 10_000.0 {
        let s = format!("{:.0}", v);
        let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        format!("{sign}{out}")
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Formats a ratio with two significant digits or more.
pub fn fmt_ratio(r: f64) -> String {
    let a = r.abs();
    if a >= 10.0 {
        format!("{r:.1}×")
    } else if a >= 0.1 || a == 0.0 {
        format!("{r:.2}×")
    } else if a >= 0.01 {
        format!("{r:.3}×")
    } else {
        format!("{r:.1e}×")
    }
}
