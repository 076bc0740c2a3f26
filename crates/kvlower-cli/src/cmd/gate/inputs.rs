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
    /// A regular file named on the command line or reached through a link, and its size.
    File(PathBuf, u64),
    /// A file a directory walk listed by its entry as a regular file (no link) below a
    /// directory outside the kernel's pseudo-file systems: not stat-ed before it is opened
    /// (the open tells its size), so it costs no system call until a pool thread opens it;
    /// with the device of its directory, which the opened file must be on
    /// ([`kvlower_fs::open_walked_regular`]).
    Walked(PathBuf, u64),
    /// Refused or unreadable before reading: reported, judged as nothing.
    Refused(PathBuf, Problem),
}

impl Input {
    pub(super) fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::File(p, _) | Input::Walked(p, _) | Input::Refused(p, _) => display(p),
        }
    }

    /// Judged on the pool (read whole) rather than alone, streaming. A walked file's size
    /// is not known yet: one found large when opened is handed back to be streamed
    /// ([`Done::Large`]).
    pub(super) fn small(&self) -> bool {
        match self {
            Input::Stdin => false,
            Input::File(_, len) => *len <= SMALL_FILE_BYTES,
            Input::Walked(..) | Input::Refused(..) => true,
        }
    }
}

/// An input opened for judging.
pub(super) enum Opened {
    Stdin,
    /// Read whole by the thread that judges it.
    Small(File, u64),
    /// Streamed, its lines parsed on the pool when there is one.
    Large(File),
    Refused(Problem),
}

/// Opens one input, or says why it is refused.
pub(super) fn open(input: &Input) -> Opened {
    let opened = match input {
        Input::Stdin => return Opened::Stdin,
        Input::Refused(_, problem) => return Opened::Refused(problem.clone()),
        Input::File(path, _) => open_regular(path),
        Input::Walked(path, dev) => open_walked(path, *dev),
    };
    match opened {
        Err(problem) => Opened::Refused(problem),
        Ok((file, len)) if len <= SMALL_FILE_BYTES => Opened::Small(file, len),
        Ok((file, _)) => Opened::Large(file),
    }
}

/// One trace judged on a pool thread, held until it is its turn to be written.
pub(super) struct Judged {
    pub(super) name: String,
    pub(super) done: Done,
}

pub(super) enum Done {
    /// Judged, with its verdicts.
    Judged {
        outline: TraceOutline,
        verdicts: Vec<ClaimVerdict>,
    },
    /// A walked file found large when opened: opened again and streamed by the writer in
    /// its turn, its lines parsed on the pool (a pool thread would judge it alone). It is
    /// closed meanwhile, so a batch never holds more than one descriptor per thread.
    Large,
}

/// Judges one input on a pool thread, collecting its verdicts.
pub(super) fn judge_collected(input: &Input, max_bytes: u64) -> Judged {
    let name = input.name();
    let opened = match open(input) {
        Opened::Large(_) => {
            return Judged {
                name,
                done: Done::Large,
            };
        }
        opened => opened,
    };
    let mut verdicts = Vec::new();
    let outline = match judge(opened, &name, max_bytes, None, |v| {
        verdicts.push(v);
        Ok(())
    }) {
        Ok(outline) => outline,
        // `judge` fails only when the callback does, and this one never does.
        Err(e) => refused(&name, Problem::Read(e.to_string())),
    };
    Judged {
        name,
        done: Done::Judged { outline, verdicts },
    }
}

