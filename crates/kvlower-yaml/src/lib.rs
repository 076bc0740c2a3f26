//! The only crate in kvlower that calls a YAML library.
//!
//! serde_yaml is archived upstream; every YAML call goes through here so that
//! swapping it (e.g. for `serde-saphyr` or `yaml_serde`) is a one-file change. It is its own crate so that every other crate
//! (the loader, the join adapter) can share it without depending on each other.
//!
//! Every document goes through two passes:
//! 1. a **structural pre-pass** ([`structure`], on saphyr-parser's event stream,
//!    which carries line and column marks): it refuses nesting deeper than
//!    [`MAX_NESTING`] before serde_yaml sees the text (libyaml's scanner is
//!    quadratic in flow depth), more than one document, and every duplicate
//!    mapping key and every explicit tag (`!!binary`, `!custom`, on a key or a
//!    value, at any depth), each at its own line; and it records where every key and
//!    every alias is, so later findings can name a key instead of `?` and
//!    report a defect of an aliased node once, at its definition;
//! 2. serde_yaml parses the text once, into the resolved YAML value, which is then
//!    read into the typed model (see [`deserialize`]).

use std::collections::BTreeMap;

use saphyr_parser::{Event, Parser, Span};
use serde::de::DeserializeOwned;

mod finding;
mod recover;
pub use recover::{MAX_ERRORS, Recovered, from_str_recovering, is_at_or_below};

/// Deepest nesting of mappings and sequences (block or flow) a document may
/// have. kvlower's formats need six; the limit keeps the YAML deserializer,
/// whose scanner is quadratic in flow depth, away from adversarial text.
pub const MAX_NESTING: usize = 32;

/// What kind of problem a [`YamlError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum YamlErrorKind {
    /// The text is not YAML (indentation, quoting, unclosed flow, ...).
    Syntax,
    /// Nesting deeper than [`MAX_NESTING`].
    TooDeep,
    /// More than one YAML document in the file.
    MultipleDocuments,
    /// A mapping names the same key twice (the second would silently win).
    DuplicateKey,
    /// A node carries an explicit tag (`!!binary`, `!custom`, `!!str`): kvlower's
    /// formats are untagged, and a tag the reader ignores would let the text mean one
    /// thing to kvlower and another to every other YAML tool.
    Tag,
    /// The YAML is well formed but does not fit the expected type.
    Data,
}

/// A YAML document that could not be read into the expected type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct YamlError {
    /// Dotted YAML path to the offending node (`rows[3].anchor`), empty at the top.
    pub path: String,
    /// 1-based line and column, when the parser knows them.
    pub location: Option<(usize, usize)>,
    /// What went wrong, without the location (that is in `location`).
    pub message: String,
    pub kind: YamlErrorKind,
}

/// One use of a YAML alias (`*name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasUse {
    /// YAML path where the alias is used (`native[3].anchor`).
    pub path: String,
    /// 1-based line and column of the `*name`.
    pub location: (usize, usize),
    /// YAML path of the anchored node (`native[0].anchor`).
    pub anchor_path: String,
    /// 1-based line and column of the anchored node.
    pub anchor_location: (usize, usize),
}

/// Where things are in a document: mapping keys and alias uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Structure {
    /// Every scalar mapping key: (path of the mapping, key, 1-based location of the key).
    pub keys: Vec<(String, String, (usize, usize))>,
    /// Every alias use, in document order.
    pub aliases: Vec<AliasUse>,
}

impl Structure {
    /// The location of the node at `path` (its key, or the alias using it).
    pub fn location_of(&self, path: &str) -> Option<(usize, usize)> {
        let (parent, key) = split_last_key(path)?;
        self.keys
            .iter()
            .find(|(p, k, _)| p == parent && k == key)
            .map(|(_, _, loc)| *loc)
    }

