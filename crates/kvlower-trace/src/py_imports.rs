//! The import statements of a Python source file, read statically (docs/conformance.md,
//! "Every file that ran is in the digest").
//!
//! Why: the source digest covers the files a descriptor lists; a file they import (a shared
//! helper that wraps the engine's copy routine) ran too, and an edit there changed what the
//! engine did without staling the evidence. `check` follows every import statement of the
//! listed files to the repository files it loads. Anything this reader cannot read with
//! certainty (a construct it does not know, a non-ASCII module name, which Python would
//! normalise, a relative import leaving its package) is an error: the campaign anchors
//! nothing. Imports by computed name (`importlib.import_module(name)`, `__import__`) are not
//! statements; the recorder's list of the modules that were loaded covers them.
//!
//! Pure and bounded: one pass over the text, no recursion beyond f-string nesting (capped).

/// One import statement's effect: the dotted module it names (`level` leading dots for a
/// relative import) and, for `from M import a, b`, the names imported from it (a name may be
/// a submodule). `star`: `from M import *`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub level: usize,
    pub module: Vec<String>,
    pub names: Vec<String>,
    pub from: bool,
    pub star: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Name(String),
    Dot,
    Comma,
    Open,
    Close,
    Star,
    /// The end of a logical line or a `;`.
    End,
    Other,
}

const MAX_FSTRING_DEPTH: usize = 8;

struct Lexer<'a> {
    s: &'a [char],
    i: usize,
    depth: usize,
    out: Vec<Tok>,
}

