//! One trace judged on several threads, with the same verdicts and diagnostics as the
//! single-threaded reader ([`crate::evaluate_reader_bounded`]).
//!
//! Parsing a line does not depend on any other line, so it is the part spread over the
//! pool; judging (the envelope checks and the claim state machines) stays in line order.
//!
//! - A reader thread splits the input into lines with the one line reader
//!   ([`kvlower_fs::line_reader::for_each_line`], same caps, same byte budget) and copies whole
//!   lines into blocks of about [`BLOCK_BYTES`], handed over through a channel of
//!   [`BLOCKS_IN_FLIGHT`] blocks.
//! - Each block is parsed on the pool, its lines in order, while the previous block's
//!   events are judged: `rayon::join(judge block k, parse block k+1)`, so the thread that
//!   finishes judging helps parsing.
//!
//! Memory stays bounded: at most `BLOCKS_IN_FLIGHT` + 3 blocks (each of at most
//! `BLOCK_BYTES` plus one line of at most the line cap) and the parsed events of two.
//! The first non-blank line, which may be the header, is parsed again in order by the
//! evaluator, exactly as in the single-threaded reader.

use std::io::{self, BufRead};
use std::ops::ControlFlow;
use std::sync::mpsc;

use kvlower_fs::line_reader::{End, Line};
use rayon::prelude::*;

use crate::evaluate::TraceEvaluator;
use crate::parse::{Parsed, parse};
use crate::problem::Problem;
use crate::{ClaimVerdict, MAX_LINE_BYTES, TraceOutline};

/// Bytes of whole lines gathered per block before it is handed over.
const BLOCK_BYTES: usize = 1 << 20;

/// Blocks read ahead of the one being parsed.
const BLOCKS_IN_FLIGHT: usize = 2;

/// Lines parsed per pool task (fewer tasks than lines keeps the hand-over cheap).
const LINES_PER_TASK: usize = 128;

/// One line of a block.
#[derive(Clone, Copy)]
enum Item {
    /// 1-based line number and the line's bytes in the block's text, without its `\n`.
    Text { line: u64, start: usize, end: usize },
    /// A line over the cap, skipped.
    TooLong(u64),
}

/// Whole lines in input order.
#[derive(Default)]
struct Block {
    text: Vec<u8>,
    items: Vec<Item>,
}

impl Block {
    fn bytes(&self, start: usize, end: usize) -> &[u8] {
        self.text.get(start..end).unwrap_or_default()
    }
}

/// How the reader thread ended: the lines it read and why it stopped.
struct Ending {
    lines: u64,
    end: io::Result<End>,
}

/// A block to fill: one the judging side is done with, or a new one.
fn empty_block(recycled: &mpsc::Receiver<Block>) -> Block {
    // A block grown by a very long line is not kept.
    match recycled.try_recv() {
        Ok(mut block) if block.text.capacity() <= 2 * BLOCK_BYTES => {
            block.text.clear();
            block.items.clear();
            block
        }
        _ => Block {
            text: Vec::with_capacity(BLOCK_BYTES + (BLOCK_BYTES >> 2)),
            items: Vec::new(),
        },
    }
}

