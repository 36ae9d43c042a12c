//! Integers as JSON Schema counts them: `"type": "integer"` admits any number with a zero
//! fractional part, so `1`, `1.0` and `1e0` are all the integer 1. Arguments have passed the
//! schema before a tool reads them; these readers accept every form it accepted.

use serde::de::{Deserialize, Deserializer, Error};
use serde_json::{Number, Value};

/// The value of `n` as a `u64`, when it is a whole number in range (`3`, `3.0`, `3e0`).
fn whole(n: &Number) -> Option<u64> {
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        // 2^64 itself is out of range; every f64 below it with no fraction converts exactly.
        (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
    })
}

/// A non-negative integer argument, read from any JSON number JSON Schema calls an integer.
pub(crate) fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => whole(n),
        _ => None,
    }
}

/// Serde's `deserialize_with` for a `usize` field that JSON Schema types as an integer.
pub(crate) fn deserialize_usize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    let n = Number::deserialize(d)?;
    whole(&n)
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| D::Error::custom(format!("invalid value: {n}, expected a whole number")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_numbers_in_any_spelling() {
        for (v, want) in [
            (json!(1), Some(1)),
            (json!(1.0), Some(1)),
            (json!(1e3), Some(1000)),
            (json!(0.0), Some(0)),
            (json!(-0.0), Some(0)),
            (json!(1.5), None),
            (json!(-1), None),
            (json!(-1.0), None),
            (json!(1e300), None),
            (json!("1"), None),
        ] {
            assert_eq!(as_u64(&v), want, "{v}");
        }
    }

    #[test]
    fn serde_reads_them_too() {
        #[derive(serde::Deserialize)]
        struct A {
            #[serde(deserialize_with = "deserialize_usize")]
            n: usize,
        }
        let n = |v: Value| serde_json::from_value::<A>(json!({"n": v})).map(|a| a.n);
        assert_eq!(n(json!(7)).unwrap(), 7);
        assert_eq!(n(json!(7.0)).unwrap(), 7);
        assert!(n(json!(7.5)).unwrap_err().to_string().contains("7.5"));
        assert!(n(json!(true)).is_err());
    }
}
