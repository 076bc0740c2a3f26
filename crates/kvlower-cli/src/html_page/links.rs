//! Escaping and links: every string from a descriptor goes through [`esc`]; a link is
//! made only from anchor fields that pass [`public_source_url`], [`repo_file_href`] or
//! [`docs_url`].

use std::fmt::Write as _;

use kvlower_core::{Anchor, Descriptor};

/// HTML-escapes text for an element's content or a quoted attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (descriptors refuse most; notes may hold
            // line breaks): shown as a visible escape, never raw.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a relative path for an `href`: unreserved characters and
/// `/` stay, every other byte is `%XX`.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A relative path that may become a link: not empty, not absolute, no `..`
/// or empty segment, no backslash or control character.
fn safe_relative_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path.split('/').all(|seg| !seg.is_empty() && seg != "..")
}

/// `https://github.com/OWNER/NAME/blob/COMMIT/PATH` for a `public_source`
/// anchor whose fields are well formed (`owner/name`, 7–40 hex digits, a safe
/// relative path); `None` otherwise. Every `repository` kvlower's descriptors
/// name is a GitHub repository (docs/report.md says so).
pub fn public_source_url(anchor: &Anchor) -> Option<String> {
    let repo = anchor.repository.as_deref()?;
    let commit = anchor.commit.as_deref()?;
    let path = anchor.path.as_deref()?;
    let name_ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    };
    let (owner, name) = repo.split_once('/')?;
    let commit_ok =
        (7..=40).contains(&commit.len()) && commit.bytes().all(|b| b.is_ascii_hexdigit());
    (name_ok(owner) && name_ok(name) && commit_ok && safe_relative_path(path)).then(|| {
        format!(
            "https://github.com/{owner}/{name}/blob/{commit}/{}",
            encode_path(path)
        )
    })
}

/// `../PATH` (the page lives in `results/`) for a repository file; `None`
/// for a path that is not a safe relative path.
pub fn repo_file_href(path: &str) -> Option<String> {
    safe_relative_path(path).then(|| format!("../{}", encode_path(path)))
}

/// A `docs_page` URL that may become a link: `http(s)://`, no whitespace,
/// no control character, no quote or angle bracket.
pub fn docs_url(url: &str) -> Option<&str> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    let clean = !url
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '\'' | '<' | '>' | '`'));
    (scheme_ok && clean).then_some(url)
}

/// The anchor of the evidence item at a judgment's YAML path
/// (`native[2]`, `adapters[0].evidence[3]`, `atoms[1]`); `None` when the path
/// names no such item.
pub(super) fn anchor_at<'d>(d: &'d Descriptor, path: &str) -> Option<&'d Anchor> {
    fn index(s: &str, list: &str) -> Option<usize> {
        s.strip_prefix(list)?
            .strip_prefix('[')?
            .strip_suffix(']')?
            .parse()
            .ok()
    }
    if let Some(i) = index(path, "native") {
        return d.native.get(i).map(|e| &e.anchor);
    }
    if let Some(i) = index(path, "atoms") {
        return d.atoms.get(i).map(|a| &a.anchor);
    }
    let (adapter, item) = path.split_once('.')?;
    let a = index(adapter, "adapters")?;
    let i = index(item, "evidence")?;
    d.adapters.get(a)?.evidence.get(i).map(|e| &e.anchor)
}

/// What the descriptor says carries the obligation of the evidence item at a
/// judgment's YAML path (`carried_by`); empty for an atom or an unknown path.
pub(crate) fn carriers_at<'d>(d: &'d Descriptor, path: &str) -> &'d [String] {
    fn index(s: &str, list: &str) -> Option<usize> {
        s.strip_prefix(list)?
            .strip_prefix('[')?
            .strip_suffix(']')?
            .parse()
            .ok()
    }
    let item = if let Some(i) = index(path, "native") {
        d.native.get(i)
    } else {
        path.split_once('.').and_then(|(adapter, item)| {
            let a = index(adapter, "adapters")?;
            let i = index(item, "evidence")?;
            d.adapters.get(a)?.evidence.get(i)
        })
    };
    item.map_or(&[], |e| e.carried_by.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvlower_core::AnchorKind;

    #[test]
    fn esc_makes_markup_inert() {
        assert_eq!(
            esc("<script>alert('x')</script> \"&"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &quot;&amp;"
        );
        assert_eq!(esc("a\u{1b}b"), "a\\u{1b}b");
    }

    fn anchor(repository: &str, commit: &str, path: &str) -> Anchor {
        Anchor {
            kind: Some(AnchorKind::PublicSource),
            repository: Some(repository.into()),
            commit: Some(commit.into()),
            path: Some(path.into()),
            ..Anchor::default()
        }
    }

    /// Links are made only from well-formed fields: no `javascript:`, no
    /// climbing out, no quote that could end the attribute.
    #[test]
    fn links_refuse_what_could_escape() {
        assert_eq!(
            public_source_url(&anchor("vllm-project/vllm", "9dc4946", "vllm/a b.py")).as_deref(),
            Some("https://github.com/vllm-project/vllm/blob/9dc4946/vllm/a%20b.py")
        );
        for (repo, commit, path) in [
            ("javascript:alert(1)//x/y", "9dc4946", "a.py"),
            ("a/b", "zzzzzzz", "a.py"),
            ("a/b", "9dc4946", "../../x"),
            ("a/b", "9dc4946", "/etc/passwd"),
            ("a\"/b", "9dc4946", "a.py"),
            ("a/b/c", "9dc4946", "a.py"),
        ] {
            assert_eq!(
                public_source_url(&anchor(repo, commit, path)),
                None,
                "{repo} {path}"
            );
        }
        assert_eq!(
            repo_file_href("evidence/x y.json").as_deref(),
            Some("../evidence/x%20y.json")
        );
        assert_eq!(repo_file_href("../secret"), None);
        assert_eq!(
            repo_file_href("javascript:alert(1)").as_deref(),
            Some("../javascript%3Aalert%281%29")
        );
        assert_eq!(docs_url("javascript:alert(1)"), None);
        assert_eq!(docs_url("https://x.test/\"onmouseover=\"a"), None);
        assert_eq!(
            docs_url("https://docs.vllm.ai/en/v0.8/x.html#y"),
            Some("https://docs.vllm.ai/en/v0.8/x.html#y")
        );
    }
}
