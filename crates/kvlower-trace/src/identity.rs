//! Per-claim stable identity fields, checked for conflicts in constant space per claim.
//!
//! Values are interned once per distinct string (claims of one run share most of them), so
//! a claim holds six `u32`s instead of six strings, and the common case (same value again)
//! is a string comparison without hashing.

use std::collections::HashMap;

use crate::event::{RawEvent, given};

/// The identity fields that must not change within one claim. The first five are the
/// artifact analyzer's `ambiguous_claim_cache_identity` list (`docs/trace-format.md`); kvlower adds the materialization
/// predicate, which the reference gate requires to be fixed.
pub(crate) const IDENTITY_FIELDS: [&str; 6] = [
    "predicate_id",
    "prefix_id",
    "reusable_object_id",
    "cache_identity",
    "request_token_map_id",
    "materialization_predicate",
];

pub(crate) const PREDICATE_ID: usize = 0;
pub(crate) const REUSABLE_OBJECT_ID: usize = 2;
pub(crate) const CACHE_IDENTITY: usize = 3;
pub(crate) const REQUEST_TOKEN_MAP_ID: usize = 4;
pub(crate) const MATERIALIZATION_PREDICATE: usize = 5;

pub(crate) fn field_values<'e>(e: &'e RawEvent<'_>) -> [Option<&'e str>; 6] {
    [
        given(&e.predicate_id),
        given(&e.prefix_id),
        given(&e.reusable_object_id),
        given(&e.cache_identity),
        given(&e.request_token_map_id),
        given(&e.materialization_predicate),
    ]
}

/// Distinct identity values seen in a trace.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    ids: HashMap<Box<str>, u32>,
    values: Vec<Box<str>>,
}

impl Interner {
    /// The id of `value` (1-based; 0 means "unset" in [`ClaimIdentity`]), or `None` when
    /// more than `u32::MAX - 1` distinct values were seen.
    fn intern(&mut self, value: &str) -> Option<u32> {
        if let Some(&id) = self.ids.get(value) {
            return Some(id);
        }
        let id = u32::try_from(self.values.len()).ok()?.checked_add(1)?;
        self.values.push(value.into());
        self.ids.insert(value.into(), id);
        Some(id)
    }

    fn value(&self, id: u32) -> Option<&str> {
        let index = usize::try_from(id).ok()?.checked_sub(1)?;
        self.values.get(index).map(|v| &**v)
    }
}

/// A claim's first value of each identity field, and which fields were ever absent.
#[derive(Debug, Default, Clone)]
pub(crate) struct ClaimIdentity {
    first: [u32; 6],
    /// Bit i: field i was absent (or null/empty) on some event of the claim.
    pub absent: u8,
    /// Bit i: field i took a second value.
    pub conflicting: u8,
}

/// Whose events a claim state machine holds, as far as its verdict must know: a
/// claim's (with the identity fields its events carried), or the trace's events that
/// name no claim (the unclaimed row, which can never pass a claim-scoped requirement).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bucket<'a> {
    Claim(&'a ClaimIdentity),
    Unclaimed,
}

impl<'a> Bucket<'a> {
    pub fn is_claim(self) -> bool {
        matches!(self, Bucket::Claim(_))
    }

    /// Whether the claim's identity fields took a second value (never, unclaimed).
    pub fn ambiguous(self) -> bool {
        matches!(self, Bucket::Claim(identity) if identity.ambiguous())
    }

    /// The claim's identity; unclaimed events have none (no field is fixed).
    pub fn identity(self) -> &'a ClaimIdentity {
        match self {
            Bucket::Claim(identity) => identity,
            Bucket::Unclaimed => &ClaimIdentity::NONE,
        }
    }
}

/// A second value of one identity field of one claim.
pub(crate) struct Conflict {
    pub field: &'static str,
    pub first: String,
    pub second: String,
}

impl ClaimIdentity {
    /// No field seen: the identity of events that name no claim.
    pub const NONE: ClaimIdentity = ClaimIdentity {
        first: [0; 6],
        absent: 0,
        conflicting: 0,
    };

    /// Records the event's identity fields; returns the first new conflict it shows.
    pub fn observe(&mut self, e: &RawEvent<'_>, interner: &mut Interner) -> Option<Conflict> {
        let mut found = None;
        for (i, value) in field_values(e).into_iter().enumerate() {
            let bit = 1u8 << i;
            let (Some(value), Some(slot)) = (value, self.first.get_mut(i)) else {
                self.absent |= bit;
                continue;
            };
            if *slot == 0 {
                match interner.intern(value) {
                    Some(id) => *slot = id,
                    // Out of ids: cannot compare any more, so count it as a conflict.
                    None => self.conflicting |= bit,
                }
                continue;
            }
            let first = interner.value(*slot).unwrap_or("");
            if first != value && self.conflicting & bit == 0 {
                self.conflicting |= bit;
                if found.is_none() {
                    found = Some(Conflict {
                        field: IDENTITY_FIELDS.get(i).copied().unwrap_or("identity"),
                        first: first.to_owned(),
                        second: value.to_owned(),
                    });
                }
            }
        }
        found
    }

    /// Whether field `i` was on every event, with one value.
    pub fn fixed(&self, i: usize) -> bool {
        let bit = 1u8 << i;
        let seen = self.first.get(i).is_some_and(|&id| id != 0);
        seen && self.absent & bit == 0 && self.conflicting & bit == 0
    }

    /// Whether any identity field took a second value.
    pub fn ambiguous(&self) -> bool {
        self.conflicting != 0
    }
}