/// Judges one input, handing each verdict to `on_verdict` as the trace ends. Fails only
/// when `on_verdict` does (a closed output); everything wrong with the input is a
/// diagnostic of the outline. A large file or standard input has its lines parsed on
/// `pool` when there is one (the same verdicts and diagnostics).
pub(super) fn judge(
    input: Opened,
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
        Opened::Refused(problem) => refused(name, problem),
        Opened::Stdin => match pool {
            Some(pool) => {
                let stdin = BufReader::with_capacity(1 << 18, io::stdin());
                kvlower_trace::evaluate_reader_pooled(name, stdin, max_bytes, pool, &mut each)
            }
            None => {
                let stdin = io::stdin().lock();
                kvlower_trace::evaluate_reader_bounded(name, stdin, max_bytes, &mut each)
            }
        },
        Opened::Small(file, len) => {
            SMALL_FILE.with_borrow_mut(|bytes| match read_small(file, len, max_bytes, bytes) {
                Ok(n) => {
                    let bytes = bytes.get(..n).unwrap_or_default();
                    kvlower_trace::evaluate_reader_bounded(name, bytes, max_bytes, &mut each)
                }
                Err(e) => refused(name, Problem::Read(e.to_string())),
            })
        }
        Opened::Large(file) => {
            let reader = BufReader::with_capacity(1 << 18, file);
            match pool {
                Some(pool) => {
                    kvlower_trace::evaluate_reader_pooled(name, reader, max_bytes, pool, &mut each)
                }
                None => kvlower_trace::evaluate_reader_bounded(name, reader, max_bytes, &mut each),
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
/// on to its end or the budget. Returns how many bytes of `buf` it holds: `buf` keeps
/// its length from file to file, so that only growing it zeroes memory (zeroing every
/// file's buffer before reading into it was a measurable share of a campaign).
fn read_small(mut file: File, len: u64, max_bytes: u64, buf: &mut Vec<u8>) -> io::Result<usize> {
    let limit = max_bytes.saturating_add(1);
    let want = usize::try_from(len.saturating_add(1).min(limit)).unwrap_or(usize::MAX);
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut filled = 0;
    loop {
        let Some(room) = buf.get_mut(filled..want).filter(|room| !room.is_empty()) else {
            // The buffer is full: the file grew past its listed size. Read on as before.
            buf.truncate(filled);
            let rest = limit.saturating_sub(filled as u64);
            file.take(rest).read_to_end(buf)?;
            return Ok(buf.len());
        };
        match file.read(room) {
            Ok(0) => break,
            Ok(n) => {
                filled = filled.saturating_add(n);
                if filled as u64 == len && filled < want {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Opens a file a directory walk listed as regular (see [`Input::Walked`]). When that
/// does not simply give a regular file, it is checked as the walk and the open did before
/// walked files were opened unchecked (stat through links, then open and check again), so
/// every refusal and message is theirs.
fn open_walked(path: &Path, dir_device: u64) -> Result<(File, u64), Problem> {
    if let Some(opened) = kvlower_fs::open_walked_regular(path, dir_device) {
        return Ok(opened);
    }
    let meta = std::fs::metadata(path).map_err(|e| Problem::Read(e.to_string()))?;
    if let Some(kind) = not_regular(&meta) {
        return Err(Problem::NotRegularFile(kind));
    }
    // Replaced by a link since the walk: a link is opened the long way.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        kvlower_fs::open_listed_regular(path, &meta).map_err(refusal_problem)
    } else {
        open_regular(path)
    }
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
        source_digest: None,
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
        // A path that cannot be read (missing, no permission) is a coded diagnostic
        // (`unreadable-file`, exit 2) like any other refused input, not a bare error.
        let meta = match std::fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) => {
                traces.push(Input::Refused(path.clone(), Problem::Read(e.to_string())));
                continue;
            }
        };
        if meta.is_dir() {
            let start = traces.len();
            // Resolved once: a directory link below it is judged against this.
            let top = std::fs::canonicalize(path).ok();
            let walk = Walk {
                listed_ok: kvlower_fs::outside_pseudo_fs(path),
                top: top.as_deref(),
            };
            walk_jsonl(path, &walk, &mut traces);
            let found = traces.get(start..).unwrap_or_default();
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.jsonl trace below this directory",
                    display(path)
                ));
            }
            debug_assert!(found.is_sorted_by(|a, b| input_path(a) <= input_path(b)));
        } else {
            traces.push(classify(path.clone(), &meta));
        }
    }
    Ok(traces)
}

fn input_path(input: &Input) -> &Path {
    match input {
        Input::Stdin => Path::new("-"),
        Input::File(p, _) | Input::Walked(p, _) | Input::Refused(p, _) => p,
    }
}

fn classify(path: PathBuf, meta: &std::fs::Metadata) -> Input {
    match not_regular(meta) {
        None => Input::File(path, meta.len()),
        Some(kind) => Input::Refused(path, Problem::NotRegularFile(kind)),
    }
}

/// Adds every `*.jsonl` below `dir` to `found`, and every directory or entry that cannot
/// be read as a refused input (so one unreadable subdirectory is reported and the rest
/// still judged), sorted by path: each directory's entries are visited in the order of
/// their names, a subdirectory's files where its name sorts, so the walk lists the paths
/// in `Path`'s component order without comparing whole paths (sorting the campaign's
/// paths afterwards cost more than listing them). Directory links are never followed, so
/// a link cycle cannot loop, and no trace is dropped without a word: a link (of any name
/// but `*.jsonl`) to a directory inside the walked directory adds nothing (the walk
/// reaches that directory, and every trace in it, by its real path, once); a link to a
/// directory outside it, and a link whose target cannot be reached (it may have been a
/// directory), are refused inputs of their own (exit 2), so the tally never silently
/// leaves reachable traces out.
fn walk_jsonl(dir: &Path, walk: &Walk<'_>, found: &mut Vec<Input>) {
    let unreadable = |e: io::Error| Problem::Read(format!("cannot read directory: {e}"));
    let listing = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return found.push(Input::Refused(dir.to_path_buf(), unreadable(e))),
    };
    // Only what the walk uses is kept and sorted (directories, `*.jsonl` and entries
    // whose type cannot be read): a campaign directory may hold many other files.
    let mut entries = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => {
                let name = entry.file_name();
                let kind = entry.file_type();
                let wanted = match &kind {
                    Ok(kind) => kind.is_dir() || kind.is_symlink() || is_jsonl(&name),
                    Err(_) => true,
                };
                if wanted {
                    entries.push((name, entry.path(), kind));
                }
            }
            // Named by `dir`, which sorts before everything below it.
            Err(e) => found.push(Input::Refused(dir.to_path_buf(), unreadable(e))),
        }
    }
    entries.sort_unstable_by(|(a, ..), (b, ..)| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    // Files listed here are opened without a stat when they are on this directory's device.
    let device = if walk.listed_ok {
        kvlower_fs::directory_device(dir)
    } else {
        None
    };
    for (name, path, kind) in entries {
        let kind = match kind {
            Ok(kind) => kind,
            Err(e) => {
                found.push(Input::Refused(path, Problem::Read(e.to_string())));
                continue;
            }
        };
        if kind.is_dir() {
            walk_jsonl(&path, walk, found);
        } else if kind.is_symlink() && !is_jsonl(&name) {
            if let Some(refused) = unwalked_link(path, walk.top) {
                found.push(refused);
            }
        } else if is_jsonl(&name) {
            if let Some(device) = device.filter(|_| kind.is_file()) {
                found.push(Input::Walked(path, device));
                continue;
            }
            // Follow a link to see what it names; never open it here.
            match std::fs::metadata(&path) {
                Ok(meta) => found.push(classify(path, &meta)),
                Err(e) => found.push(Input::Refused(path, Problem::Read(e.to_string()))),
            }
        }
    }
}