    /// The alias use that `path` lies in (the alias itself or below it).
    pub fn alias_covering(&self, path: &str) -> Option<&AliasUse> {
        self.aliases.iter().find(|a| {
            path == a.path
                || path
                    .strip_prefix(a.path.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        })
    }

    /// Replaces each `?` segment that serde_path_to_error writes for a map key
    /// it cannot name (enum keys) with the key at or before `location`.
    pub fn name_unknown_keys(&self, path: &str, location: Option<(usize, usize)>) -> String {
        if !path.contains('?') {
            return path.to_string();
        }
        let mut resolved = String::new();
        for (i, part) in path.split('.').enumerate() {
            let part = if part == "?" {
                let at = location.unwrap_or((usize::MAX, usize::MAX));
                self.keys
                    .iter()
                    .filter(|(p, _, loc)| *p == resolved && *loc <= at)
                    .max_by_key(|(_, _, loc)| *loc)
                    .map_or("?", |(_, k, _)| k.as_str())
            } else {
                part
            };
            if i > 0 {
                resolved.push('.');
            }
            resolved.push_str(part);
        }
        resolved
    }
}

fn split_last_key(path: &str) -> Option<(&str, &str)> {
    match path.rfind('.') {
        Some(dot) => Some((&path[..dot], &path[dot + 1..])),
        None if !path.is_empty() && !path.contains('[') => Some(("", path)),
        None => None,
    }
}

/// Writes `value` as one YAML document (block style, no anchors or aliases),
/// e.g. the built-in catalog that `kvlower init` writes as `modes/modes.yaml`.
pub fn to_string<T: serde::Serialize>(value: &T) -> Result<String, String> {
    serde_yaml::to_string(value).map_err(|e| e.to_string())
}

/// Deserializes `src` into `T`, recording the YAML path of any error. The
/// first structural problem (see [`from_str_all`]) wins.
pub fn from_str<T: DeserializeOwned>(src: &str) -> Result<T, YamlError> {
    from_str_all(src).map_err(|mut errors| errors.swap_remove(0))
}

/// Like [`from_str`], but reports every structural problem (every duplicate
/// key, for example), in document order. The list is never empty.
pub fn from_str_all<T: DeserializeOwned>(src: &str) -> Result<T, Vec<YamlError>> {
    let structure = structure(src)?;
    deserialize(src).map_err(|failed| {
        let (mut e, _) = *failed;
        e.path = structure.name_unknown_keys(&e.path, e.location);
        if e.location.is_none() {
            e.location = recover::locate(&structure, &e.path);
        }
        vec![e]
    })
}

/// Reads `src` as `T` with one parse of the text: into the resolved YAML value, where a
/// plain `true` is a boolean, `1.5` a number and `~` a null, then that value into `T`.
/// The text reader hands a plain scalar to a string field as its text, so `reason: true`
/// read as the string `"true"` while the generated schema (from the same types) says a
/// string: reading the resolved value makes every field the types (and so the schema)
/// call a string take only a YAML string, by construction (issue 42, item 6).
///
/// Only a document that fails is read from the text as well, for the error: serde_yaml's
/// text reader knows the line and column of the node it failed on (a value, an unknown
/// key, a key of an enum-keyed map), which the resolved value has lost. Its error wins
/// when it finds one; otherwise (the value is the right text of the wrong YAML type) the
/// value's error is returned with a path but no location, which the callers find in the
/// document's [`Structure`]. On a typed error the value is handed back too, so that
/// recovery repairs it without parsing the text again.
/// A failed [`deserialize`]: the error, and the resolved value when the text parsed.
type Failed = Box<(YamlError, Option<serde_yaml::Value>)>;

fn deserialize<T: DeserializeOwned>(src: &str) -> Result<T, Failed> {
    let value: serde_yaml::Value = match serde_yaml::from_str(src) {
        Ok(value) => value,
        // The text reader names where (an alias bomb's repetition at its path).
        Err(e) => {
            let error = deserialize_text::<T>(src)
                .err()
                .unwrap_or_else(|| YamlError {
                    path: String::new(),
                    location: e.location().map(|l| (l.line(), l.column())),
                    message: clean_message(e.to_string()),
                    kind: YamlErrorKind::Syntax,
                });
            return Err(Box::new((error, None)));
        }
    };
    match serde_path_to_error::deserialize::<_, T>(&value) {
        Ok(typed) => Ok(typed),
        Err(err) => {
            if let Err(located) = deserialize_text::<T>(src) {
                return Err(Box::new((located, Some(value))));
            }
            let path = err.path().to_string();
            let error = YamlError {
                path: if path == "." { String::new() } else { path },
                location: None,
                message: clean_message(err.into_inner().to_string()),
                kind: YamlErrorKind::Data,
            };
            Err(Box::new((error, Some(value))))
        }
    }
}

fn deserialize_text<T: DeserializeOwned>(src: &str) -> Result<T, YamlError> {
    let de = serde_yaml::Deserializer::from_str(src);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let location = inner.location().map(|l| (l.line(), l.column()));
        let message = clean_message(inner.to_string());
        let kind = if message.starts_with("duplicate") {
            YamlErrorKind::DuplicateKey
        } else if message.starts_with("recursion limit") {
            YamlErrorKind::TooDeep
        } else {
            YamlErrorKind::Data
        };
        YamlError {
            path: if path == "." { String::new() } else { path },
            location,
            message,
            kind,
        }
    })
}