/// Splits `r` into blocks of lines and sends them; returns when the input ends, the
/// budget is spent, a read fails, or the receiver is gone. Blocks come back through
/// `recycled` to be filled again (fresh memory for every block costs page faults).
fn read_blocks<R: BufRead>(
    r: R,
    max_bytes: u64,
    tx: &mpsc::SyncSender<Block>,
    recycled: &mpsc::Receiver<Block>,
) -> Ending {
    let mut block = empty_block(recycled);
    let mut lines: u64 = 0;
    let end = kvlower_fs::line_reader::for_each_line(r, MAX_LINE_BYTES, max_bytes, |l| {
        lines = lines.saturating_add(1);
        match l {
            Line::Text(bytes) => {
                let content = Line::content(bytes);
                let start = block.text.len();
                block.text.extend_from_slice(content);
                block.items.push(Item::Text {
                    line: lines,
                    start,
                    end: block.text.len(),
                });
            }
            Line::TooLong => block.items.push(Item::TooLong(lines)),
        }
        if block.text.len() >= BLOCK_BYTES {
            let full = std::mem::replace(&mut block, empty_block(recycled));
            if tx.send(full).is_err() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    if !block.items.is_empty() {
        // A closed channel means the judging side stopped; nothing is left to tell it.
        let _ = tx.send(block);
    }
    Ending { lines, end }
}

/// The parsed lines of a block (`None` for a line over the cap).
type ParsedLines<'b> = Vec<Option<Parsed<'b>>>;

/// An emptied vector of parsed lines, its memory reused for another block's lines
/// (collecting an empty vector in place keeps its allocation).
fn reuse<'x>(mut v: ParsedLines<'_>) -> ParsedLines<'x> {
    v.clear();
    v.into_iter().map(|_| None).collect()
}

/// The lines of `block`, parsed on the pool into `out`'s memory.
fn parse_block<'b>(block: &'b Block, out: ParsedLines<'_>) -> ParsedLines<'b> {
    let mut out = reuse(out);
    block
        .items
        .par_iter()
        .with_min_len(LINES_PER_TASK)
        .map(|item| match *item {
            Item::Text { start, end, .. } => Some(parse(crate::parse::trim_json_whitespace(
                block.bytes(start, end),
            ))),
            Item::TooLong(_) => None,
        })
        .collect_into_vec(&mut out);
    out
}

/// Judges the parsed lines of `block`, in order; returns the emptied vector.
fn judge_block<'x>(
    evaluator: &mut TraceEvaluator,
    block: &Block,
    parsed: ParsedLines<'_>,
) -> ParsedLines<'x> {
    for (item, parsed) in block.items.iter().zip(parsed.iter()) {
        match (*item, parsed) {
            (Item::Text { line, start, end }, Some(parsed)) => {
                evaluator.push_line_parsed(line, block.bytes(start, end), parsed);
            }
            (Item::TooLong(line), _) | (Item::Text { line, .. }, None) => {
                evaluator.line_problem(line, Problem::LineTooLong(MAX_LINE_BYTES));
            }
        }
    }
    reuse(parsed)
}

/// [`crate::evaluate_reader_bounded`] with the lines parsed on `pool`.
pub(crate) fn evaluate<R: BufRead + Send>(
    name: &str,
    r: R,
    max_bytes: u64,
    pool: &rayon::ThreadPool,
    on_verdict: &mut dyn FnMut(ClaimVerdict),
) -> TraceOutline {
    let mut evaluator = TraceEvaluator::new(name);
    let ending = std::thread::scope(|s| {
        let (tx, rx) = mpsc::sync_channel::<Block>(BLOCKS_IN_FLIGHT);
        let (recycle, recycled) = mpsc::channel::<Block>();
        let reader = s.spawn(move || read_blocks(r, max_bytes, &tx, &recycled));
        // Two blocks alternate: while `a`'s events are judged, `b` is parsed, and back.
        let mut a = Block::default();
        let mut b = Block::default();
        let mut parsed_a: ParsedLines<'_> = Vec::new();
        let mut spare: ParsedLines<'_> = Vec::new();
        loop {
            let Ok(next) = rx.recv() else {
                judge_block(&mut evaluator, &a, parsed_a);
                break;
            };
            // The reader may be gone already; a block it does not take back is dropped.
            let _ = recycle.send(std::mem::replace(&mut b, next));
            let (emptied, parsed_b) = pool.join(
                || judge_block(&mut evaluator, &a, parsed_a),
                || parse_block(&b, spare),
            );
            let Ok(next) = rx.recv() else {
                judge_block(&mut evaluator, &b, parsed_b);
                break;
            };
            let _ = recycle.send(std::mem::replace(&mut a, next));
            let (emptied_b, parsed) = pool.join(
                || judge_block(&mut evaluator, &b, parsed_b),
                || parse_block(&a, emptied),
            );
            parsed_a = parsed;
            spare = emptied_b;
        }
        drop(rx);
        reader.join().unwrap_or_else(|_| Ending {
            lines: 0,
            end: Err(io::Error::other("the trace reader thread stopped")),
        })
    });
    let after = ending.lines.saturating_add(1);
    match ending.end {
        Ok(End::Complete | End::Stopped) => {}
        Ok(End::TooLarge) => evaluator.line_problem(after, Problem::TraceTooLarge(max_bytes)),
        Err(e) => evaluator.line_problem(after, Problem::Read(e.to_string())),
    }
    evaluator.finish(on_verdict)
}
