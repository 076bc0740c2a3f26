//! Every error in one pass: after the first schema error, the document is
//! repaired node by node (as rustc and ruff recover per item) and read again,
//! so that a file with twenty mistakes reports twenty findings, each at its
//! place in the file as written.
//!
//! A repair only ever serves to find the next error: the repaired value is
//! handed back for further checks (validation) but never as the document.
//! Repairs: an unknown key is removed; an unknown name is replaced by the
//! first name the error offers; a value of the wrong kind becomes an empty
//! one of the right kind (a list, a string, `false`, `0`); anything else
//! removes the innermost list item holding the error. When no repair applies
//! (a required key of a top-level mapping is missing, say), recovery stops
//! with the errors found so far.

use serde::de::DeserializeOwned;
use serde_yaml::Value;

use crate::{Structure, YamlError, structure};

/// The most errors one document reports (each costs one re-read of it).
pub const MAX_ERRORS: usize = 100;

/// The most bytes of re-reading one document may cost: a large file reports
/// fewer errors (`RE_READ_BUDGET / size`, at least 1), so a hostile 1 MiB file
/// costs at most 32 re-reads.
pub const RE_READ_BUDGET: usize = 32 * 1024 * 1024;

/// What [`from_str_recovering`] found.
#[derive(Debug)]
pub struct Recovered<T> {
    /// Every error, in document order of discovery, with paths and locations in
    /// the document as written; empty when the document deserialized as is.
    pub errors: Vec<YamlError>,
    /// The document as `T`: as written when `errors` is empty, else the
    /// repaired document when it deserialized after its repairs (for finding
    /// more errors only; never to be judged).
    pub value: Option<T>,
    /// Paths (as written) that a repair removed or replaced: a finding at or
    /// below one of them is about the repair, not the document.
    pub repaired: Vec<String>,
    /// List items removed, as (list path, index) in the coordinates of the
    /// document at the time, in order: [`Recovered::original_path`] undoes them.
    removals: Vec<(String, usize)>,
}

impl<T> Recovered<T> {
    /// The path as written of a node of the repaired document.
    pub fn original_path(&self, path: &str) -> String {
        let mut path = path.to_string();
        for (list, removed) in self.removals.iter().rev() {
            path = shift(&path, list, *removed);
        }
        path
    }

    /// Whether `path` (as written) is in a repaired region: the innermost list
    /// item holding a repaired node (a repaired value can make its item say
    /// something it did not, e.g. `supported` without `modes`), or the repaired
    /// node itself outside any list.
    pub fn is_repaired(&self, path: &str) -> bool {
        self.repaired.iter().any(|r| {
            let region = r.rfind(']').map_or(r.as_str(), |end| &r[..=end]);
            is_at_or_below(path, region)
        })
    }
}

