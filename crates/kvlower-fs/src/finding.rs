//! A refusal as a finding: the code, message and hint every command reports a file
//! kvlower refused to read under (`unreadable-file`, `file-outside-root`,
//! `not-a-regular-file`, `file-too-large`). Beside [`Refusal`] so that the leaf crate
//! of codes needs nothing of the file layer, and every reader reports a refusal alike.

use kvlower_codes::{Code, Finding, text};

use crate::Refusal;

impl Refusal {
    /// The code of a finding that this file was refused.
    pub fn code(&self) -> Code {
        match self {
            Refusal::OutsideRoot { .. } => Code::FileOutsideRoot,
            Refusal::NotRegular { .. }
            | Refusal::PseudoFile { .. }
            | Refusal::WouldBlock { .. } => Code::NotARegularFile,
            Refusal::TooLarge { .. } => Code::FileTooLarge,
            Refusal::Missing { .. } | Refusal::PermissionDenied { .. } | Refusal::Io { .. } => {
                Code::UnreadableFile
            }
        }
    }

    /// The finding that `file` (as shown to the reader) was refused, with a hint per
    /// reason.
    pub fn finding(&self, file: impl Into<String>) -> Finding {
        let hint = match self {
            Refusal::Missing { .. } => "check that the file exists",
            Refusal::PermissionDenied { .. } => "check the file's permissions",
            Refusal::OutsideRoot { .. } => {
                "keep inputs inside the repository; a link must not point outside it"
            }
            Refusal::NotRegular { .. }
            | Refusal::PseudoFile { .. }
            | Refusal::WouldBlock { .. } => "kvlower reads regular files only (see docs/files.md)",
            Refusal::TooLarge { .. } => "see docs/files.md for the cap per kind of file",
            Refusal::Io { .. } => "check that the file is readable",
        };
        Finding::new(
            self.code(),
            file,
            text::excerpt(&self.to_string(), text::MESSAGE_MAX_CHARS),
        )
        .with_hint(hint)
    }
}
