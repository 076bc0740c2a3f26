//! Issue 47: the README and docs/*.md render as they read.
//!
//! A closing fence may be followed only by spaces: "```` ``` A descriptor is... ````" on
//! README.md's line 67 did not close the block opened at line 40, and GitHub rendered
//! the rest of the README (its headings, the command table, the screenshots, the runtime
//! table, the docs index) as one code block. No line-by-line scan saw it, because each
//! read the line as a fence. These tests parse every file with a CommonMark parser
//! (pulldown-cmark with GitHub's extensions: tables, strikethrough, task lists) and hold
//! what it renders to what the source shows a reader:
//!
//! - every fenced code block closes, and a line that starts with ```` ``` ```` is a fence
//!   to the parser exactly where a reader (toggling at each such line) takes it for one;
//! - every `#` line outside a code block is a heading, and every `|` line outside a code
//!   block is a row of a table;
//! - README.md has the headings and tables it means to have;
//! - every relative link and image names a file that exists, and every `#anchor` names a
//!   heading of its target, anchors computed as GitHub computes them from the rendered
//!   heading text (github-slugger: lower case; everything but letters, digits, marks,
//!   `_`, `-` and spaces dropped; each space a `-`; a repeat gets `-1`, `-2`, ...).

use std::collections::BTreeSet;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use kvlower_tests::repo_root;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The Markdown files a reader of the repository sees rendered.
fn doc_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// GitHub's rendering options: CommonMark plus the GFM extensions GitHub turns on.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_GFM
}

/// What the parser made of one file, by source line (0-based).
#[derive(Default)]
struct Rendered {
    /// Each fenced code block's lines, fences included, and whether it closed.
    fenced: Vec<(Range<usize>, bool)>,
    /// Lines of fenced code blocks, fences included.
    fenced_lines: BTreeSet<usize>,
    /// Lines inside any code block (fenced or indented).
    code_lines: BTreeSet<usize>,
    /// Each heading: level, rendered text, line.
    headings: Vec<(HeadingLevel, String, usize)>,
    /// Lines inside a table.
    table_lines: BTreeSet<usize>,
    tables: usize,
    /// Each link or image destination with its line.
    links: Vec<(usize, String)>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count()
}

/// Whether `line` (trimmed of up to three spaces) is a closing fence for `fence`.
fn closes(line: &str, fence: &str) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let line = line.trim_start_matches(' ');
    let c = fence.chars().next().unwrap_or('`');
    let run = line.len() - line.trim_start_matches(c).len();
    indent <= 3 && run >= fence.len() && line[run..].trim().is_empty()
}

fn render(text: &str) -> Rendered {
    let mut out = Rendered::default();
    let mut heading: Option<(HeadingLevel, String, usize)> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let (first, last) = (line_of(text, range.start), line_of(text, range.end));
                // A block's range ends after its last line's newline (or at the end of file).
                let last = if text[..range.end].ends_with('\n') {
                    last.saturating_sub(1)
                } else {
                    last
                };
                out.code_lines.extend(first..=last);
                if let CodeBlockKind::Fenced(_) = kind {
                    out.fenced_lines.extend(first..=last);
                    let lines: Vec<&str> = text[range.clone()].lines().collect();
                    let open = lines.first().map(|l| l.trim_start()).unwrap_or("");
                    let fence: String =
                        open.chars().take_while(|&c| c == '`' || c == '~').collect();
                    let closed = lines.len() >= 2 && closes(lines[lines.len() - 1], &fence);
                    out.fenced.push((first..last + 1, closed));
                }
            }
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level, String::new(), line_of(text, range.start)));
            }
            Event::End(TagEnd::Heading(_)) => out.headings.extend(heading.take()),
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, h, _)) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Start(Tag::Table(_)) => {
                out.tables += 1;
                let (first, last) = (line_of(text, range.start), line_of(text, range.end));
                out.table_lines.extend(first..=last);
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                out.links
                    .push((line_of(text, range.start) + 1, dest_url.to_string()));
            }
            _ => {}
        }
    }
    out
}

/// github-slugger's slug of a heading's rendered text (without the repeat suffix).
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors GitHub gives a file's headings, in order (repeats numbered).
fn anchors(headings: &[(HeadingLevel, String, usize)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, text, _) in headings {
        let base = slug(text);
        let mut candidate = base.clone();
        let mut n = 0;
        while out.contains(&candidate) {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        out.push(candidate);
    }
    out
}

fn rel(file: &Path) -> String {
    file.strip_prefix(repo_root())
        .unwrap_or(file)
        .display()
        .to_string()
}

/// What the source shows a reader, line by line, set against what the parser renders.
fn render_problems(name: &str, text: &str) -> Vec<String> {
    let r = render(text);
    let mut problems = Vec::new();
    for (lines, closed) in &r.fenced {
        if !closed {
            problems.push(format!(
                "{name}:{}: this code block never closes (it runs to line {}): a closing fence may be followed only by spaces",
                lines.start + 1,
                lines.end
            ));
        }
    }
    let fence_lines: BTreeSet<usize> = r
        .fenced
        .iter()
        .flat_map(|(l, closed)| {
            let mut v = vec![l.start];
            if *closed {
                v.push(l.end - 1);
            }
            v
        })
        .collect();
    let heading_lines: BTreeSet<usize> = r.headings.iter().map(|h| h.2).collect();
    // A reader takes every line that starts with a fence for one, toggling.
    let mut reader_fenced = false;
    let mut swallowing = false;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        let is_fence = t.starts_with("```") || t.starts_with("~~~");
        if is_fence && !fence_lines.contains(&n) {
            problems.push(format!(
                "{name}:{}: `{}` reads as a fence but does not render as one",
                n + 1,
                line.trim()
            ));
        }
        let in_reader_block = reader_fenced || is_fence;
        if is_fence {
            reader_fenced = !reader_fenced;
        }
        if !in_reader_block && r.fenced_lines.contains(&n) {
            // One finding per swallowed stretch, at its first non-blank line.
            if !swallowing && !line.trim().is_empty() {
                swallowing = true;
                problems.push(format!(
                    "{name}:{}: renders inside a code block: `{}`",
                    n + 1,
                    line.trim()
                ));
            }
            continue;
        }
        swallowing = false;
        if r.code_lines.contains(&n) || line.starts_with("    ") {
            continue;
        }
        let hashes = line.len() - line.trim_start_matches('#').len();
        if (1..=6).contains(&hashes)
            && line[hashes..].starts_with(' ')
            && !heading_lines.contains(&n)
        {
            problems.push(format!(
                "{name}:{}: `{line}` does not render as a heading",
                n + 1
            ));
        }
        if line.starts_with('|') && !r.table_lines.contains(&n) {
            problems.push(format!(
                "{name}:{}: a `|` row that renders outside any table",
                n + 1
            ));
        }
    }
    problems
}

