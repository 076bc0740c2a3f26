//! The trace gate's caps on what it reads (one line, one trace); the reading itself is
//! the one line reader, [`kvlower_fs::line_reader`], which the join shares.

/// The longest line the gate reads (16 MiB); a longer one is skipped and reported, so a
/// corrupt trace cannot make the reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes the gate reads from one trace by default (4 GiB): a trace streamed from
/// a pipe, or a file that keeps growing, cannot keep the gate reading forever.
pub const MAX_TRACE_BYTES: u64 = 4 << 30;
