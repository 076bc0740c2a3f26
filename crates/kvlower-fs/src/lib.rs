//! The one door to the file system: every file kvlower reads, writes or walks goes
//! through this crate (a test greps the other crates for any way around it).
//!
//! kvlower reads files it does not control: descriptors and the catalog from a
//! pull request, traces and event files named by those descriptors, results a
//! previous run wrote. Every read starts at [`FileKind::open`] ([`Open`]), which
//!
//! 1. resolves the path, symbolic links included, and — when a root applies —
//!    refuses anything that resolves outside it (a link to `/etc/passwd`, a
//!    `../../x`, an absolute path);
//! 2. refuses anything that is not a regular file *before* opening it for
//!    reading, and opens with `O_NONBLOCK` then re-checks the open descriptor,
//!    so a FIFO or a device can never make kvlower wait (and a file swapped
//!    for one between the check and the open is still refused);
//! 3. refuses kernel pseudo-files (`/proc`, `/sys`), which claim to be regular
//!    files but can block or never end;
//! 4. caps the bytes read per [`FileKind`] (a descriptor does not need 2 GB);
//! 5. reports every refusal as a typed [`Refusal`] that callers turn into a
//!    coded finding.
//!
//! The caps are listed in `docs/files.md`; [`FileKind::cap`] is the source.
//!
//! By job: [`kind`] (what a file is for, its cap), [`refusal`] (why a file was not
//! read), [`open`] (the open builder), [`capped`] (the capped reader),
//! [`line_reader`] (lines of a stream, capped), [`walk`] (directory listing and the
//! gate's trace walker), [`write`] (atomic writes), [`inspect`] (metadata, no open).

pub mod capped;
mod finding;
pub mod inspect;
pub mod kind;
pub mod line_reader;
pub mod open;
pub mod refusal;
pub mod walk;
pub mod write;

pub use capped::CappedReader;
pub use kind::FileKind;
pub use open::{Open, Resolved};
pub use refusal::Refusal;
