//! A reader capped at its file kind's bytes: one byte more is a refusal, never a
//! truncation.

use std::io::{self, Read};

use crate::refusal::too_large;
use crate::{FileKind, Refusal};

/// A reader that fails with [`Refusal::TooLarge`] (wrapped in an
/// `io::Error`) as soon as its input goes past the kind's cap, and turns a
/// `WouldBlock` into [`Refusal::WouldBlock`] so no caller spins on it.
/// Usable on any reader, e.g. standard input.
#[derive(Debug)]
pub struct CappedReader<R> {
    inner: R,
    remaining: u64,
    kind: FileKind,
    shown: String,
}

impl<R: Read> CappedReader<R> {
    pub fn new(inner: R, kind: FileKind, shown: &str) -> CappedReader<R> {
        CappedReader {
            inner,
            remaining: kind.cap(),
            kind,
            shown: shown.to_string(),
        }
    }

    /// Bytes read so far.
    pub fn consumed(&self) -> u64 {
        self.kind.cap() - self.remaining
    }

    fn refuse(&self, refusal: Refusal) -> io::Error {
        io::Error::other(refusal)
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let result = if self.remaining == 0 {
            // At the cap: one more byte means the file is too large.
            let mut probe = [0u8; 1];
            match self.inner.read(&mut probe) {
                Ok(0) => return Ok(0),
                Ok(_) => return Err(self.refuse(too_large(&self.shown, self.kind))),
                Err(e) => Err(e),
            }
        } else {
            let limit = usize::try_from(self.remaining).unwrap_or(usize::MAX);
            let len = buf.len().min(limit);
            self.inner.read(&mut buf[..len])
        };
        match result {
            Ok(n) => {
                self.remaining -= n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(self.refuse(Refusal::WouldBlock {
                    path: self.shown.clone(),
                }))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_reader_refuses_an_endless_stream() {
        // An endless reader (what /dev/zero is) stops at the cap.
        let mut reader = CappedReader::new(io::repeat(0), FileKind::Descriptor, "-");
        let mut sink = Vec::new();
        let err = reader.read_to_end(&mut sink).unwrap_err();
        assert!(matches!(
            Refusal::from_io(&err),
            Some(Refusal::TooLarge { .. })
        ));
        assert_eq!(sink.len() as u64, FileKind::Descriptor.cap());
    }
}
