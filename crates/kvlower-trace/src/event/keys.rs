//! The lookup of a trace line's keys ([`crate::event`]): every declared key hashed to
//! its own slot, so the reader pays one multiplication per key, and the serde seed that
//! reads a key as bytes and looks it up.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};

use super::Field;

/// Declared keys by a hash of their first word, length and last byte, in open addressing:
/// every line has some twenty keys, so a lookup must cost one multiplication and (almost
/// always) one comparison or none. The multiplier gives every declared key its own slot
/// (`scan::tests::declared_keys_do_not_collide`). A key added later that collides is
/// still found, further along, but that test then fails: choose another multiplier.
pub(crate) struct KeyTable {
    slots: Vec<Option<(&'static [u8], Field)>>,
}

const KEY_SLOTS: usize = 256;

impl Default for KeyTable {
    fn default() -> Self {
        KeyTable {
            slots: vec![None; KEY_SLOTS],
        }
    }
}

impl KeyTable {
    /// The slot a key hashes to (before probing).
    #[inline]
    pub(crate) fn home(key: &[u8]) -> usize {
        let head = match key.first_chunk::<8>() {
            Some(word) => u64::from_le_bytes(*word),
            None => {
                let mut word = [0u8; 8];
                for (w, k) in word.iter_mut().zip(key) {
                    *w = *k;
                }
                u64::from_le_bytes(word)
            }
        };
        let last = u64::from(key.last().copied().unwrap_or(0));
        let word = head ^ ((key.len() as u64) << 56) ^ (last << 48);
        // The top byte of the product: KEY_SLOTS is 256.
        (word.wrapping_mul(0xb596_41d2_1b5c_56d3) >> 56) as usize
    }

    pub(super) fn insert(&mut self, key: &'static [u8], field: Field) {
        self.insert_at(Self::home(key), key, field);
    }

    /// Puts `key` in the first free slot from `home` on.
    pub(crate) fn insert_at(&mut self, home: usize, key: &'static [u8], field: Field) {
        for i in 0..KEY_SLOTS {
            if let Some(slot) = self.slots.get_mut((home + i) % KEY_SLOTS)
                && slot.is_none()
            {
                *slot = Some((key, field));
                return;
            }
        }
    }

    /// The declared field `key` names, or `None` (a key no gate reads).
    #[inline]
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Field> {
        self.lookup_from(Self::home(key), key)
    }

    /// Looks `key` up from slot `home` to the first free slot.
    #[inline]
    pub(crate) fn lookup_from(&self, home: usize, key: &[u8]) -> Option<Field> {
        for i in 0..KEY_SLOTS {
            let (k, field) = (*self.slots.get((home + i) % KEY_SLOTS)?)?;
            if k == key {
                return Some(field);
            }
        }
        None
    }
}

/// Reads one key as bytes and looks it up (`None`: a key no gate reads).
pub(super) struct KeySeed(pub(super) &'static KeyTable);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<Field>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Field>, D::Error> {
        struct KeyVisitor(&'static KeyTable);
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Option<Field>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Option<Field>, E> {
                Ok(self.0.lookup(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Field>, E> {
                self.visit_bytes(v.as_bytes())
            }
        }
        d.deserialize_bytes(KeyVisitor(self.0))
    }
}