#[test]
fn every_doc_renders_as_it_reads() {
    let mut problems = Vec::new();
    for file in doc_files() {
        let text = fs::read_to_string(&file).expect("read");
        problems.extend(render_problems(&rel(&file), &text));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// README.md renders with the sections and tables it means to have (the broken fence
/// left it two headings and no table).
#[test]
fn the_readme_renders_its_headings_and_tables() {
    let text = fs::read_to_string(repo_root().join("README.md")).expect("read");
    let r = render(&text);
    let h2: Vec<&str> = r
        .headings
        .iter()
        .filter(|h| h.0 == HeadingLevel::H2)
        .map(|h| h.1.as_str())
        .collect();
    for want in [
        "Quick start",
        "Install",
        "Commands",
        "Adding a runtime",
        "The matrix as a page",
        "Runtimes compared",
        "Documentation",
        "Layout",
        "License",
    ] {
        assert!(h2.contains(&want), "README.md renders `## {want}`: {h2:?}");
    }
    // The command table, the runtimes table, the docs index and the layout.
    assert!(r.tables >= 4, "README.md renders {} table(s)", r.tables);
    let images: Vec<&str> = r
        .links
        .iter()
        .map(|l| l.1.as_str())
        .filter(|l| l.ends_with(".png"))
        .collect();
    assert!(images.len() >= 2, "the screenshots render: {images:?}");
}

#[test]
fn every_relative_link_and_anchor_in_the_docs_resolves() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let text = fs::read_to_string(&file).expect("read");
        for (line, target) in render(&text).links {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().expect("dir").join(path.replace("%20", " "))
            };
            checked += 1;
            let here = format!("{}:{line}: `{target}`", rel(&file));
            if !dest.exists() {
                failures.push(format!("{here}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if dest.extension().is_none_or(|e| e != "md") {
                failures.push(format!(
                    "{here}: an anchor into a file that is not Markdown"
                ));
                continue;
            }
            let dest_text = fs::read_to_string(&dest).unwrap_or_default();
            let known = anchors(&render(&dest_text).headings);
            if !known.iter().any(|a| a == anchor) {
                failures.push(format!(
                    "{here}: no such heading (GitHub's anchors there: {known:?})"
                ));
            }
        }
    }
    assert!(checked >= 100, "{checked} links");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checks themselves: README's broken line as it was, an unclosed block, a heading
/// and a table swallowed by it, and GitHub's anchors for code, punctuation and repeats.
#[test]
fn the_render_checker_catches_what_github_would_show() {
    let broken = "# t\n\n```console\n$ kvlower check\n``` A descriptor is\n\n## Commands\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
    let problems = render_problems("x.md", broken);
    let all = problems.join("\n");
    assert!(
        all.contains("x.md:3: this code block never closes"),
        "{all}"
    );
    assert!(
        all.contains("x.md:5: ```` A descriptor is` reads as a fence but does not render as one"),
        "{all}"
    );
    assert!(
        all.contains("x.md:7: renders inside a code block: `## Commands`"),
        "{all}"
    );
    assert!(
        !all.contains("x.md:9:"),
        "one finding per swallowed stretch: {all}"
    );
    // Outside any code block, a heading or a row that does not render is found too.
    let all = render_problems(
        "y.md",
        "para\n#no space\n\n    # indented code\n\ntext\n| a |\n",
    )
    .join("\n");
    assert!(!all.contains("y.md:2") && !all.contains("y.md:4"), "{all}");
    assert!(
        all.contains("y.md:7: a `|` row that renders outside any table"),
        "{all}"
    );
    let fixed = broken.replace("``` A descriptor is", "```\n\nA descriptor is");
    assert_eq!(render_problems("x.md", &fixed), Vec::<String>::new());
    let r = render(
        "# Exit codes\n## The root and `kvlower.toml`\n## Exit codes\n## `check --format github`: annotations\n",
    );
    assert_eq!(
        anchors(&r.headings),
        [
            "exit-codes",
            "the-root-and-kvlowertoml",
            "exit-codes-1",
            "check---format-github-annotations"
        ]
    );
}
