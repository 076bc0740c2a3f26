//! Finding, opening and judging `gate`'s inputs: the PATHs and the `*.jsonl` below
//! directories, what is refused before reading, and the judging of one input (read
//! whole on a pool thread, or streamed alone).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use kvlower_trace::{ClaimVerdict, Diagnostic, Problem, TraceFamily, TraceOutline, TraceTally};

/// Files up to this size are read whole and judged on the pool; larger ones stream alone.
const SMALL_FILE_BYTES: u64 = 16 << 20;

/// One trace to judge, as found on the command line or below a directory.
#[derive(Debug)]
pub(super) enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A regular file and its size when listed; with its metadata when a directory walk
    /// listed it as a regular file (no link) below a directory outside the kernel's
    /// pseudo-file systems, so opening it need not resolve and stat it again.
    File(PathBuf, u64, Option<Box<std::fs::Metadata>>),
    /// Refused or unreadable before reading: reported, judged as nothing.
    Refused(PathBuf, Problem),
}

impl Input {
    pub(super) fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::File(p, ..) | Input::Refused(p, _) => display(p),
        }
    }

    /// Judged on the pool (read whole) rather than alone, streaming.
    pub(super) fn small(&self) -> bool {
        match self {
            Input::Stdin => false,
            Input::File(_, len, _) => *len <= SMALL_FILE_BYTES,
            Input::Refused(..) => true,
        }
    }
}

/// One judged trace with its verdicts, held until it is its turn to be written.
pub(super) struct Judged {
    pub(super) name: String,
    pub(super) outline: TraceOutline,
    pub(super) verdicts: Vec<ClaimVerdict>,
}

/// Judges one input on a pool thread, collecting its verdicts.
pub(super) fn judge_collected(input: &Input, max_bytes: u64) -> Judged {
    let name = input.name();
    let mut verdicts = Vec::new();
    let outline = match judge(input, &name, max_bytes, None, |v| {
        verdicts.push(v);
        Ok(())
    }) {
        Ok(outline) => outline,
        // `judge` fails only when the callback does, and this one never does.
        Err(e) => refused(&name, Problem::Read(e.to_string())),
    };
    Judged {
        name,
        outline,
        verdicts,
    }
}

/// Judges one input, handing each verdict to `on_verdict` as the trace ends. Fails only
/// when `on_verdict` does (a closed output); everything wrong with the input is a
/// diagnostic of the outline. A large file or standard input has its lines parsed on
/// `pool` when there is one (the same verdicts and diagnostics).
pub(super) fn judge(
    input: &Input,
    name: &str,
    max_bytes: u64,
    pool: Option<&rayon::ThreadPool>,
    mut on_verdict: impl FnMut(ClaimVerdict) -> io::Result<()>,
) -> anyhow::Result<TraceOutline> {
    let mut write_error: Option<io::Error> = None;
    let mut each = |verdict: ClaimVerdict| {
        if write_error.is_none()
            && let Err(e) = on_verdict(verdict)
        {
            write_error = Some(e);
        }
    };
    let outline = match input {
        Input::Refused(_, problem) => refused(name, problem.clone()),
        Input::Stdin => match pool {
            Some(pool) => {
                let stdin = BufReader::with_capacity(1 << 18, io::stdin());
                kvlower_trace::evaluate_reader_pooled(name, stdin, max_bytes, pool, &mut each)
            }
            None => {
                let stdin = io::stdin().lock();
                kvlower_trace::evaluate_reader_bounded(name, stdin, max_bytes, &mut each)
            }
        },
        Input::File(path, _, listed) => {
            let opened = match listed {
                Some(meta) => open_listed(path, meta),
                None => open_regular(path),
            };
            match opened {
                Err(problem) => refused(name, problem),
                Ok((file, len)) if len <= SMALL_FILE_BYTES => SMALL_FILE.with_borrow_mut(|bytes| {
                    match read_small(file, len, max_bytes, bytes) {
                        Ok(()) => kvlower_trace::evaluate_reader_bounded(
                            name,
                            bytes.as_slice(),
                            max_bytes,
                            &mut each,
                        ),
                        Err(e) => refused(name, Problem::Read(e.to_string())),
                    }
                }),
                Ok((file, _)) => {
                    let reader = BufReader::with_capacity(1 << 18, file);
                    match pool {
                        Some(pool) => kvlower_trace::evaluate_reader_pooled(
                            name, reader, max_bytes, pool, &mut each,
                        ),
                        None => kvlower_trace::evaluate_reader_bounded(
                            name, reader, max_bytes, &mut each,
                        ),
                    }
                }
            }
        }
    };
    match write_error {
        Some(e) => Err(e.into()),
        None => Ok(outline),
    }
}

