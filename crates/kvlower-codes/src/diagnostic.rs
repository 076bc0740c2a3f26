//! [`Finding`]: the one shape of everything kvlower reports (a descriptor's error, a
//! trace line the gate cannot read, a join or routing input that is not what it says,
//! a capture that failed). It names the file, the line and column when known, the
//! YAML or JSON path, the code from the one table (and so its severity and exit class),
//! what was found, a hint, and the source line it points at, so a renderer never has
//! to open the input again.

pub use crate::code_doc::{Code, Severity};
pub use crate::locate::{line_col, locate};
pub use crate::text::{MESSAGE_MAX_CHARS, SOURCE_MAX_CHARS, VALUE_MAX_CHARS, excerpt};

/// The line of the input a finding points at, as read when it was found: at most
/// [`SOURCE_MAX_CHARS`] characters (then `…`), not yet escaped (a renderer makes
/// it visible, keeping columns).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceLine {
    /// 1-based line number.
    pub line: usize,
    pub text: String,
}

impl SourceLine {
    /// Line `line` (1-based) of `src`, cut to [`SOURCE_MAX_CHARS`].
    pub fn of(src: &str, line: usize) -> Option<SourceLine> {
        let full = src
            .split('\n')
            .nth(line.checked_sub(1)?)?
            .trim_end_matches('\r');
        let mut text: String = full.chars().take(SOURCE_MAX_CHARS).collect();
        if full.chars().count() > SOURCE_MAX_CHARS {
            text.push('…');
        }
        Some(SourceLine { line, text })
    }
}

/// One finding. Ordered by file, line, column, code (the report order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// Path relative to the repository root (or as given on the command line).
    pub file: String,
    /// 1-based line and column, when known.
    pub location: Option<(usize, usize)>,
    /// The finding is about its line as a whole: no column is known (a trace line whose
    /// problem has no byte position). [`Finding::location`]'s column is then 1 and no
    /// renderer shows it ([`Finding::column`]). Set by [`Finding::at_line`].
    pub whole_line: bool,
    pub code: Code,
    /// Dotted YAML path (`adapters[0].evidence[2].anchor`) or JSON path, empty for
    /// the whole file.
    pub yaml_path: String,
    pub message: String,
    pub hint: Option<String>,
    /// Error or warning ([`Code::severity`]).
    pub severity: Severity,
    /// Other files that caused the finding, where known (a stale result's
    /// descriptors); SARIF's `relatedLocations`.
    pub related: Vec<String>,
    /// The source line at [`Finding::location`], when the finder had the text.
    pub source: Option<SourceLine>,
}

impl Finding {
    pub fn new(code: Code, file: impl Into<String>, message: impl Into<String>) -> Finding {
        Finding {
            file: file.into(),
            location: None,
            whole_line: false,
            code,
            yaml_path: String::new(),
            message: message.into(),
            hint: None,
            severity: code.severity(),
            related: Vec::new(),
            source: None,
        }
    }

    /// Whether this finding is a warning (reported, never failing `check` by itself).
    pub fn is_warning(&self) -> bool {
        self.severity == Severity::Warning
    }

    pub fn at(mut self, line: usize, col: usize) -> Finding {
        self.location = Some((line, col));
        self.whole_line = false;
        self
    }

    /// At 1-based `line`, with no column ([`Finding::whole_line`]).
    pub fn at_line(mut self, line: usize) -> Finding {
        self.location = Some((line, 1));
        self.whole_line = true;
        self
    }

    /// The 1-based line, when known.
    pub fn line(&self) -> Option<usize> {
        self.location.map(|(line, _)| line)
    }

    /// The 1-based column to show: the location's, unless the finding is about its
    /// whole line.
    pub fn column(&self) -> Option<usize> {
        self.location
            .filter(|_| !self.whole_line)
            .map(|(_, col)| col)
    }

    pub fn at_path(mut self, path: impl Into<String>) -> Finding {
        self.yaml_path = path.into();
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Finding {
        self.hint = Some(hint.into());
        self
    }

    /// Finds the line and column of `yaml_path` in `src` (best effort), and keeps
    /// the source line there.
    pub fn located_in(mut self, src: &str) -> Finding {
        if self.location.is_none() {
            self.location = locate(src, &self.yaml_path);
        }
        self.with_source(src)
    }

    /// Keeps the source line at the finding's location, read from `src` (the text
    /// the finding was found in), so that no renderer opens the input again.
    pub fn with_source(mut self, src: &str) -> Finding {
        self.keep_source(src);
        self
    }

    /// [`Finding::with_source`] in place: the source line at the location as it is
    /// now (a finding moved to another location after it was first located keeps the
    /// line of where it ends up), none when the location is unknown.
    pub fn keep_source(&mut self, src: &str) {
        self.source = self
            .location
            .and_then(|(line, _)| SourceLine::of(src, line));
    }
}

impl std::fmt::Display for Finding {
    /// `file:line:col: error[code]: message (at yaml.path)` then an indented hint.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line() {
            write!(f, ":{line}")?;
        }
        if let Some(col) = self.column() {
            write!(f, ":{col}")?;
        }
        write!(f, ": error[{}]: {}", self.code, self.message)?;
        if !self.yaml_path.is_empty() {
            write!(f, " (at `{}`)", self.yaml_path)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_keeps_a_short_source_line() {
        let src = format!("a: 1\nb: {}\n", "x".repeat(100));
        let f = Finding::new(Code::WrongType, "f.yaml", "m")
            .at_path("b")
            .located_in(&src);
        assert_eq!(f.location, Some((2, 1)));
        let source = f.source.unwrap_or_else(|| SourceLine {
            line: 0,
            text: String::new(),
        });
        assert_eq!(source.line, 2);
        assert_eq!(source.text.chars().count(), SOURCE_MAX_CHARS + 1);
        assert!(source.text.ends_with('…'));
    }

    #[test]
    fn codes_are_unique_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.name()));
            assert!(
                c.name()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
            );
        }
    }
}
