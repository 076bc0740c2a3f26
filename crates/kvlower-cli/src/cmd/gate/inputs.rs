//! Finding, opening and judging `gate`'s inputs: the PATHs and the `*.jsonl` below
//! directories (walked and opened by kvlower-fs, [`kvlower_fs::walk`]), what is
//! refused before reading, and the judging of one input (read whole on a pool thread,
//! or streamed alone).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use kvlower_fs::walk::{Found, Named, Unread};
use kvlower_trace::{ClaimVerdict, LocatedProblem, Problem, TraceFamily, TraceOutline, TraceTally};

/// Files up to this size are read whole and judged on the pool; larger ones stream alone.
const SMALL_FILE_BYTES: u64 = 16 << 20;

/// One trace to judge, as found on the command line or below a directory.
#[derive(Debug)]
pub(super) enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A regular file named on the command line or reached through a link; a file a
    /// directory walk listed by its entry as a regular file (no link), not stat-ed before
    /// it is opened (the open tells its size), so it costs no system call until a pool
    /// thread opens it; or an input refused or unreadable before reading: reported,
    /// judged as nothing ([`Found`]).
    Found(Found),
}

impl Input {
    pub(super) fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::Found(found) => display(found.path()),
        }
    }

    /// Judged on the pool (read whole) rather than alone, streaming. A walked file's size
    /// is not known yet: one found large when opened is handed back to be streamed
    /// ([`Done::Large`]).
    pub(super) fn small(&self) -> bool {
        match self {
            Input::Stdin => false,
            Input::Found(Found::File(_, len)) => *len <= SMALL_FILE_BYTES,
            Input::Found(Found::Listed(..) | Found::Refused(..)) => true,
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
    let found = match input {
        Input::Stdin => return Opened::Stdin,
        Input::Found(found) => found,
    };
    match kvlower_fs::walk::open_found(found) {
        Err(unread) => Opened::Refused(problem(unread)),
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

/// The trace gate's words for why an input is not read.
fn problem(unread: Unread) -> Problem {
    match unread {
        Unread::NotRegular(what) => Problem::NotRegularFile(what),
        Unread::Read(why) => Problem::Read(why),
    }
}

/// The outline of an input refused or unreadable before any line was judged.
fn refused(name: &str, problem: Problem) -> TraceOutline {
    TraceOutline {
        name: name.to_owned(),
        family: TraceFamily::Unknown,
        runtime: None,
        source_digest: None,
        events: 0,
        diagnostics: vec![LocatedProblem {
            line: None,
            column: None,
            problem,
        }],
        tally: TraceTally::default(),
    }
}

/// The traces named by `paths`, in order; directories expand to their `*.jsonl` files,
/// sorted. Paths keep the form they were given in (never made absolute). A missing PATH
/// or a directory without any `*.jsonl` is a usage error; anything unreadable or not a
/// regular file below a directory is an input of its own, refused when judged. A PATH
/// that cannot be read (missing, no permission) is a coded diagnostic
/// (`unreadable-file`, exit 2) like any other refused input, not a bare error.
pub(super) fn collect_traces(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut traces = Vec::new();
    let mut found = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            traces.push(Input::Stdin);
            continue;
        }
        found.clear();
        let named = kvlower_fs::walk::find_jsonl(path, &mut found);
        if named == Named::Directory && found.is_empty() {
            return Err(format!(
                "{}: no *.jsonl trace below this directory",
                display(path)
            ));
        }
        debug_assert!(found.is_sorted_by(|a, b| a.path() <= b.path()));
        traces.extend(found.drain(..).map(Input::Found));
    }
    Ok(traces)
}

fn display(path: &Path) -> String {
    // A UTF-8 path displays as itself; copying it skips the formatter (once per trace).
    match path.to_str() {
        Some(text) => text.to_owned(),
        None => path.display().to_string(),
    }
}