thread_local! {
    /// The bytes of the small file being judged on this thread (reused: one allocation
    /// per thread rather than one per file).
    static SMALL_FILE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads a small file whole into `buf`: at most `max_bytes` + 1 bytes (one past the
/// budget, so a file that grew past it is told), normally with one `read` of the size
/// `fstat` gave plus one byte. A read that returns exactly that size is the end of the
/// file (a regular file reads short only at its end); a file that grew since is read
/// on to its end or the budget.
fn read_small(mut file: File, len: u64, max_bytes: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    let limit = max_bytes.saturating_add(1);
    let want = usize::try_from(len.saturating_add(1).min(limit)).unwrap_or(usize::MAX);
    buf.clear();
    buf.resize(want, 0);
    let mut filled = 0;
    loop {
        let Some(room) = buf.get_mut(filled..).filter(|room| !room.is_empty()) else {
            // The buffer is full: the file grew past its listed size. Read on as before.
            buf.truncate(filled);
            let rest = limit.saturating_sub(filled as u64);
            file.take(rest).read_to_end(buf)?;
            return Ok(());
        };
        match file.read(room) {
            Ok(0) => break,
            Ok(n) => {
                filled = filled.saturating_add(n);
                if filled as u64 == len && filled < buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.clear();
                return Err(e);
            }
        }
    }
    buf.truncate(filled);
    Ok(())
}

/// Opens a file a directory walk listed as regular (see [`Input::File`]), with the same
/// refusals and messages as [`open_regular`].
fn open_listed(path: &Path, listed: &std::fs::Metadata) -> Result<(File, u64), Problem> {
    kvlower_fs::open_listed_regular(path, listed).map_err(refusal_problem)
}

/// Opens `path` for reading only if it is a regular file (after links), through
/// kvlower-fs like every other input: a FIFO or a device is refused before it is
/// opened (so it cannot block), and the opened file is checked again (it may have
/// been replaced in between). The size is bounded by `--max-bytes`, not a file cap.
fn open_regular(path: &Path) -> Result<(File, u64), Problem> {
    kvlower_fs::open_regular_unbounded(path).map_err(refusal_problem)
}

fn refusal_problem(refusal: kvlower_fs::Refusal) -> Problem {
    match refusal {
        kvlower_fs::Refusal::NotRegular { what, .. } => Problem::NotRegularFile(what),
        kvlower_fs::Refusal::PseudoFile { .. } => Problem::NotRegularFile("a kernel pseudo-file"),
        other => Problem::Read(other.to_string()),
    }
}

/// What a non-regular file is, or `None` for a regular file.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The outline of an input refused or unreadable before any line was judged.
fn refused(name: &str, problem: Problem) -> TraceOutline {
    TraceOutline {
        name: name.to_owned(),
        family: TraceFamily::Unknown,
        runtime: None,
        events: 0,
        diagnostics: vec![Diagnostic {
            line: None,
            problem,
        }],
        tally: TraceTally::default(),
    }
}

/// The traces named by `paths`, in order; directories expand to their `*.jsonl` files,
/// sorted. Paths keep the form they were given in (never made absolute). A missing PATH
/// or a directory without any `*.jsonl` is a usage error; anything unreadable or not a
/// regular file below a directory is an input of its own, refused when judged.
pub(super) fn collect_traces(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut traces = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            traces.push(Input::Stdin);
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", display(path)))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_jsonl(path, kvlower_fs::outside_pseudo_fs(path), &mut found);
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.jsonl trace below this directory",
                    display(path)
                ));
            }
            found.sort_by(|a, b| input_path(a).cmp(input_path(b)));
            traces.extend(found);
        } else {
            traces.push(classify(path.clone(), &meta));
        }
    }
    Ok(traces)
}

fn input_path(input: &Input) -> &Path {
    match input {
        Input::Stdin => Path::new("-"),
        Input::File(p, ..) | Input::Refused(p, _) => p,
    }
}

fn classify(path: PathBuf, meta: &std::fs::Metadata) -> Input {
    match not_regular(meta) {
        None => Input::File(path, meta.len(), None),
        Some(kind) => Input::Refused(path, Problem::NotRegularFile(kind)),
    }
}

/// Adds every `*.jsonl` below `dir` to `found`, and every directory or entry that cannot
/// be read as a refused input (so one unreadable subdirectory is reported and the rest
/// still judged). Directory symlinks are not followed, so a link cycle cannot loop.
/// `listed_ok`: `dir` is outside the kernel's pseudo-file systems, so a regular file
/// listed below it (no link) keeps its metadata, to be opened without a second look.
fn walk_jsonl(dir: &Path, listed_ok: bool, found: &mut Vec<Input>) {
    let unreadable = |e: io::Error| Problem::Read(format!("cannot read directory: {e}"));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return found.push(Input::Refused(dir.to_path_buf(), unreadable(e))),
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.push(Input::Refused(dir.to_path_buf(), unreadable(e)));
                continue;
            }
        };
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) => {
                found.push(Input::Refused(path, Problem::Read(e.to_string())));
                continue;
            }
        };
        if kind.is_dir() {
            walk_jsonl(&path, listed_ok, found);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            // Follow a link to see what it names; never open it here.
            match std::fs::metadata(&path) {
                Ok(meta) if listed_ok && kind.is_file() && meta.is_file() => {
                    found.push(Input::File(path, meta.len(), Some(Box::new(meta))));
                }
                Ok(meta) => found.push(classify(path, &meta)),
                Err(e) => found.push(Input::Refused(path, Problem::Read(e.to_string()))),
            }
        }
    }
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