/// What a directory walk carries down.
struct Walk<'a> {
    /// The walked directory is outside the kernel's pseudo-file systems, so a regular file
    /// listed below it (no link) is not stat-ed here but opened directly ([`Input::Walked`]).
    listed_ok: bool,
    /// The walked directory, resolved (`None` when it cannot be: every directory link
    /// below it is then refused).
    top: Option<&'a Path>,
}

/// A link not named `*.jsonl` met by the walk: `None` when it names something other
/// than a directory (not a trace, like any other file) or a directory inside the walked
/// one (reached by its real path); otherwise a refused input saying why it was not walked.
fn unwalked_link(path: PathBuf, top: Option<&Path>) -> Option<Input> {
    let problem = match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_dir() => return None,
        Ok(_) => {
            let inside = std::fs::canonicalize(&path)
                .ok()
                .zip(top)
                .is_some_and(|(target, top)| target.starts_with(top));
            if inside {
                return None;
            }
            Problem::NotRegularFile(
                "a link to a directory outside the walked directory, not followed; name its target as a PATH of its own",
            )
        }
        Err(e) => Problem::Read(format!(
            "a link whose target cannot be reached (it is not walked): {e}"
        )),
    };
    Some(Input::Refused(path, problem))
}

/// Whether a directory entry's name is a trace's: `*.jsonl`.
fn is_jsonl(name: &std::ffi::OsStr) -> bool {
    Path::new(name).extension().is_some_and(|e| e == "jsonl")
}

fn display(path: &Path) -> String {
    // A UTF-8 path displays as itself; copying it skips the formatter (once per trace).
    match path.to_str() {
        Some(text) => text.to_owned(),
        None => path.display().to_string(),
    }
}