/// Whether `path` is `base` or a node below it.
pub fn is_at_or_below(path: &str, base: &str) -> bool {
    base.is_empty()
        || path == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// `path` with the index after `list` raised by one when it is at or after
/// `removed` (undoing the removal of item `removed` of `list`).
fn shift(path: &str, list: &str, removed: usize) -> String {
    let Some(rest) = path.strip_prefix(list) else {
        return path.to_string();
    };
    let Some(after) = rest.strip_prefix('[') else {
        return path.to_string();
    };
    let Some((digits, tail)) = after.split_once(']') else {
        return path.to_string();
    };
    let Ok(i) = digits.parse::<usize>() else {
        return path.to_string();
    };
    if i < removed {
        return path.to_string();
    }
    format!("{list}[{}]{tail}", i + 1)
}

/// Like [`crate::from_str_all`], but after a schema error goes on repairing and
/// re-reading the document to report every error (see the module docs). A
/// structural problem (syntax, duplicate keys, nesting) stops at once.
pub fn from_str_recovering<T: DeserializeOwned>(src: &str) -> Recovered<T> {
    let mut out = Recovered {
        errors: Vec::new(),
        value: None,
        repaired: Vec::new(),
        removals: Vec::new(),
    };
    let structure = match structure(src) {
        Ok(structure) => structure,
        Err(errors) => {
            out.errors = errors;
            return out;
        }
    };
    let (first, doc) = match crate::deserialize::<T>(src) {
        Ok(value) => {
            out.value = Some(value);
            return out;
        }
        Err(failed) => {
            let (mut e, doc) = *failed;
            e.path = structure.name_unknown_keys(&e.path, e.location);
            if e.location.is_none() {
                e.location = locate(&structure, &e.path);
            }
            (e, doc)
        }
    };
    out.errors.push(first.clone());
    // The value the one parse made: repaired in place, never parsed again.
    let Some(mut doc) = doc else {
        return out;
    };
    let mut error = first;
    // Paths in the current (repaired) document of keys removed: a later
    // `missing field` for one of them means no repair can go on.
    let mut removed_keys: Vec<(String, String)> = Vec::new();
    let mut current_path = error.path.clone();
    let most = (RE_READ_BUDGET / src.len().max(1)).clamp(1, MAX_ERRORS);
    while out.errors.len() < most {
        if !repair(
            &mut doc,
            &current_path,
            &error.message,
            &mut out,
            &mut removed_keys,
        ) {
            return out;
        }
        match from_value::<T>(doc.clone()) {
            Ok(value) => {
                out.value = Some(value);
                return out;
            }
            Err((path, message)) => {
                let field = missing_field(&message);
                if field.is_some_and(|f| removed_keys.contains(&(path.clone(), f.to_string()))) {
                    // The repair removed a required key: nothing further can be read.
                    return out;
                }
                let original = out.original_path(&path);
                let original = structure.name_unknown_keys(&original, None);
                let e = YamlError {
                    location: locate(&structure, &original),
                    path: original,
                    message,
                    kind: crate::YamlErrorKind::Data,
                };
                if out
                    .errors
                    .iter()
                    .any(|o| o.path == e.path && o.message == e.message)
                {
                    return out;
                }
                out.errors.push(e.clone());
                current_path = path;
                error = e;
            }
        }
    }
    out
}

/// The location of `path` as written: its key, else its first key (a list
/// item), else its nearest located ancestor.
pub(crate) fn locate(structure: &Structure, path: &str) -> Option<(usize, usize)> {
    let mut at = path;
    loop {
        if let Some(loc) = structure.location_of(at) {
            return Some(loc);
        }
        if let Some(first) = structure
            .keys
            .iter()
            .filter(|(p, _, _)| p == at)
            .map(|(_, _, loc)| *loc)
            .min()
        {
            return Some(first);
        }
        let cut = at.rfind(['.', '['])?;
        at = &at[..cut];
    }
}

/// Deserializes a repaired document: the path (current coordinates) and message of an error.
fn from_value<T: DeserializeOwned>(doc: Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize(doc).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." { String::new() } else { path };
        (path, crate::clean_message(err.into_inner().to_string()))
    })
}

/// The field a `missing field `x`` message names.
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")?
        .split_once('`')
        .map(|(f, _)| f)
}

/// One path segment.
enum Seg {
    Key(String),
    Index(usize),
}

/// `a.b[2].c` as segments; `None` for a path this cannot follow (a `?` key).
fn segments(path: &str) -> Option<Vec<Seg>> {
    let mut segs = Vec::new();
    if path.is_empty() {
        return Some(segs);
    }
    for part in path.split('.') {
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key == "?" {
            return None;
        }
        if !key.is_empty() {
            segs.push(Seg::Key(key.to_string()));
        }
        while let Some(after) = rest.strip_prefix('[') {
            let (digits, tail) = after.split_once(']')?;
            segs.push(Seg::Index(digits.parse().ok()?));
            rest = tail;
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(segs)
}

/// The path of the segments `segs`.
fn path_of(segs: &[Seg]) -> String {
    let mut path = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
            }
            Seg::Index(i) => path.push_str(&format!("[{i}]")),
        }
    }
    path
}

fn node_mut<'a>(doc: &'a mut Value, segs: &[Seg]) -> Option<&'a mut Value> {
    let mut node = doc;
    for seg in segs {
        node = match (seg, node) {
            (Seg::Key(k), Value::Mapping(m)) => m.get_mut(k.as_str())?,
            (Seg::Index(i), Value::Sequence(s)) => s.get_mut(*i)?,
            (seg, Value::Tagged(t)) => node_mut(&mut t.value, std::slice::from_ref(seg))?,
            _ => return None,
        };
    }
    Some(node)
}

/// The first name an "unknown variant `x`, expected one of `a`, `b`" message offers.
fn first_offered(message: &str) -> Option<&str> {
    let (_, expected) = message.split_once("expected ")?;
    expected.split('`').nth(1)
}

