//! A YAML error as a finding: which code it is, a short, escaped message and a hint
//! ("did you mean", the nesting cap, tabs). Beside [`YamlError`] so that the leaf
//! crate of codes needs nothing of the parser, and every YAML input (descriptors, the
//! catalog, a join registry) reports alike.

use kvlower_codes::text::{MESSAGE_MAX_CHARS, VALUE_MAX_CHARS, excerpt};
use kvlower_codes::{Code, Finding};

use crate::{YamlError, YamlErrorKind};

impl YamlError {
    /// The finding of this error in `file`: its code (`yaml-syntax`, `duplicate-key`, `yaml-tag`,
    /// `unknown-field`, `unknown-name`, `missing-field`, `wrong-type`) and a "did you
    /// mean" hint.
    pub fn finding(&self, file: &str) -> Finding {
        let e = self;
        let m = e.message.as_str();
        let code = if e.kind == YamlErrorKind::DuplicateKey {
            Code::DuplicateKey
        } else if e.kind == YamlErrorKind::Tag {
            Code::YamlTag
        } else if matches!(
            e.kind,
            YamlErrorKind::Syntax | YamlErrorKind::TooDeep | YamlErrorKind::MultipleDocuments
        ) {
            Code::YamlSyntax
        } else if m.starts_with("unknown field") {
            Code::UnknownField
        } else if m.starts_with("unknown variant") {
            Code::UnknownName
        } else if m.starts_with("missing field") {
            Code::MissingField
        } else if m.starts_with("duplicate") {
            Code::DuplicateKey
        } else if m.starts_with("invalid type")
            || m.starts_with("invalid value")
            || m.starts_with("invalid length")
        {
            Code::WrongType
        } else {
            Code::YamlSyntax
        };
        // The legacy alias is accepted on input but never printed.
        let message = plain_expectation(&e.message.replace("`active_refusal_or_defer`, ", ""));
        // The message may quote the offending value (a whole file, when a
        // descriptor is a link to one): keep a short, escaped excerpt only.
        let message = excerpt(
            &shorten_quoted(&message, VALUE_MAX_CHARS),
            MESSAGE_MAX_CHARS,
        );
        let mut d = Finding::new(code, file, message).at_path(e.path.clone());
        d.location = e.location;
        d.hint = match code {
            Code::UnknownField | Code::UnknownName => did_you_mean(m),
            Code::MissingField => {
                Some("add the key; docs/descriptor-format.md lists the required ones".into())
            }
            Code::DuplicateKey => Some("remove or merge the repeated key".into()),
            Code::YamlTag => Some(
                "remove the tag (write the value as a plain or quoted string); kvlower's formats are untagged (docs/descriptor-format.md)".into(),
            ),
            Code::YamlSyntax if e.kind == YamlErrorKind::TooDeep => Some(format!(
                "kvlower reads YAML nested at most {} levels deep",
                crate::MAX_NESTING
            )),
            Code::YamlSyntax if e.kind == YamlErrorKind::MultipleDocuments => {
                Some("keep one document per file: remove the `---` line and what follows, or move it to its own file".into())
            }
            Code::YamlSyntax if m.contains("tab") || m.contains("\t") => {
                Some("YAML indentation must use spaces, not tabs".into())
            }
            Code::YamlSyntax => Some("check indentation and quoting near the location".into()),
            _ => None,
        };
        d
    }
}

/// Cuts every `"…"`- or backtick-quoted span of `message` longer than `max`
/// characters to its first `max` characters. serde quotes values with Rust
/// string escapes, so `\"` inside a span does not end it.
fn shorten_quoted(message: &str, max: usize) -> String {
    let mut out = String::with_capacity(message.len().min(4 * max));
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        let close = c;
        let mut kept = 0usize;
        let mut escaped = false;
        let mut cut = false;
        for d in chars.by_ref() {
            if d == close && !escaped {
                if cut {
                    out.push('…');
                }
                out.push(d);
                break;
            }
            escaped = close == '"' && d == '\\' && !escaped;
            if kept < max {
                out.push(d);
                kept += 1;
            } else {
                cut = true;
            }
        }
    }
    out
}

/// Says "a mapping" where serde names a Rust type ("expected struct NonClaims").
fn plain_expectation(message: &str) -> String {
    match message.find("expected struct ") {
        Some(at) => {
            let rest = &message[at + "expected struct ".len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric())
                .unwrap_or(rest.len());
            format!("{}expected a mapping{}", &message[..at], &rest[end..])
        }
        None => message.to_string(),
    }
}

/// From serde's "unknown variant `x`, expected one of `a`, `b`" (or
/// "unknown field"), suggests the closest expected name.
fn did_you_mean(message: &str) -> Option<String> {
    let expected: Vec<&str> = message.split('`').skip(1).step_by(2).skip(1).collect();
    match nearest_name(message) {
        Some(c) => Some(format!("did you mean `{c}`?")),
        None if !expected.is_empty() => Some(format!("expected one of: {}", expected.join(", "))),
        None => None,
    }
}

/// The expected name closest to the given one in serde's "unknown variant `x`,
/// expected one of `a`, `b`" (or "unknown field") message, when it is a near miss.
pub(crate) fn nearest_name(message: &str) -> Option<&str> {
    let mut ticks = message.split('`').skip(1).step_by(2);
    let given = ticks.next()?;
    ticks
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_closest_name() {
        let hint = did_you_mean(
            "unknown variant `claim_identiy`, expected one of `claim_identity`, `explicit_acceptance`",
        );
        assert_eq!(hint.as_deref(), Some("did you mean `claim_identity`?"));
    }

    #[test]
    fn quoted_values_are_cut_and_escaped() {
        let secret = "root:x:0:0:root:/root:/bin/bash\\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\\nbin:x:2:2";
        let message = format!("invalid type: string \"{secret}\", expected a mapping");
        let short = shorten_quoted(&message, VALUE_MAX_CHARS);
        assert!(!short.contains("nologin"), "{short}");
        assert!(short.ends_with("…\", expected a mapping"), "{short}");
        assert_eq!(
            shorten_quoted("unknown field `ab`, expected `c`", 1),
            "unknown field `a…`, expected `c`"
        );
    }
}
