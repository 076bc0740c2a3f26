//! A JSON document that cannot hide a value: a key repeated in any object, at any depth,
//! makes it malformed.
//!
//! Why: `serde_json` keeps the last of two equal keys, so a campaign document or a trace
//! header could name a failing run first and a passing one second, and only the second
//! would ever be read (docs/conformance.md, "Campaign document"). Keys are compared after
//! their escapes are decoded (`"a"` and `"\u0061"` are the same key). serde_json's own
//! recursion limit bounds the depth.

use std::collections::BTreeSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

struct NoRepeatedKeys;

impl<'de> Deserialize<'de> for NoRepeatedKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoRepeatedKeysVisitor)
    }
}

struct NoRepeatedKeysVisitor;

impl<'de> Visitor<'de> for NoRepeatedKeysVisitor {
    type Value = NoRepeatedKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_unit<E: de::Error>(self) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_none<E: de::Error>(self) -> Result<NoRepeatedKeys, E> {
        Ok(NoRepeatedKeys)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NoRepeatedKeys, A::Error> {
        while seq.next_element::<NoRepeatedKeys>()?.is_some() {}
        Ok(NoRepeatedKeys)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NoRepeatedKeys, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format!("the key `{key}` is repeated")));
            }
            map.next_value::<NoRepeatedKeys>()?;
            seen.insert(key);
        }
        Ok(NoRepeatedKeys)
    }
}

/// `Err(why)` when `bytes` is not one JSON value, or repeats a key in some object.
pub fn check_no_repeated_keys(bytes: &[u8]) -> Result<(), String> {
    serde_json::from_slice::<NoRepeatedKeys>(bytes)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::check_no_repeated_keys;

    #[test]
    fn a_repeated_key_at_any_depth_is_refused() {
        assert!(check_no_repeated_keys(br#"{"a": 1, "b": [{"c": 1}]}"#).is_ok());
        assert!(check_no_repeated_keys(br#"{"a": 1, "a": 2}"#).is_err());
        assert!(check_no_repeated_keys(br#"{"s": [{"x": {"k": 1, "k": 1}}]}"#).is_err());
        // The same key spelt with an escape is the same key.
        assert!(check_no_repeated_keys(br#"{"a": 1, "\u0061": 2}"#).is_err());
        // Equal keys in different objects are fine.
        assert!(check_no_repeated_keys(br#"[{"a": 1}, {"a": 2}]"#).is_ok());
        assert!(check_no_repeated_keys(b"{").is_err());
    }
}
