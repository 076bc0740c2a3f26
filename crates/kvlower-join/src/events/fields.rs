//! JSON paths inside a line (rendered only when a decode error names one) and the
//! readers of single fields that every event format shares.

use serde_json::Value;

use super::{BlockHash, DecodeError};

/// A JSON path inside a line, rendered only when a decode error names it (building
/// one `String` per field of every event cost more than the decoding itself).
pub(crate) trait JsonPath {
    fn render(&self) -> String;
}

impl JsonPath for str {
    fn render(&self) -> String {
        self.to_string()
    }
}

impl JsonPath for String {
    fn render(&self) -> String {
        self.clone()
    }
}

/// `base[pos]` for positional encodings, `base.name` for maps.
pub(crate) struct FieldPath<'a> {
    base: &'a str,
    name: &'a str,
    pos: Option<usize>,
}

impl JsonPath for FieldPath<'_> {
    fn render(&self) -> String {
        match self.pos {
            Some(p) => format!("{}[{p}]", self.base),
            None => format!("{}.{}", self.base, self.name),
        }
    }
}

/// Element `i` of the array at a path.
struct Indexed<'a, P: JsonPath + ?Sized>(&'a P, usize);

impl<P: JsonPath + ?Sized> JsonPath for Indexed<'_, P> {
    fn render(&self) -> String {
        format!("{}[{}]", self.0.render(), self.1)
    }
}

pub(super) fn err(path: &(impl JsonPath + ?Sized), message: impl Into<String>) -> DecodeError {
    DecodeError {
        json_path: Some(path.render()),
        message: message.into(),
    }
}

pub(super) fn opt_i64(
    v: Option<&Value>,
    path: &(impl JsonPath + ?Sized),
) -> Result<Option<i64>, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| err(path, "expected an integer or null")),
    }
}

pub(super) fn opt_str(
    v: Option<&Value>,
    path: &(impl JsonPath + ?Sized),
) -> Result<Option<String>, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(err(path, "expected a string or null")),
    }
}

pub(super) fn hash(v: &Value, path: &(impl JsonPath + ?Sized)) -> Result<BlockHash, DecodeError> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(BlockHash::from_i64(i))
            } else if let Some(u) = n.as_u64() {
                Ok(BlockHash::Int(u))
            } else {
                Err(err(path, "block hash must be an integer within 64 bits"))
            }
        }
        Value::String(s) => Ok(BlockHash::Bytes(s.as_str().into())),
        _ => Err(err(
            path,
            "block hash must be an integer or a (bytes) string",
        )),
    }
}

pub(super) fn opt_hash(
    v: &Value,
    path: &(impl JsonPath + ?Sized),
) -> Result<Option<BlockHash>, DecodeError> {
    match v {
        Value::Null => Ok(None),
        v => hash(v, path).map(Some),
    }
}

pub(super) fn hashes(
    v: &Value,
    path: &(impl JsonPath + ?Sized),
) -> Result<Vec<BlockHash>, DecodeError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(path, "block_hashes must be an array"))?;
    a.iter()
        .enumerate()
        .map(|(i, h)| hash(h, &Indexed(path, i)))
        .collect()
}

pub(super) fn token_ids(
    v: &Value,
    path: &(impl JsonPath + ?Sized),
) -> Result<Vec<u32>, DecodeError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(path, "token_ids must be an array"))?;
    a.iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| err(&Indexed(path, i), "token id must be a u32"))
        })
        .collect()
}

/// Field name → positional JSON path, or `.name` for maps.
pub(super) fn field_path<'a>(base: &'a str, name: &'a str, pos: Option<usize>) -> FieldPath<'a> {
    FieldPath { base, name, pos }
}