/// A serde_yaml message without the location and path it carries in its text.
fn clean_message(mut message: String) -> String {
    // serde_yaml appends " at line L column C"; we carry that separately.
    if let Some(cut) = message.find(" at line ") {
        message.truncate(cut);
    }
    // serde_yaml also prefixes the path ("runtime: duplicate field"); we carry it separately.
    if let Some((head, rest)) = message.split_once(": ")
        && !head.is_empty()
        && !head.contains(char::is_whitespace)
    {
        message = rest.to_string();
    }
    message
}

/// One open collection during the structural pass.
enum Frame {
    Mapping {
        path: String,
        /// The key just read, waiting for its value; `None` when a key is next.
        key: Option<String>,
        seen: BTreeMap<String, (usize, usize)>,
    },
    Sequence {
        path: String,
        next: usize,
    },
}

fn loc(span: &Span) -> (usize, usize) {
    (span.start.line(), span.start.col() + 1)
}

fn join_key(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_string()
    } else {
        format!("{parent}.{key}")
    }
}

/// The structural pre-pass: refuses too-deep nesting, several documents and
/// duplicate keys (all of them), and records keys and alias uses. Syntax
/// errors are reported at the scanner's location.
pub fn structure(src: &str) -> Result<Structure, Vec<YamlError>> {
    let mut out = Structure::default();
    let mut errors = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: BTreeMap<usize, (String, (usize, usize))> = BTreeMap::new();
    let mut documents = 0usize;
    for event in Parser::new_from_str(src) {
        let (event, span) = match event {
            Ok(ok) => ok,
            Err(e) => {
                let m = e.marker();
                let info = e.info();
                let (kind, message) = if info.contains("recursion limit") {
                    (
                        YamlErrorKind::TooDeep,
                        format!("nesting deeper than {MAX_NESTING} levels"),
                    )
                } else {
                    (YamlErrorKind::Syntax, info.to_string())
                };
                errors.push(YamlError {
                    path: current_path(&stack),
                    location: Some((m.line(), m.col() + 1)),
                    message,
                    kind,
                });
                return Err(errors);
            }
        };
        let at = loc(&span);
        // The path of a node that starts here, and whether it is a mapping key.
        let (path, is_key) = match stack.last() {
            None => (String::new(), false),
            Some(Frame::Mapping {
                path, key: None, ..
            }) => (join_key(path, "?"), true),
            Some(Frame::Mapping {
                path, key: Some(k), ..
            }) => (join_key(path, k), false),
            Some(Frame::Sequence { path, next }) => (format!("{path}[{next}]"), false),
        };
        let anchor_of = |id: usize, anchors: &mut BTreeMap<usize, (String, (usize, usize))>| {
            if id != 0 {
                anchors.insert(id, (path.clone(), at));
            }
        };
        if let Some(tag) = tag_of(&event) {
            errors.push(YamlError {
                path: match &event {
                    Event::Scalar(value, ..) if is_key => {
                        let parent = path.strip_suffix(".?").or_else(|| path.strip_suffix('?'));
                        join_key(parent.unwrap_or_default(), value)
                    }
                    _ => path.clone(),
                },
                location: Some(at),
                message: format!(
                    "explicit YAML tag `{tag}`{}; kvlower reads untagged YAML only",
                    if is_key { " on a key" } else { "" }
                ),
                kind: YamlErrorKind::Tag,
            });
        }
        match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    errors.push(YamlError {
                        path: String::new(),
                        location: Some(at),
                        message: "a second YAML document starts here; kvlower reads exactly one document per file".into(),
                        kind: YamlErrorKind::MultipleDocuments,
                    });
                    return Err(errors);
                }
                continue;
            }
            Event::Scalar(value, _, id, _) => {
                anchor_of(id, &mut anchors);
                if is_key {
                    if let Some(Frame::Mapping { path, key, seen }) = stack.last_mut() {
                        if let Some(first) = seen.get(value.as_ref()) {
                            errors.push(YamlError {
                                path: join_key(path, &value),
                                location: Some(at),
                                message: format!(
                                    "duplicate key `{value}` (first at line {}); the second would silently win",
                                    first.0
                                ),
                                kind: YamlErrorKind::DuplicateKey,
                            });
                        } else {
                            seen.insert(value.to_string(), at);
                        }
                        out.keys.push((path.clone(), value.to_string(), at));
                        *key = Some(value.into_owned());
                    }
                    continue;
                }
            }
            Event::Alias(id) => {
                if let Some((anchor_path, anchor_location)) = anchors.get(&id) {
                    out.aliases.push(AliasUse {
                        path: path.clone(),
                        location: at,
                        anchor_path: anchor_path.clone(),
                        anchor_location: *anchor_location,
                    });
                }
                if is_key {
                    set_key(&mut stack, "?");
                    continue;
                }
            }
            Event::MappingStart(id, _) | Event::SequenceStart(id, _) => {
                anchor_of(id, &mut anchors);
                if stack.len() >= MAX_NESTING {
                    errors.push(YamlError {
                        path,
                        location: Some(at),
                        message: format!("nesting deeper than {MAX_NESTING} levels"),
                        kind: YamlErrorKind::TooDeep,
                    });
                    return Err(errors);
                }
                let path = if is_key { join_key(&path, "?") } else { path };
                stack.push(if matches!(event, Event::MappingStart(..)) {
                    Frame::Mapping {
                        path,
                        key: None,
                        seen: BTreeMap::new(),
                    }
                } else {
                    Frame::Sequence { path, next: 0 }
                });
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => continue,
        }
        // A complete node: the parent moves on (after a key, to its value;
        // after a value, to the next key; a collection used as a key is `?`).
        match stack.last_mut() {
            Some(Frame::Mapping { key, .. }) => {
                *key = if key.is_some() {
                    None
                } else {
                    Some("?".into())
                };
            }
            Some(Frame::Sequence { next, .. }) => *next += 1,
            None => {}
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The explicit tag of a node, as written (`!!binary`, `!custom`), if it has one.
fn tag_of(event: &Event<'_>) -> Option<String> {
    let tag = match event {
        Event::Scalar(_, _, _, tag)
        | Event::MappingStart(_, tag)
        | Event::SequenceStart(_, tag) => tag.as_ref()?,
        _ => return None,
    };
    // The parser resolves `!!` to the core schema's prefix: show it as written.
    match tag.handle.strip_prefix("tag:yaml.org,2002:") {
        Some("") => Some(format!("!!{}", tag.suffix)),
        _ => Some(format!("{}{}", tag.handle, tag.suffix)),
    }
}

fn set_key(stack: &mut [Frame], key: &str) {
    if let Some(Frame::Mapping { key: k, .. }) = stack.last_mut() {
        *k = Some(key.to_string());
    }
}

fn current_path(stack: &[Frame]) -> String {
    match stack.last() {
        Some(Frame::Mapping { path, key, .. }) => match key {
            Some(k) => join_key(path, k),
            None => path.clone(),
        },
        Some(Frame::Sequence { path, next }) => format!("{path}[{next}]"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A billion-laughs document expands to 9^9 nodes if aliases are replayed
    /// naively; the parser must refuse it quickly, even into an untyped value.
    #[test]
    fn alias_bombs_are_refused() {
        let mut doc = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 0..8u8 {
            let (this, prev) = ((b'b' + i) as char, (b'a' + i) as char);
            let refs = vec![format!("*{prev}"); 9].join(",");
            doc.push_str(&format!("{this}: &{this} [{refs}]\n"));
        }
        let err = from_str::<serde_json::Value>(&doc).expect_err("the bomb is refused");
        assert!(err.message.contains("repetition limit"), "{}", err.message);
    }

    #[test]
    fn deep_nesting_is_refused_before_serde_yaml() {
        for n in [MAX_NESTING + 1, 10_000, 100_000] {
            let doc = format!("{}{}", "[".repeat(n), "]".repeat(n));
            let err = from_str::<serde_json::Value>(&doc).expect_err("refused");
            assert_eq!(err.kind, YamlErrorKind::TooDeep, "{n}: {}", err.message);
            assert!(
                err.message.contains("nesting deeper than 32"),
                "{}",
                err.message
            );
        }
        // Block nesting counts too, and the limit itself is accepted.
        let ok = format!("{}1{}", "[".repeat(MAX_NESTING), "]".repeat(MAX_NESTING));
        assert!(from_str::<serde_json::Value>(&ok).is_ok());
        let mut block = String::new();
        for i in 0..=MAX_NESTING {
            block.push_str(&format!("{}k{i}:\n", "  ".repeat(i)));
        }
        let err = from_str::<serde_json::Value>(&block).expect_err("refused");
        assert_eq!(err.kind, YamlErrorKind::TooDeep);
    }

    #[test]
    fn every_duplicate_key_is_reported_at_its_own_line() {
        let src = "a:\n  x: 1\n  y: 2\n  x: 3\nb: 1\nb: 2\n";
        let errors = from_str_all::<serde_json::Value>(src).expect_err("duplicates");
        type Found<'a> = (&'a str, Option<(usize, usize)>, YamlErrorKind);
        let found: Vec<Found<'_>> = errors
            .iter()
            .map(|e| (e.path.as_str(), e.location, e.kind))
            .collect();
        assert_eq!(
            found,
            vec![
                ("a.x", Some((4, 3)), YamlErrorKind::DuplicateKey),
                ("b", Some((6, 1)), YamlErrorKind::DuplicateKey),
            ]
        );
        assert!(errors[0].message.contains("first at line 2"));
        // Into a map type, where serde_yaml would let the last one win silently.
        let err = from_str::<BTreeMap<String, u32>>("k: 1\nk: 2\n").expect_err("dup");
        assert_eq!(err.kind, YamlErrorKind::DuplicateKey);
        // Keys in different mappings, or list items, are not duplicates.
        assert!(from_str::<serde_json::Value>("- {k: 1}\n- {k: 2}\n").is_ok());
    }

    /// Every explicit tag is refused at its own place, on values and keys, scalars and
    /// collections, at any depth; serde_yaml alone reads `!!binary eA==` into a string
    /// field as the text `eA==`.
    #[test]
    fn every_explicit_tag_is_refused_where_it_is() {
        #[derive(Debug, serde::Deserialize)]
        #[expect(
            dead_code,
            reason = "read by serde for its shape; the value itself is never used"
        )]
        struct Doc {
            a: String,
        }
        let src = "a: !!binary eA==\nb:\n  - {c: !custom x}\n  - !!map {d: 1}\n!k e: f\n";
        let errors = from_str_all::<serde_json::Value>(src).expect_err("tags");
        type Found<'a> = (&'a str, Option<(usize, usize)>, YamlErrorKind);
        let found: Vec<Found<'_>> = errors
            .iter()
            .map(|e| (e.path.as_str(), e.location, e.kind))
            .collect();
        assert_eq!(
            found,
            vec![
                ("a", Some((1, 4)), YamlErrorKind::Tag),
                ("b[0].c", Some((3, 9)), YamlErrorKind::Tag),
                ("b[1]", Some((4, 5)), YamlErrorKind::Tag),
                ("e", Some((5, 1)), YamlErrorKind::Tag),
            ]
        );
        assert!(
            errors[0].message.contains("`!!binary`"),
            "{}",
            errors[0].message
        );
        assert!(
            errors[3].message.contains("on a key"),
            "{}",
            errors[3].message
        );
        assert_eq!(
            from_str::<Doc>("a: !!str x\n").map_err(|e| e.kind).err(),
            Some(YamlErrorKind::Tag)
        );
        // The control: the same text untagged is read.
        assert!(from_str::<Doc>("a: x\n").is_ok());
        assert!(from_str::<Doc>("a: '!!str x'\n").is_ok());
    }

    #[test]
    fn a_second_document_is_located() {
        let err = from_str::<serde_json::Value>("a: 1\n---\nb: 2\n").expect_err("two docs");
        assert_eq!(err.kind, YamlErrorKind::MultipleDocuments);
        assert_eq!(err.location, Some((2, 1)));
    }

    #[test]
    fn aliases_are_recorded_with_their_anchor() {
        let s = structure("a: &x {k: 1}\nb:\n  - *x\n").expect("parses");
        assert_eq!(
            s.aliases,
            vec![AliasUse {
                path: "b[0]".into(),
                location: (3, 5),
                anchor_path: "a".into(),
                anchor_location: (1, 4),
            }]
        );
        assert_eq!(s.location_of("a.k"), Some((1, 8)));
        assert!(s.alias_covering("b[0].k").is_some());
        assert!(s.alias_covering("b[10]").is_none());
    }

    #[test]
    fn unknown_key_segments_are_named() {
        #[derive(Debug, PartialEq, Eq, PartialOrd, Ord, serde::Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum K {
            Good,
        }
        #[derive(Debug, serde::Deserialize)]
        #[expect(
            dead_code,
            reason = "read by serde for its shape; the value itself is never used"
        )]
        struct Doc {
            m: BTreeMap<K, u32>,
        }
        let err = from_str::<Doc>("m:\n  good: 1\n  good2: x\n").expect_err("bad key");
        assert!(!err.path.contains('?'), "{}", err.path);
        let err = from_str::<Doc>("m:\n  good: x\n").expect_err("bad value");
        assert_eq!(err.path, "m.good");
    }

    #[test]
    fn errors_carry_path_and_location() {
        #[derive(Debug, serde::Deserialize)]
        #[expect(
            dead_code,
            reason = "read by serde for its shape; the value itself is never used"
        )]
        struct Doc {
            items: Vec<Item>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[expect(
            dead_code,
            reason = "read by serde for its shape; the value itself is never used"
        )]
        struct Item {
            n: u32,
        }
        let err = from_str::<Doc>("items:\n  - n: 1\n  - n: x\n").expect_err("wrong type");
        assert_eq!(err.path, "items[1].n");
        assert_eq!(err.location, Some((3, 8)));
        assert!(
            !err.message.contains("items"),
            "path prefix stripped: {}",
            err.message
        );
    }
}