fn is_name_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_name_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.s.get(self.i + k).copied()
    }

    /// A string literal starting at `self.i` (after its prefix), its prefix flags given.
    fn string(&mut self, raw: bool, fmt: bool, level: usize) -> Result<(), String> {
        let q = self.peek(0).ok_or("a string ends the file")?;
        let triple = self.peek(1) == Some(q) && self.peek(2) == Some(q);
        self.i += if triple { 3 } else { 1 };
        loop {
            let c = self.peek(0).ok_or("an unterminated string")?;
            if c == '\\' {
                self.i += 2;
                continue;
            }
            if !triple && c == '\n' {
                return Err("an unterminated string".into());
            }
            if c == q && (!triple || (self.peek(1) == Some(q) && self.peek(2) == Some(q))) {
                self.i += if triple { 3 } else { 1 };
                return Ok(());
            }
            if fmt && c == '{' {
                if self.peek(1) == Some('{') {
                    self.i += 2;
                    continue;
                }
                self.i += 1;
                self.fexpr(level + 1)?;
                continue;
            }
            let _ = raw;
            self.i += 1;
        }
    }

    /// The expression of an f-string replacement field, up to its closing `}`.
    fn fexpr(&mut self, level: usize) -> Result<(), String> {
        if level > MAX_FSTRING_DEPTH {
            return Err("f-strings nested too deeply".into());
        }
        let mut depth = 0usize;
        loop {
            let c = self.peek(0).ok_or("an unterminated f-string field")?;
            match c {
                '{' | '(' | '[' => depth += 1,
                '}' if depth == 0 => {
                    self.i += 1;
                    return Ok(());
                }
                '}' | ')' | ']' => depth = depth.saturating_sub(1),
                '\'' | '"' => {
                    self.string(false, false, level)?;
                    continue;
                }
                _ if is_name_start(c) => {
                    if self.prefixed_string(level)? {
                        continue;
                    }
                    while self.peek(0).is_some_and(is_name_char) {
                        self.i += 1;
                    }
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    /// A string with a prefix (`r`, `b`, `f`, `u`, `t` and their pairs) at `self.i`:
    /// consumed, `true`; anything else: nothing consumed, `false`.
    fn prefixed_string(&mut self, level: usize) -> Result<bool, String> {
        let mut k = 0;
        let (mut raw, mut fmt) = (false, false);
        while k < 2 {
            match self.peek(k).map(|c| c.to_ascii_lowercase()) {
                Some('r') => raw = true,
                Some('f' | 't') => fmt = true,
                Some('b' | 'u') => {}
                _ => break,
            }
            k += 1;
        }
        if k > 0 && matches!(self.peek(k), Some('\'' | '"')) {
            self.i += k;
            self.string(raw, fmt, level)?;
            return Ok(true);
        }
        Ok(false)
    }

    fn run(mut self) -> Result<Vec<Tok>, String> {
        while let Some(c) = self.peek(0) {
            match c {
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '\\' if self.peek(1) == Some('\r') && self.peek(2) == Some('\n') => self.i += 3,
                '\n' | '\r' => {
                    if self.depth == 0 {
                        self.out.push(Tok::End);
                    }
                    self.i += 1;
                }
                ';' => {
                    self.out.push(Tok::End);
                    self.i += 1;
                }
                '\'' | '"' => {
                    self.string(false, false, 0)?;
                    self.out.push(Tok::Other);
                }
                '(' | '[' | '{' => {
                    self.depth += 1;
                    self.out.push(if c == '(' { Tok::Open } else { Tok::Other });
                    self.i += 1;
                }
                ')' | ']' | '}' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.out
                        .push(if c == ')' { Tok::Close } else { Tok::Other });
                    self.i += 1;
                }
                '.' => {
                    self.out.push(Tok::Dot);
                    self.i += 1;
                }
                ',' => {
                    self.out.push(Tok::Comma);
                    self.i += 1;
                }
                '*' => {
                    self.out.push(Tok::Star);
                    self.i += 1;
                }
                _ if is_name_start(c) => {
                    if self.prefixed_string(0)? {
                        self.out.push(Tok::Other);
                        continue;
                    }
                    let start = self.i;
                    while self.peek(0).is_some_and(is_name_char) {
                        self.i += 1;
                    }
                    self.out
                        .push(Tok::Name(self.s[start..self.i].iter().collect()));
                }
                _ if c.is_whitespace() => self.i += 1,
                _ => {
                    self.out.push(Tok::Other);
                    self.i += 1;
                }
            }
        }
        self.out.push(Tok::End);
        Ok(self.out)
    }
}

fn is_kw(t: Option<&Tok>, kw: &str) -> bool {
    matches!(t, Some(Tok::Name(n)) if n == kw)
}

/// A module or imported name: ASCII only (Python normalises other identifiers, NFKC, so
/// what a file names and what it loads could differ).
fn ascii_name(t: Option<&Tok>) -> Result<String, String> {
    match t {
        Some(Tok::Name(n)) if n.is_ascii() => Ok(n.clone()),
        Some(Tok::Name(n)) => Err(format!(
            "the import names `{n}`, not an ASCII identifier (Python would normalise it)"
        )),
        _ => Err("an import statement this reader cannot read".into()),
    }
}

/// Every import statement of `src`, in order; `Err(why)` for anything this reader cannot
/// read with certainty.
pub fn imports(src: &str) -> Result<Vec<Import>, String> {
    let chars: Vec<char> = src.chars().collect();
    let toks = Lexer {
        s: &chars,
        i: 0,
        depth: 0,
        out: Vec::new(),
    }
    .run()?;
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if !matches!(t, Tok::Name(n) if n == "import") {
            continue;
        }
        // `from` DOT* [dotted] `import`: walk back over the module to find the `from`.
        let mut j = i;
        while j > 0 {
            match &toks[j - 1] {
                Tok::Name(n) if n == "from" => break,
                Tok::Name(_) | Tok::Dot => {}
                _ => {
                    j = 0;
                    break;
                }
            }
            j -= 1;
        }
        let from = j > 0 && is_kw(toks.get(j - 1), "from");
        if from {
            // Dots before the first name are the level; dots between names separate them.
            let mut level = 0;
            let mut k = j;
            while matches!(toks.get(k), Some(Tok::Dot)) {
                level += 1;
                k += 1;
            }
            let mut module = Vec::new();
            while k < i {
                module.push(ascii_name(toks.get(k))?);
                k += 1;
                if k < i {
                    if !matches!(toks.get(k), Some(Tok::Dot)) {
                        return Err("an import statement this reader cannot read".into());
                    }
                    k += 1;
                }
            }
            if level == 0 && module.is_empty() {
                return Err("an import statement this reader cannot read".into());
            }
            out.push(from_names(&toks, i + 1, level, module)?);
        } else {
            // Where the statement starts does not matter: `import` is a hard keyword, and
            // reading too much as an import can only ask for more files in the digest.
            out.extend(plain_names(&toks, i + 1)?);
        }
    }
    Ok(out)
}

/// `import a.b [as c], d ...` from position `k` (after `import`).
fn plain_names(toks: &[Tok], mut k: usize) -> Result<Vec<Import>, String> {
    let mut out = Vec::new();
    loop {
        let mut module = vec![ascii_name(toks.get(k))?];
        k += 1;
        while matches!(toks.get(k), Some(Tok::Dot)) {
            module.push(ascii_name(toks.get(k + 1))?);
            k += 2;
        }
        if is_kw(toks.get(k), "as") {
            ascii_name(toks.get(k + 1))?;
            k += 2;
        }
        out.push(Import {
            level: 0,
            module,
            names: Vec::new(),
            from: false,
            star: false,
        });
        match toks.get(k) {
            Some(Tok::Comma) => k += 1,
            Some(Tok::End) | None => return Ok(out),
            _ => return Err("an import statement this reader cannot read".into()),
        }
    }
}

/// `from M import (a [as b], c,)` / `*` from position `k` (after `import`).
fn from_names(
    toks: &[Tok],
    mut k: usize,
    level: usize,
    module: Vec<String>,
) -> Result<Import, String> {
    let mut imp = Import {
        level,
        module,
        names: Vec::new(),
        from: true,
        star: false,
    };
    if matches!(toks.get(k), Some(Tok::Star)) {
        imp.star = true;
        return match toks.get(k + 1) {
            Some(Tok::End) | None => Ok(imp),
            _ => Err("an import statement this reader cannot read".into()),
        };
    }
    let paren = matches!(toks.get(k), Some(Tok::Open));
    if paren {
        k += 1;
    }
    loop {
        if paren && matches!(toks.get(k), Some(Tok::Close)) {
            k += 1;
            break;
        }
        imp.names.push(ascii_name(toks.get(k))?);
        k += 1;
        if is_kw(toks.get(k), "as") {
            ascii_name(toks.get(k + 1))?;
            k += 2;
        }
        match toks.get(k) {
            Some(Tok::Comma) => k += 1,
            Some(Tok::Close) if paren => {
                k += 1;
                break;
            }
            Some(Tok::End) | None if !paren => break,
            _ => return Err("an import statement this reader cannot read".into()),
        }
    }
    if imp.names.is_empty() {
        return Err("an import statement this reader cannot read".into());
    }
    match toks.get(k) {
        Some(Tok::End) | None => Ok(imp),
        _ => Err("an import statement this reader cannot read".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mods(src: &str) -> Vec<String> {
        imports(src)
            .expect("reads")
            .iter()
            .map(|i| {
                format!(
                    "{}{}{}",
                    ".".repeat(i.level),
                    i.module.join("."),
                    if i.from {
                        format!(":{}", i.names.join(","))
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }

    #[test]
    fn statements_of_every_shape() {
        let src = "from __future__ import annotations\nimport os, a.b as c\nif x: import z\nfrom . import (p,\n q as r,)\nfrom ..m.n import t\ndef f():\n    from kvlower_scripts import common; import y\n";
        assert_eq!(
            mods(src),
            [
                "__future__:annotations",
                "os",
                "a.b",
                "z",
                ".:p,q",
                "..m.n:t",
                "kvlower_scripts:common",
                "y"
            ]
        );
    }

    #[test]
    fn strings_comments_and_other_uses_of_from_are_not_imports() {
        let src = "s = 'import x'\nt = \"\"\"\nimport y\n\"\"\"\n# import z\nraise E from C\nu = f\"{d['import']}\" + rb'\\'import'\nv = f'{\"from a import b\"}'\n";
        assert_eq!(mods(src), Vec::<String>::new());
    }

    #[test]
    fn what_cannot_be_read_is_an_error() {
        for bad in [
            "import ｃommon\n",
            "x = 'unterminated\n",
            "from import x\n",
            "from a import\n",
        ] {
            assert!(imports(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_continued_line_is_one_statement() {
        assert_eq!(mods("from a \\\n  import b\n"), ["a:b"]);
    }
}
