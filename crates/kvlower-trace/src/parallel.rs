//! Parsing on several threads, judging on one.
//!
//! Parsing a line into its typed event is most of the work and needs nothing from other
//! lines, while judging must see events in order. So lines are gathered into blocks of
//! about [`Parallelism::block_bytes`], each block's lines are parsed by up to
//! [`Parallelism::threads`] scoped threads, and the parsed events are then judged in line
//! order on the caller's thread. The verdicts are exactly those of the sequential reader;
//! memory stays bounded by one block and its parsed events.

use std::io::BufRead;
use std::ops::Range;

use crate::Problem;
use crate::evaluate::{Parsed, TraceEvaluator, parse};
use crate::lines::{self, Line};

/// How [`crate::evaluate_reader_each_with`] spreads the parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parallelism {
    /// Threads parsing one block (1: parse on the caller's thread, spawn nothing).
    pub threads: usize,
    /// Bytes of whole lines gathered before a block is parsed.
    pub block_bytes: usize,
}

impl Default for Parallelism {
    /// All available cores, 1 MiB blocks.
    fn default() -> Self {
        Parallelism {
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            block_bytes: 1 << 20,
        }
    }
}

/// A line of the current block.
enum Span {
    Text { line: u64, bytes: Range<usize> },
    TooLong { line: u64 },
}

/// Lines gathered for parsing.
struct Block {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

impl Block {
    fn text(&self, range: &Range<usize>) -> &[u8] {
        self.bytes.get(range.clone()).unwrap_or(&[])
    }
}

/// Parses `spans` into `out` (cleared first; its allocation is reused).
fn parse_spans<'b>(block: &'b Block, spans: &[Span], mut out: Vec<Parsed<'b>>) -> Vec<Parsed<'b>> {
    out.clear();
    out.extend(spans.iter().map(|span| match span {
        Span::Text { bytes, .. } => parse(block.text(bytes)),
        Span::TooLong { .. } => Parsed::Blank,
    }));
    out
}

/// Empties `v` and frees it from the block it borrowed, keeping its allocation: a block's
/// parsed events take hundreds of KiB, which would otherwise be mapped and unmapped (page
/// faults and all) once per block.
fn recycle(mut v: Vec<Parsed<'_>>) -> Vec<Parsed<'static>> {
    v.clear();
    // In-place collect of an empty vector: no element is produced, the buffer is kept.
    // (`filter_map`, not `filter`: it is what lets the element type change lifetime.)
    #[allow(clippy::unnecessary_filter_map)]
    v.into_iter().filter_map(|_| None).collect()
}

/// A last, partial block smaller than this is parsed on the caller's thread: a thread
/// costs more than it saves (a campaign's traces are mostly this small).
const MIN_PARALLEL_BYTES: usize = 64 * 1024;

/// Parses the block (in parallel when asked and worth it) and judges its lines in order.
///
/// The caller's thread takes a smaller first share and judges it while the workers are
/// still parsing theirs, so judging overlaps parsing.
fn flush(
    block: &Block,
    par: Parallelism,
    evaluator: &mut TraceEvaluator,
    spare: &mut Vec<Vec<Parsed<'static>>>,
) {
    let worth_it = block.bytes.len() >= par.block_bytes.min(MIN_PARALLEL_BYTES);
    let threads = if worth_it { par.threads.max(1) } else { 1 };
    let spans = block.spans.as_slice();
    let first_len = if threads > 1 {
        (spans.len() * 4 / (5 * threads)).clamp(1, spans.len())
    } else {
        spans.len()
    };
    let (first, rest) = spans.split_at(first_len);
    let per_worker = rest.len().div_ceil(threads.saturating_sub(1).max(1)).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = rest
            .chunks(per_worker)
            .map(|chunk| {
                let out = spare.pop().unwrap_or_default();
                (chunk, scope.spawn(move || parse_spans(block, chunk, out)))
            })
            .collect();
        let mine = parse_spans(block, first, spare.pop().unwrap_or_default());
        spare.push(recycle(judge(block, first, mine, evaluator)));
        for (chunk, worker) in workers {
            // The parser never panics on any input; should a worker panic anyway, its
            // lines are reported as lost, never silently skipped.
            let parsed = worker.join().unwrap_or_default();
            spare.push(recycle(judge(block, chunk, parsed, evaluator)));
        }
    });
}

/// Judges `spans` in order with their parsed lines.
fn judge<'b>(
    block: &'b Block,
    spans: &[Span],
    mut parsed: Vec<Parsed<'b>>,
    evaluator: &mut TraceEvaluator,
) -> Vec<Parsed<'b>> {
    let mut lines = parsed.drain(..);
    for span in spans {
        match span {
            Span::TooLong { line } => {
                evaluator.line_problem(*line, Problem::LineTooLong(lines::MAX_LINE_BYTES))
            }
            Span::Text { line, bytes } => {
                let p = lines.next().unwrap_or(Parsed::Problem(Problem::Read(
                    "line lost by a parser thread".to_owned(),
                )));
                evaluator.push_parsed(*line, block.text(bytes), p);
            }
        }
    }
    drop(lines);
    parsed
}

/// Feeds every line of `r` to `evaluator`, parsing blocks on `par.threads` threads.
pub(crate) fn feed<R: BufRead>(r: R, par: Parallelism, evaluator: &mut TraceEvaluator) {
    let mut block = Block {
        bytes: Vec::new(),
        spans: Vec::new(),
    };
    let mut spare: Vec<Vec<Parsed<'static>>> = Vec::new();
    let mut line: u64 = 0;
    let read = lines::for_each_line(r, lines::MAX_LINE_BYTES, |l| {
        line = line.saturating_add(1);
        match l {
            Line::Text(text) => {
                let text = text.trim_ascii();
                let start = block.bytes.len();
                block.bytes.extend_from_slice(text);
                block.spans.push(Span::Text {
                    line,
                    bytes: start..block.bytes.len(),
                });
            }
            Line::TooLong => block.spans.push(Span::TooLong { line }),
        }
        if block.bytes.len() >= par.block_bytes {
            flush(&block, par, evaluator, &mut spare);
            block.bytes.clear();
            block.spans.clear();
        }
    });
    flush(&block, par, evaluator, &mut spare);
    if let Err(e) = read {
        evaluator.line_problem(line.saturating_add(1), Problem::Read(e.to_string()));
    }
}