/// Repairs the node of `error_path` (current coordinates) so the next read can
/// go further; false when no repair applies.
fn repair<T>(
    doc: &mut Value,
    error_path: &str,
    message: &str,
    out: &mut Recovered<T>,
    removed_keys: &mut Vec<(String, String)>,
) -> bool {
    let Some(segs) = segments(error_path) else {
        return false;
    };
    let original = out.original_path(error_path);
    // An unknown key: the error's path may end at the key or at its mapping.
    if let Some(key) = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split_once('`'))
        .map(|(k, _)| k.to_string())
    {
        let (parent, at_key) = match segs.last() {
            Some(Seg::Key(k)) if *k == key => (&segs[..segs.len() - 1], true),
            _ => (&segs[..], false),
        };
        if let Some(Value::Mapping(m)) = node_mut(doc, parent)
            && let Some(value) = m.remove(key.as_str())
        {
            // A near miss of a key the mapping lacks (`obligaton`) is read as that key,
            // so that one misspelling is one finding (`unknown-field`, with its
            // did-you-mean), not a second `missing-field` for the key it meant.
            if let Some(meant) = crate::finding::nearest_name(message)
                && !m.contains_key(meant)
            {
                m.insert(Value::String(meant.to_string()), value);
            }
            out.repaired.push(if at_key {
                original
            } else {
                crate::join_key(&original, &key)
            });
            return true;
        }
    }
    // A scalar of the wrong name or kind: replace it with a valid one.
    let replacement = if message.starts_with("unknown variant") {
        first_offered(message).map(|name| Value::String(name.to_string()))
    } else if message.starts_with("invalid type") {
        let expected = message.split_once("expected ").map_or("", |(_, e)| e);
        if expected.starts_with("a sequence") {
            Some(Value::Sequence(Vec::new()))
        } else if expected.starts_with("a string") {
            Some(Value::String(String::new()))
        } else if expected.starts_with("a boolean") {
            Some(Value::Bool(false))
        } else if expected.starts_with("u") || expected.starts_with("i") {
            Some(Value::Number(0.into()))
        } else {
            None
        }
    } else {
        None
    };
    if let Some(replacement) = replacement
        && let Some(node) = node_mut(doc, &segs)
        && !matches!(node, Value::Mapping(_))
    {
        *node = replacement;
        out.repaired.push(original);
        return true;
    }
    // Otherwise: remove the innermost list item holding the error.
    if let Some(at) = segs.iter().rposition(|s| matches!(s, Seg::Index(_))) {
        let Seg::Index(index) = segs[at] else {
            return false;
        };
        let list = &segs[..at];
        if let Some(Value::Sequence(items)) = node_mut(doc, list)
            && index < items.len()
        {
            items.remove(index);
            let list_path = path_of(list);
            out.repaired.push(out.original_path(&path_of(&segs[..=at])));
            out.removals.push((list_path, index));
            return true;
        }
        return false;
    }
    // A key of a mapping outside any list: remove it (when it was required,
    // the next read says so, and recovery stops there).
    if let Some(Seg::Key(key)) = segs.last() {
        let parent = &segs[..segs.len() - 1];
        if let Some(Value::Mapping(m)) = node_mut(doc, parent)
            && m.remove(key.as_str()).is_some()
        {
            removed_keys.push((path_of(parent), key.clone()));
            out.repaired.push(original);
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "read only to be checked")]
    struct Item {
        name: String,
        count: u32,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[expect(dead_code, reason = "read only to be checked")]
    struct Doc {
        items: Vec<Item>,
    }

    #[test]
    fn every_broken_item_is_reported_at_its_path_as_written() {
        let src = "items:\n  - {name: a, count: 1}\n  - {name: b}\n  - {name: c, count: x}\n  - {name: d, count: 4, extra: 1}\n  - {nam: e, count: 5}\n";
        let r = from_str_recovering::<Doc>(src);
        let paths: Vec<&str> = r.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            // `nam` is unknown and a near miss of the missing `name`: read on as `name`,
            // one finding (issue 47), not also `missing field name` at `items[4]`.
            [
                "items[1]",
                "items[2].count",
                "items[3].extra",
                "items[4].nam"
            ],
            "{:#?}",
            r.errors
        );
        assert!(
            r.errors.iter().all(|e| e.location.is_some()),
            "{:#?}",
            r.errors
        );
        // items[1] was removed to read on: a path of the repaired document maps back.
        assert_eq!(r.original_path("items[2].name"), "items[3].name");
        assert!(r.is_repaired("items[2]"));
        assert!(!r.is_repaired("items[0].name"));
    }

    #[test]
    fn a_large_document_re_reads_within_the_budget() {
        let mut src = String::from("items:\n");
        while src.len() < 2 * 1024 * 1024 {
            src.push_str("  - {name: a, count: 1, extra: 1}\n");
        }
        let r = from_str_recovering::<Doc>(&src);
        let most = RE_READ_BUDGET / src.len();
        assert!(
            !r.errors.is_empty() && r.errors.len() <= most,
            "{}",
            r.errors.len()
        );
        assert!(r.value.is_none());
    }
}
