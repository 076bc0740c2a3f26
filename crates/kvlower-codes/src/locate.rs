//! Where a finding is: the line and column of a byte offset, and the best-effort
//! place of a dotted YAML path (`adapters[0].evidence[2].anchor`) in block-style YAML.

/// 1-based line and column of byte `offset` in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = src.get(..offset).unwrap_or(src);
    let line = 1 + before.matches('\n').count();
    let col = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, col)
}

/// Best-effort location of a dotted YAML path (`a.b[2].c`) in block-style
/// YAML. Returns the deepest segment it could find.
pub fn locate(src: &str, path: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut start = 0usize;
    let mut parent_indent: isize = -1;
    let mut found: Option<(usize, usize)> = None;
    for segment in split_path(path) {
        match segment {
            Segment::Key(key) => {
                let hit = (start..lines.len()).find_map(|i| {
                    let (indent, content) = key_position(lines[i]);
                    if content.is_empty() || content.starts_with('#') {
                        return None;
                    }
                    if i > start
                        && (lines[i].len() - lines[i].trim_start().len()) as isize <= parent_indent
                    {
                        return Some(None);
                    }
                    let is_key = content
                        .strip_prefix(key)
                        .is_some_and(|rest| rest.starts_with(':'));
                    (is_key && indent as isize > parent_indent).then_some(Some((i, indent)))
                })??;
                found = Some((hit.0 + 1, hit.1 + 1));
                start = hit.0 + 1;
                parent_indent = hit.1 as isize;
            }
            Segment::Index(n) => {
                let mut count = 0usize;
                let mut list_indent: Option<usize> = None;
                let mut hit = None;
                for (i, line) in lines.iter().enumerate().skip(start) {
                    let trimmed = line.trim_start();
                    if trimmed.is_empty() || trimmed.starts_with('#') {
                        continue;
                    }
                    let indent = line.len() - trimmed.len();
                    if (indent as isize) <= parent_indent
                        && !(trimmed.starts_with("- ") && indent as isize == parent_indent)
                    {
                        break;
                    }
                    if trimmed.starts_with("- ") || trimmed == "-" {
                        let li = *list_indent.get_or_insert(indent);
                        if indent == li {
                            if count == n {
                                hit = Some((i, indent));
                                break;
                            }
                            count += 1;
                        }
                    }
                }
                let (i, indent) = hit?;
                found = Some((i + 1, indent + 1));
                start = i;
                parent_indent = indent as isize;
            }
        }
    }
    found
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn split_path(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        if let Some(bracket) = rest.find('[') {
            let (key, idx) = rest.split_at(bracket);
            if !key.is_empty() {
                out.push(Segment::Key(key));
            }
            rest = idx;
            for piece in rest.split('[').filter(|p| !p.is_empty()) {
                if let Ok(n) = piece.trim_end_matches(']').parse() {
                    out.push(Segment::Index(n));
                }
            }
        } else {
            out.push(Segment::Key(rest));
        }
    }
    out
}

/// The indentation and text of a line's key, treating `- key:` as a key
/// indented past its dash.
fn key_position(line: &str) -> (usize, &str) {
    let trimmed = line.trim_start();
    let mut indent = line.len() - trimmed.len();
    let mut content = trimmed;
    while let Some(rest) = content.strip_prefix("- ") {
        indent += 2;
        content = rest.trim_start();
    }
    (indent, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_nested_keys_and_list_items() {
        let src = "runtime:\n  name: x\nadapters:\n  - depth: telemetry_join\n    evidence:\n      - obligation: a\n      - obligation: b\n        anchor:\n          kind: paper\n";
        assert_eq!(locate(src, "runtime.name"), Some((2, 3)));
        assert_eq!(locate(src, "adapters[0].evidence[1]"), Some((7, 7)));
        assert_eq!(locate(src, "adapters[0].evidence[1].anchor"), Some((8, 9)));
        assert_eq!(
            locate(src, "adapters[0].evidence[1].anchor.kind"),
            Some((9, 11))
        );
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
