//! The SARIF emitter of findings: a SARIF 2.1.0 log for GitHub code scanning, one rule
//! per diagnostic code and one result per finding, its region the token the human
//! caret covers.

use kvlower_codes::{Code, Finding};

use super::human::{token_span, visible};

/// A SARIF 2.1.0 log for GitHub code scanning: one rule per diagnostic code
/// (its `explain-code` text), one result per finding with its location.
/// `error` marks a run that could not judge (exit 2): the invocation is then
/// `executionSuccessful: false` with the message as a notification.
pub fn sarif(diagnostics: &[Finding], error: Option<&str>) -> String {
    use serde_json::{Value, json};
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.name(),
                "shortDescription": {"text": c.explanation()},
                "fullDescription": {"text": c.explanation()},
                // No helpUri: SARIF needs an absolute URI, and kvlower has no public
                // one yet (naming an unreachable URL is worse than none). The help
                // text points at the repository's own page and command instead.
                "help": {"text": format!(
                    "{}\nRun `kvlower explain-code {}`, or see {CODES_DOC}#{} in the kvlower repository.",
                    c.explanation(),
                    c.name(),
                    c.name()
                )},
                "defaultConfiguration": {"level": c.severity().name()}
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            if !d.yaml_path.is_empty() {
                text.push_str(&format!(" (at `{}`)", d.yaml_path));
            }
            if let Some(h) = &d.hint {
                text.push_str(&format!("\nhint: {h}"));
            }
            let mut physical = json!({
                "artifactLocation": {"uri": sarif_uri(&d.file), "uriBaseId": "%SRCROOT%"}
            });
            match (d.line(), d.column()) {
                (Some(line), Some(col)) => physical["region"] = sarif_region(d, line, col),
                // A finding about its whole line: the region is that line.
                (Some(line), None) => physical["region"] = serde_json::json!({"startLine": line}),
                (None, _) => {}
            }
            let mut result = json!({
                "ruleId": d.code.name(),
                "ruleIndex": Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0),
                "level": d.severity.name(),
                "message": {"text": text},
                "locations": [{"physicalLocation": physical}]
            });
            if !d.yaml_path.is_empty() {
                result["locations"][0]["logicalLocations"] =
                    json!([{"fullyQualifiedName": d.yaml_path, "kind": "member"}]);
            }
            if !d.related.is_empty() {
                result["relatedLocations"] = d
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        json!({
                            "id": i,
                            "physicalLocation": {"artifactLocation": {"uri": sarif_uri(f), "uriBaseId": "%SRCROOT%"}},
                            "message": {"text": "a descriptor whose rows changed"}
                        })
                    })
                    .collect();
            }
            result
        })
        .collect();
    let mut invocation = json!({"executionSuccessful": error.is_none()});
    if let Some(message) = error {
        invocation["toolExecutionNotifications"] =
            json!([{"level": "error", "message": {"text": message}}]);
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "kvlower",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository root (--root)"}}},
            "invocations": [invocation],
            "results": results
        }]
    });
    crate::generated::to_json(&log)
}

/// Where every diagnostic code is documented, relative to the repository root.
pub const CODES_DOC: &str = "docs/diagnostic-codes.md";

/// A SARIF region for a finding at `line`:`col` of `file`: the token the caret of
/// the human report covers (end column exclusive, 1-based), one character when the
/// finding carries no source line.
fn sarif_region(d: &Finding, line: usize, col: usize) -> serde_json::Value {
    let end = d
        .source
        .as_ref()
        .filter(|source| source.line == line)
        .map(|source| {
            let text = visible(&source.text);
            let span = token_span(&text, col);
            col + text[span].chars().count().max(1)
        })
        .unwrap_or(col + 1);
    serde_json::json!({"startLine": line, "startColumn": col, "endLine": line, "endColumn": end})
}

/// A relative path as a URI reference: every byte but unreserved characters and
/// the `/` separator percent-encoded. A backslash is a byte of the name on Unix
/// (and the escape of a control character kvlower printed), never a separator.
fn sarif_uri(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::render_human;

    #[test]
    fn sarif_uris_percent_encode_every_byte_of_a_name() {
        // An escaped control character is a backslash in the name, not a separator.
        assert_eq!(
            sarif_uri("capabilities/nl\\nx.yaml"),
            "capabilities/nl%5Cnx.yaml"
        );
        assert_eq!(
            sarif_uri("capabilities/nl\nx.yaml"),
            "capabilities/nl%0Ax.yaml"
        );
        assert_eq!(sarif_uri("a b/ü.yaml"), "a%20b/%C3%BC.yaml");
    }

    /// Issue 38: the caret is drawn from the source line the finding carries; the
    /// renderer opens nothing (the file named here does not exist, and before this
    /// change the source line was read from it, so no caret was drawn).
    #[test]
    fn the_caret_comes_from_the_finding_not_the_file() {
        let src = "runtime:\n  name: vllm\n  version: [\n";
        let d = Finding::new(Code::WrongType, "no/such/file.yaml", "expected a string")
            .at_path("runtime.version")
            .located_in(src);
        let shown = render_human(&d, false);
        assert!(shown.contains("  version: ["), "{shown}");
        assert!(shown.contains('^'), "{shown}");
        let sarif: serde_json::Value =
            serde_json::from_str(&sarif(std::slice::from_ref(&d), None)).unwrap_or_default();
        let region = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startColumn"], 3);
        assert_eq!(region["endColumn"], 10, "{region}");
        // A finding without its source line has no caret (and a one-character region).
        let mut bare = d.clone();
        bare.source = None;
        assert!(!render_human(&bare, false).contains('^'));
    }
}
