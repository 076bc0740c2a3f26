//! A bounded msgpack → JSON-value decoder for captured event payloads.
//!
//! The runtimes encode events with msgspec; the join's decoders work on
//! `serde_json::Value`, so a payload is turned into the same structure the JSON Lines
//! input uses. Markers are classified by the `rmp` crate; lengths are checked against
//! the bytes that remain *before* anything is allocated, nesting is capped, and so is
//! the number of values in one payload, so a hostile frame costs bounded memory.
//!
//! Mapping: nil → null, bool, integers (u64 / i64), floats, str → string,
//! **bin → lowercase hex string** (vLLM's `bytes` block hashes: opaque, compared for
//! equality only), array, map with string keys. Extension types and non-string map
//! keys are refused: no runtime's KV events use them.

use rmp::Marker;
use serde_json::{Map, Number, Value};

/// Deepest nesting accepted (events are three or four levels deep).
pub const MAX_DEPTH: usize = 32;
/// Most values in one payload (a 16 MiB frame of one-byte values would otherwise cost
/// half a gigabyte as JSON values).
pub const MAX_VALUES: usize = 4 * 1024 * 1024;

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    values: usize,
}

type R<T> = Result<T, String>;

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| format!("byte {}: payload ends inside a value", self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn be<const N: usize>(&mut self) -> R<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn len8(&mut self) -> R<usize> {
        Ok(usize::from(self.be::<1>()?[0]))
    }
    fn len16(&mut self) -> R<usize> {
        Ok(usize::from(u16::from_be_bytes(self.be()?)))
    }
    fn len32(&mut self) -> R<usize> {
        usize::try_from(u32::from_be_bytes(self.be()?)).map_err(|e| e.to_string())
    }
    fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }

    fn value(&mut self, depth: usize) -> R<Value> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "byte {}: nested deeper than {MAX_DEPTH} levels",
                self.pos
            ));
        }
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(format!("more than {MAX_VALUES} values in one payload"));
        }
        let at = self.pos;
        let m = Marker::from_u8(self.be::<1>()?[0]);
        Ok(match m {
            Marker::Null => Value::Null,
            Marker::True => Value::Bool(true),
            Marker::False => Value::Bool(false),
            Marker::FixPos(v) => Value::from(v),
            Marker::FixNeg(v) => Value::from(v),
            Marker::U8 => Value::from(self.be::<1>()?[0]),
            Marker::U16 => Value::from(u16::from_be_bytes(self.be()?)),
            Marker::U32 => Value::from(u32::from_be_bytes(self.be()?)),
            Marker::U64 => Value::from(u64::from_be_bytes(self.be()?)),
            Marker::I8 => Value::from(i8::from_be_bytes(self.be()?)),
            Marker::I16 => Value::from(i16::from_be_bytes(self.be()?)),
            Marker::I32 => Value::from(i32::from_be_bytes(self.be()?)),
            Marker::I64 => Value::from(i64::from_be_bytes(self.be()?)),
            Marker::F32 => float(f64::from(f32::from_be_bytes(self.be()?)), at)?,
            Marker::F64 => float(f64::from_be_bytes(self.be()?), at)?,
            Marker::FixStr(n) => self.str(usize::from(n), at)?,
            Marker::Str8 => {
                let n = self.len8()?;
                self.str(n, at)?
            }
            Marker::Str16 => {
                let n = self.len16()?;
                self.str(n, at)?
            }
            Marker::Str32 => {
                let n = self.len32()?;
                self.str(n, at)?
            }
            Marker::Bin8 => {
                let n = self.len8()?;
                self.bin(n)?
            }
            Marker::Bin16 => {
                let n = self.len16()?;
                self.bin(n)?
            }
            Marker::Bin32 => {
                let n = self.len32()?;
                self.bin(n)?
            }
            Marker::FixArray(n) => self.array(usize::from(n), depth)?,
            Marker::Array16 => {
                let n = self.len16()?;
                self.array(n, depth)?
            }
            Marker::Array32 => {
                let n = self.len32()?;
                self.array(n, depth)?
            }
            Marker::FixMap(n) => self.map(usize::from(n), depth)?,
            Marker::Map16 => {
                let n = self.len16()?;
                self.map(n, depth)?
            }
            Marker::Map32 => {
                let n = self.len32()?;
                self.map(n, depth)?
            }
            Marker::FixExt1
            | Marker::FixExt2
            | Marker::FixExt4
            | Marker::FixExt8
            | Marker::FixExt16
            | Marker::Ext8
            | Marker::Ext16
            | Marker::Ext32 => {
                return Err(format!(
                    "byte {at}: msgpack extension type (no KV event uses one)"
                ));
            }
            Marker::Reserved => return Err(format!("byte {at}: reserved msgpack marker 0xc1")),
        })
    }

    fn str(&mut self, n: usize, at: usize) -> R<Value> {
        let s = self.take(n)?;
        std::str::from_utf8(s)
            .map(|s| Value::String(s.to_string()))
            .map_err(|_| format!("byte {at}: msgpack str is not UTF-8"))
    }

    fn bin(&mut self, n: usize) -> R<Value> {
        let s = self.take(n)?;
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(n * 2);
        for b in s {
            hex.push(char::from(HEX[usize::from(b >> 4)]));
            hex.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Ok(Value::String(hex))
    }

    fn array(&mut self, n: usize, depth: usize) -> R<Value> {
        // Every element takes at least one byte.
        if n > self.remaining() {
            return Err(format!(
                "byte {}: array of {n} elements in {} remaining bytes",
                self.pos,
                self.remaining()
            ));
        }
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.value(depth + 1)?);
        }
        Ok(Value::Array(v))
    }

    fn map(&mut self, n: usize, depth: usize) -> R<Value> {
        if n.saturating_mul(2) > self.remaining() {
            return Err(format!(
                "byte {}: map of {n} entries in {} remaining bytes",
                self.pos,
                self.remaining()
            ));
        }
        let mut m = Map::new();
        for _ in 0..n {
            let at = self.pos;
            let Value::String(k) = self.value(depth + 1)? else {
                return Err(format!("byte {at}: map key is not a string"));
            };
            let v = self.value(depth + 1)?;
            match m.entry(k) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                serde_json::map::Entry::Occupied(e) => {
                    return Err(format!("byte {at}: duplicate map key `{}`", e.key()));
                }
            }
        }
        Ok(Value::Object(m))
    }
}

