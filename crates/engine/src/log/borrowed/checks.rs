//! Values of a line's `data` checked as strictly as `serde_json::Value`
//! reads them, without building them: flags and counts read as
//! `Value::as_bool` / `Value::as_u64` see them, members looked for by name,
//! everything else walked and dropped (part of the one-pass reading of
//! crates/engine/src/log/borrowed.rs).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{MAX_DEPTH, PlainText, give_up, object_key};

/// `Value::as_bool(..) == Some(true)`, the value checked.
pub(super) struct IsTrue;

impl<'de> DeserializeSeed<'de> for IsTrue {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(Scalar::<bool>::default())
    }
}

/// `Value::as_u64(..).unwrap_or(0)`, the value checked.
pub(super) struct Count;

impl<'de> DeserializeSeed<'de> for Count {
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u64, D::Error> {
        deserializer.deserialize_any(Scalar::<u64>::default())
    }
}

/// A scalar field: its value if it is a `T` as `Value::as_bool` or
/// `Value::as_u64` sees it, else `T::default()`; other values checked.
#[derive(Default)]
struct Scalar<T>(std::marker::PhantomData<T>);

trait ScalarKind: Default {
    fn from_bool(_: bool) -> Self {
        Self::default()
    }
    fn from_u64(_: u64) -> Self {
        Self::default()
    }
}

impl ScalarKind for bool {
    fn from_bool(value: bool) -> Self {
        value
    }
}

impl ScalarKind for u64 {
    fn from_u64(value: u64) -> Self {
        value
    }
}

impl<'de, T: ScalarKind> Visitor<'de> for Scalar<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<T, E> {
        Ok(T::from_bool(value))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<T, E> {
        Ok(T::from_u64(value))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        Checked { depth: 2 }.visit_seq(seq)?;
        Ok(T::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        Checked { depth: 2 }.visit_map(map)?;
        Ok(T::default())
    }
}

/// One member of an object-valued field as [`as_text`] reads it, as
/// `Value::pointer("/field/name")` finds it: `None` if the field is not an
/// object or has no such member.
pub(super) struct Member {
    pub(super) name: &'static str,
}

impl<'de> DeserializeSeed<'de> for Member {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Member {
    type Value = Option<String>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Checked { depth: 2 }.visit_seq(seq)?;
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = object_key(&mut map)? {
            if key.0 == self.name {
                found = Some(map.next_value::<PlainText>()?.0);
            } else {
                map.next_value_seed(Checked { depth: 3 })?;
            }
        }
        Ok(found)
    }
}

/// Any JSON value at nesting `depth`, checked the way `serde_json::Value`
/// reads it (the same string, number and nesting checks), building
/// nothing.
#[derive(Clone, Copy)]
pub(super) struct Checked {
    pub(super) depth: usize,
}

impl Checked {
    fn inner<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= MAX_DEPTH {
            return Err(give_up());
        }
        Ok(Self {
            depth: self.depth + 1,
        })
    }
}

impl<'de> DeserializeSeed<'de> for Checked {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.inner()?;
        while object_key(&mut map)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}
