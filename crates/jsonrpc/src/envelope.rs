//! The serde side of [`parse`](crate::parse): visitors that read a whole
//! message (or batch) in one pass over the input.
//!
//! Every member is read *leniently*: a member of the wrong type is recorded
//! as [`Slot::Wrong`] and its value skipped, instead of failing the whole
//! document, so a readable `id` survives mistakes elsewhere in the object.
//! `params` and `result` are captured as raw JSON without being parsed.
//! The only errors that escape are JSON syntax errors.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::message::classify;
use crate::{ErrorObject, Message, RequestId};

/// One member of the envelope as found in the input.
#[derive(Debug, Default)]
pub(crate) enum Slot<T> {
    /// The key was not present.
    #[default]
    Absent,
    /// Present, with the value `null`.
    Null,
    /// Present, with a value of the right type.
    Valid(T),
    /// Present, with a value of the wrong type (already skipped).
    Wrong,
}

/// The members of one JSON object, before the envelope rules are applied.
#[derive(Debug, Default)]
pub(crate) struct Envelope {
    /// `jsonrpc`; `Valid` only for exactly `"2.0"`.
    pub version: Slot<Version>,
    pub id: Slot<RequestId>,
    pub method: Slot<String>,
    pub params: Option<Box<RawValue>>,
    pub result: Option<Box<RawValue>>,
    pub error: Slot<ErrorObject>,
    /// The first key that appeared twice, if any.
    pub duplicate: Option<&'static str>,
}

/// The top level of a document.
pub(crate) enum Top {
    /// A single object.
    Single(Message),
    /// An array (possibly empty); non-object items are already invalid.
    Batch(Vec<Message>),
    /// A string, number, boolean or null.
    Scalar,
}

impl<'de> Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TopVisitor)
    }
}