fn float(f: f64, at: usize) -> R<Value> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("byte {at}: float is not finite"))
}

/// Decodes one msgpack payload (exactly one value, nothing after it).
pub fn decode(payload: &[u8]) -> Result<Value, String> {
    let mut c = Cursor {
        b: payload,
        pos: 0,
        values: 0,
    };
    let v = c.value(0)?;
    if c.pos != payload.len() {
        return Err(format!(
            "byte {}: {} bytes after the payload's value",
            c.pos,
            payload.len() - c.pos
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_positional_batch_with_bytes_hashes() {
        // [1.5, [["BlockRemoved", [b"\x01\xff"], "GPU"]], 0]
        let mut p = vec![0x93, 0xcb];
        p.extend(1.5f64.to_be_bytes());
        p.extend([0x91, 0x93, 0xac]);
        p.extend(b"BlockRemoved");
        p.extend([0x91, 0xc4, 0x02, 0x01, 0xff, 0xa3]);
        p.extend(b"GPU");
        p.push(0x00);
        let v = decode(&p).unwrap();
        assert_eq!(
            v,
            serde_json::json!([1.5, [["BlockRemoved", ["01ff"], "GPU"]], 0])
        );
    }

    #[test]
    fn hostile_lengths_are_refused_before_allocating() {
        assert!(decode(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0xdf, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(decode(&[0xc6, 0xff, 0xff, 0xff, 0xff]).is_err());
        let deep = vec![0x91; 100];
        assert!(decode(&deep).unwrap_err().contains("deeper"));
        assert!(decode(&[0xc0, 0xc0]).is_err());
        assert!(decode(&[0xd4, 0, 0]).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = decode(&b);
        }
    }
}
