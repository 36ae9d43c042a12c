//! PostgreSQL's binary values, both ways: a parameter bound as the type the server inferred
//! for its placeholder, and a column's value as JSON. Integers, floats, booleans, text,
//! `json`/`jsonb` and NULL bind; columns of those types, `bytea` (base64), `uuid`, `date`,
//! `timestamp`/`timestamptz` (RFC 3339) and `numeric` (a string, exactly) read. Any other type
//! is named in the error, with the cast that makes it text.

use super::rows::Param;
use base64::Engine as _;
use bytes::BytesMut;
use serde_json::Value;
use std::error::Error;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

type BoxError = Box<dyn Error + Sync + Send>;

/// Why a value could not be bound or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TypeError {
    /// The argument's JSON type does not fit the placeholder's SQL type.
    #[error(
        "a {got} argument cannot be bound where the statement takes {ty} (cast the placeholder, e.g. $1::text, and convert in SQL)"
    )]
    Param {
        /// The argument's kind.
        got: &'static str,
        /// The placeholder's type.
        ty: String,
    },
    /// A column of a type toolwright does not read.
    #[error("a column of type {ty} is not read; cast it in the statement (column::text)")]
    Column {
        /// The column's type.
        ty: String,
    },
    /// The server sent bytes that are not a value of the type.
    #[error("a {ty} value that is not well formed")]
    Malformed {
        /// The type.
        ty: String,
    },
}

/// A parameter bound as the type of its placeholder.
#[derive(Debug)]
pub struct Bound<'a>(pub &'a Param);

fn kind(p: &Param) -> &'static str {
    match p {
        Param::Null => "null",
        Param::Bool(_) => "boolean",
        Param::Int(_) => "integer",
        Param::Float(_) => "number",
        Param::Text(_) => "string",
        Param::Json(_) => "object or array",
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let wrong = || -> BoxError {
            Box::new(TypeError::Param {
                got: kind(self.0),
                ty: ty.name().to_owned(),
            })
        };
        match (self.0, ty) {
            (Param::Null, _) => Ok(IsNull::Yes),
            (Param::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (Param::Int(i), &Type::INT2) => i16::try_from(*i)?.to_sql(ty, out),
            (Param::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Param::Int(i), &Type::INT8) => i.to_sql(ty, out),
            #[allow(clippy::cast_precision_loss)]
            (Param::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            #[allow(clippy::cast_possible_truncation)]
            (Param::Float(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (Param::Float(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (Param::Text(s), t) if is_text(t) => s.as_str().to_sql(ty, out),
            (p, &Type::JSON | &Type::JSONB) => {
                let v = match p {
                    Param::Bool(b) => Value::Bool(*b),
                    Param::Int(i) => Value::from(*i),
                    Param::Float(f) => Value::from(*f),
                    Param::Text(s) => Value::String(s.clone()),
                    Param::Json(v) => v.clone(),
                    Param::Null => Value::Null,
                };
                v.to_sql(ty, out)
            }
            _ => Err(wrong()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn is_text(t: &Type) -> bool {
    matches!(
        *t,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
    ) || t.name() == "citext"
}

/// A column's value as JSON.
#[derive(Debug)]
pub struct Column(pub Value);

impl<'a> FromSql<'a> for Column {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let malformed = || -> BoxError {
            Box::new(TypeError::Malformed {
                ty: ty.name().to_owned(),
            })
        };
        let v = match *ty {
            Type::BOOL => Value::Bool(bool::from_sql(ty, raw)?),
            Type::INT2 => Value::from(i16::from_sql(ty, raw)?),
            Type::INT4 => Value::from(i32::from_sql(ty, raw)?),
            Type::INT8 => Value::from(i64::from_sql(ty, raw)?),
            Type::OID => Value::from(u32::from_sql(ty, raw)?),
            Type::FLOAT4 => float(f64::from(f32::from_sql(ty, raw)?)),
            Type::FLOAT8 => float(f64::from_sql(ty, raw)?),
            Type::JSON | Type::JSONB => Value::from_sql(ty, raw)?,
            Type::BYTEA => Value::String(base64::engine::general_purpose::STANDARD.encode(raw)),
            Type::UUID => Value::String(uuid(raw).ok_or_else(malformed)?),
            Type::DATE => {
                let days = i32::from_sql(ty, raw)?;
                Value::String(date(i64::from(days)))
            }
            Type::TIMESTAMP | Type::TIMESTAMPTZ => {
                let micros = i64::from_sql(ty, raw)?;
                let zone = if *ty == Type::TIMESTAMPTZ { "Z" } else { "" };
                Value::String(format!("{}{zone}", timestamp(micros)))
            }
            Type::NUMERIC => Value::String(numeric(raw).ok_or_else(malformed)?),
            ref t if is_text(t) => Value::String(String::from_sql(&Type::TEXT, raw)?),
            _ => {
                return Err(Box::new(TypeError::Column {
                    ty: ty.name().to_owned(),
                }));
            }
        };
        Ok(Column(v))
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxError> {
        Ok(Column(Value::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A float as a JSON number; NaN and the infinities as PostgreSQL spells them.
fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f).map_or_else(
        || {
            Value::String(if f.is_nan() {
                "NaN".into()
            } else if f > 0.0 {
                "Infinity".into()
            } else {
                "-Infinity".into()
            })
        },
        Value::Number,
    )
}

fn uuid(raw: &[u8]) -> Option<String> {
    if raw.len() != 16 {
        return None;
    }
    let hex = data_encoding::HEXLOWER.encode(raw);
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// Days since 2000-01-01 as `YYYY-MM-DD` (the proleptic Gregorian calendar).
pub(super) fn date(days_since_2000: i64) -> String {
    let (y, m, d) = civil(days_since_2000 + 10_957);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Microseconds since 2000-01-01 00:00 as `YYYY-MM-DDTHH:MM:SS[.ffffff]`.
pub(super) fn timestamp(micros: i64) -> String {
    let days = micros.div_euclid(86_400_000_000);
    let rest = micros.rem_euclid(86_400_000_000);
    let (secs, frac) = (rest / 1_000_000, rest % 1_000_000);
    let time = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac == 0 {
        format!("{}T{time}", date(days))
    } else {
        format!("{}T{time}.{frac:06}", date(days))
    }
}

/// Days since 1970-01-01 as (year, month, day): Howard Hinnant's `civil_from_days`.
fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A `numeric` in its binary form (base-10000 digits) as exact decimal text.
pub(super) fn numeric(raw: &[u8]) -> Option<String> {
    let word = |i: usize| raw.get(i..i + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    let ndigits = usize::try_from(word(0)?).ok()?;
    let weight = i64::from(word(2)?);
    let sign = word(4)? as u16;
    let dscale = usize::try_from(word(6)?).ok()?;
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i64> = (0..ndigits)
        .map(|i| word(8 + 2 * i).map(i64::from))
        .collect::<Option<_>>()?;
    let digit = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i))
            .copied()
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    if weight < 0 {
        out.push('0');
    } else {
        out.push_str(&digit(0).to_string());
        for i in 1..=weight {
            out.push_str(&format!("{:04}", digit(i)));
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            frac.push_str(&format!("{:04}", digit(i)));
            i += 1;
        }
        frac.truncate(dscale);
        out.push('.');
        out.push_str(&frac);
    }
    Some(out)
}