/// Generates `visit_*` methods for scalar types that all yield `$value`.
macro_rules! scalars_yield {
    ($value:expr; $($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: de::Error>(self, _: $ty) -> Result<Self::Value, E> {
                Ok($value)
            }
        )*
    };
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    scalars_yield!(Top::Scalar; visit_bool(bool), visit_i64(i64), visit_u64(u64), visit_f64(f64), visit_str(&str));

    fn visit_unit<E: de::Error>(self) -> Result<Top, E> {
        Ok(Top::Scalar)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Top, A::Error> {
        Ok(Top::Single(classify(read_envelope(map)?)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            items.push(item);
        }
        Ok(Top::Batch(items))
    }
}

/// One element of a batch.
struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Message;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Message, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn not_an_object() -> Message {
    Message::Invalid {
        id: None,
        error: ErrorObject::invalid_request("batch item is not an object"),
    }
}

impl<'de> Visitor<'de> for ItemSeed {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    scalars_yield!(not_an_object(); visit_bool(bool), visit_i64(i64), visit_u64(u64), visit_f64(f64), visit_str(&str));

    fn visit_unit<E: de::Error>(self) -> Result<Message, E> {
        Ok(not_an_object())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Message, A::Error> {
        drain_seq(seq)?;
        Ok(not_an_object())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Message, A::Error> {
        Ok(classify(read_envelope(map)?))
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    #[serde(other)]
    Other,
}

/// Reads the members of one object into an [`Envelope`].
fn read_envelope<'de, A: MapAccess<'de>>(mut map: A) -> Result<Envelope, A::Error> {
    let mut env = Envelope::default();
    // Bit per known key, to spot duplicates.
    let mut seen = 0u8;
    while let Some(key) = map.next_key::<Key>()? {
        let (bit, name) = match key {
            Key::Jsonrpc => (1, "jsonrpc"),
            Key::Id => (2, "id"),
            Key::Method => (4, "method"),
            Key::Params => (8, "params"),
            Key::Result => (16, "result"),
            Key::Error => (32, "error"),
            Key::Other => {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
        };
        if seen & bit != 0 {
            map.next_value::<IgnoredAny>()?;
            env.duplicate.get_or_insert(name);
            if matches!(key, Key::Id) {
                env.id = Slot::Wrong;
            }
            continue;
        }
        seen |= bit;
        match key {
            Key::Jsonrpc => env.version = map.next_value_seed(LaxSeed::<Version>(PhantomData))?,
            Key::Id => env.id = map.next_value_seed(LaxSeed::<RequestId>(PhantomData))?,
            Key::Method => env.method = map.next_value_seed(LaxSeed::<String>(PhantomData))?,
            Key::Params => env.params = Some(map.next_value()?),
            Key::Result => env.result = Some(map.next_value()?),
            Key::Error => env.error = map.next_value_seed(ErrorSeed)?,
            Key::Other => {}
        }
    }
    Ok(env)
}

/// The `jsonrpc` member when it is exactly `"2.0"`.
#[derive(Debug)]
pub(crate) struct Version;

/// A type that [`LaxSeed`] can read from a JSON scalar.
trait Lax: Sized {
    fn from_i64(_: i64) -> Option<Self> {
        None
    }
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    fn from_str(_: &str) -> Option<Self> {
        None
    }
}

impl Lax for Version {
    fn from_str(v: &str) -> Option<Self> {
        (v == "2.0").then_some(Version)
    }
}

impl Lax for RequestId {
    fn from_i64(v: i64) -> Option<Self> {
        Some(RequestId::Number(v))
    }
    fn from_u64(v: u64) -> Option<Self> {
        RequestId::from_u64(v)
    }
    fn from_str(v: &str) -> Option<Self> {
        Some(RequestId::String(v.to_owned()))
    }
}

impl Lax for String {
    fn from_str(v: &str) -> Option<Self> {
        Some(v.to_owned())
    }
}

impl Lax for i64 {
    fn from_i64(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_u64(v: u64) -> Option<Self> {
        i64::try_from(v).ok()
    }
}

/// Reads any JSON value as `Slot::Valid(T)` if `T` accepts it, else
/// `Slot::Wrong`; never fails except on JSON syntax errors.
struct LaxSeed<T>(PhantomData<T>);

fn slot<T>(value: Option<T>) -> Slot<T> {
    value.map_or(Slot::Wrong, Slot::Valid)
}

impl<'de, T: Lax> DeserializeSeed<'de> for LaxSeed<T> {
    type Value = Slot<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: Lax> Visitor<'de> for LaxSeed<T> {
    type Value = Slot<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_yield!(Slot::Wrong; visit_bool(bool), visit_f64(f64));

    fn visit_unit<E: de::Error>(self) -> Result<Slot<T>, E> {
        Ok(Slot::Null)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Slot<T>, E> {
        Ok(slot(T::from_i64(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Slot<T>, E> {
        Ok(slot(T::from_u64(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Slot<T>, E> {
        Ok(slot(T::from_str(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Slot<T>, A::Error> {
        drain_seq(seq)?;
        Ok(Slot::Wrong)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Slot<T>, A::Error> {
        drain_map(map)?;
        Ok(Slot::Wrong)
    }
}

/// Reads the `error` member leniently: `Valid` only for an object with an
/// integer `code`, a string `message` and no duplicate keys.
struct ErrorSeed;

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ErrorKey {
    Code,
    Message,
    Data,
    #[serde(other)]
    Other,
}

impl<'de> DeserializeSeed<'de> for ErrorSeed {
    type Value = Slot<ErrorObject>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ErrorSeed {
    type Value = Slot<ErrorObject>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_yield!(Slot::Wrong; visit_bool(bool), visit_i64(i64), visit_u64(u64), visit_f64(f64), visit_str(&str));

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Slot::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(Slot::Wrong)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut code = Slot::Absent;
        let mut message = Slot::Absent;
        let mut data = None;
        let mut duplicate = false;
        while let Some(key) = map.next_key::<ErrorKey>()? {
            match key {
                ErrorKey::Code if matches!(code, Slot::Absent) => {
                    code = map.next_value_seed(LaxSeed::<i64>(PhantomData))?;
                }
                ErrorKey::Message if matches!(message, Slot::Absent) => {
                    message = map.next_value_seed(LaxSeed::<String>(PhantomData))?;
                }
                ErrorKey::Data if data.is_none() => {
                    data = Some(map.next_value::<&'de RawValue>()?);
                }
                ErrorKey::Code | ErrorKey::Message | ErrorKey::Data => {
                    duplicate = true;
                    map.next_value::<IgnoredAny>()?;
                }
                ErrorKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let (Slot::Valid(code), Slot::Valid(message), false) = (code, message, duplicate) else {
            return Ok(Slot::Wrong);
        };
        // `data` was captured raw and is parsed on its own, so serde_json's
        // recursion limit (128) counts from `data` itself rather than from
        // the top of the message: any `data` within `Limits::max_depth`
        // (default 128) then parses. Error responses are rare, so the
        // second look at these bytes costs little.
        let data = match data.map(|raw| serde_json::from_str::<Value>(raw.get())) {
            None | Some(Ok(Value::Null)) => None,
            Some(Ok(value)) => Some(value),
            Some(Err(_)) => return Ok(Slot::Wrong),
        };
        Ok(Slot::Valid(ErrorObject {
            code,
            message,
            data,
        }))
    }
}

/// Reads a request for one expected method, its `params` deserialized as `P` in the same
/// pass (see [`parse_call`](crate::parse_call)).
///
/// `Ok(None)`, or an error, means the message is not such a request in its plain form: a
/// repeated key, a `jsonrpc` other than `"2.0"`, an id that is not an integer or string,
/// another method, `result` or `error` present, no `params`, or `params` that `P` refuses.
/// The caller then reads it again with [`Top`], which says exactly what is wrong.
pub(crate) struct CallVisitor<'m, P> {
    pub method: &'m str,
    pub params: PhantomData<P>,
}

impl<'de, P: Deserialize<'de>> Visitor<'de> for CallVisitor<'_, P> {
    type Value = Option<(RequestId, P)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} request", self.method)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut id = None;
        let mut params = None;
        // `params` that came before `method`, kept raw until the method is known.
        let mut early: Option<&'de RawValue> = None;
        let mut seen = 0u8;
        while let Some(key) = map.next_key::<Key>()? {
            let bit = match key {
                Key::Jsonrpc => 1,
                Key::Id => 2,
                Key::Method => 4,
                Key::Params => 8,
                Key::Result | Key::Error => return Ok(None),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & bit != 0 {
                return Ok(None);
            }
            seen |= bit;
            match key {
                Key::Jsonrpc => {
                    if !matches!(
                        map.next_value_seed(LaxSeed::<Version>(PhantomData))?,
                        Slot::Valid(_)
                    ) {
                        return Ok(None);
                    }
                }
                Key::Id => match map.next_value_seed(LaxSeed::<RequestId>(PhantomData))? {
                    Slot::Valid(v) => id = Some(v),
                    _ => return Ok(None),
                },
                Key::Method => {
                    if !map.next_value_seed(IsStr(self.method))? {
                        return Ok(None);
                    }
                }
                Key::Params if seen & 4 != 0 => {
                    params = Some(map.next_value_seed(Container::<P>(PhantomData))?);
                }
                _ => early = Some(map.next_value()?),
            }
        }
        let (Some(id), 15) = (id, seen) else {
            return Ok(None);
        };
        if let Some(raw) = early {
            let mut de = serde_json::Deserializer::from_str(raw.get());
            return Ok(Container::<P>(PhantomData)
                .deserialize(&mut de)
                .ok()
                .map(|p| (id, p)));
        }
        Ok(params.map(|p| (id, p)))
    }
}

/// Reads whether a value is the given string; any other value is skipped and reads false.
struct IsStr<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for IsStr<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IsStr<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalars_yield!(false; visit_bool(bool), visit_i64(i64), visit_u64(u64), visit_f64(f64));

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        drain_seq(seq)?;
        Ok(false)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        drain_map(map)?;
        Ok(false)
    }
}

/// Deserializes `P` from an object or an array only, as the envelope requires of `params`
/// (a `P` that would also accept a scalar must not see one).
struct Container<P>(PhantomData<P>);

impl<'de, P: Deserialize<'de>> DeserializeSeed<'de> for Container<P> {
    type Value = P;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<P, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, P: Deserialize<'de>> Visitor<'de> for Container<P> {
    type Value = P;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or an array")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<P, A::Error> {
        P::deserialize(de::value::MapAccessDeserializer::new(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<P, A::Error> {
        P::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }
}
