//! What a file is for, and the most bytes kvlower reads from a file of each kind.

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// What a file is for; decides its byte cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// `capabilities/*.yaml`.
    Descriptor,
    /// `modes/modes.yaml`.
    Catalog,
    /// `bad_lowering/*.yaml`.
    BadLoweringCase,
    /// A `kvlower join` block registry.
    Registry,
    /// A registry's `token_map.file`.
    TokenMap,
    /// A gate trace (JSON lines); read streaming.
    Trace,
    /// A committed `*.join.json` evidence document.
    JoinDocument,
    /// A join event file (JSON lines or msgpack); read streaming.
    EventFile,
    /// A routing trace (`kvlower route`, docs/routing-trace.md), or the routing gate
    /// document that names one.
    RoutingTrace,
    /// A generated file in `results/` or `schemas/`, read back by `check`.
    Result,
    /// The README, whose generated runtimes table `matrix` rewrites and `check` compares.
    Readme,
    /// A file a finding points into, re-read to show the offending line beside it.
    Snippet,
    /// An evidence folder's `reproduce.json`: how CI re-runs it live
    /// (docs/conformance.md section 7), read for the matrix's reproduced marks.
    ReproduceManifest,
}

impl FileKind {
    pub const ALL: &'static [FileKind] = &[
        FileKind::Descriptor,
        FileKind::Catalog,
        FileKind::BadLoweringCase,
        FileKind::Registry,
        FileKind::TokenMap,
        FileKind::Trace,
        FileKind::JoinDocument,
        FileKind::EventFile,
        FileKind::RoutingTrace,
        FileKind::Result,
        FileKind::Readme,
        FileKind::Snippet,
        FileKind::ReproduceManifest,
    ];

    /// The most bytes kvlower reads from a file of this kind. Hand-written
    /// YAML gets 1 MiB (the largest committed descriptor is a few KiB);
    /// machine-written inputs get room to grow, streams the most.
    pub const fn cap(self) -> u64 {
        match self {
            FileKind::Descriptor | FileKind::Catalog | FileKind::BadLoweringCase => MIB,
            FileKind::Readme | FileKind::ReproduceManifest => MIB,
            FileKind::Snippet => 4 * MIB,
            FileKind::Registry => 16 * MIB,
            FileKind::TokenMap => 64 * MIB,
            FileKind::JoinDocument => 64 * MIB,
            FileKind::RoutingTrace => 64 * MIB,
            FileKind::Result => 64 * MIB,
            FileKind::Trace => GIB,
            FileKind::EventFile => 4 * GIB,
        }
    }

    /// How messages name the kind.
    pub const fn name(self) -> &'static str {
        match self {
            FileKind::Descriptor => "descriptor",
            FileKind::Catalog => "catalog",
            FileKind::BadLoweringCase => "bad-lowering case",
            FileKind::Registry => "registry",
            FileKind::TokenMap => "token map",
            FileKind::Trace => "trace",
            FileKind::JoinDocument => "join document",
            FileKind::RoutingTrace => "routing trace",
            FileKind::EventFile => "event file",
            FileKind::Result => "generated result",
            FileKind::Readme => "README",
            FileKind::Snippet => "source shown beside a finding",
            FileKind::ReproduceManifest => "reproduce manifest",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_grow_from_hand_written_to_streamed() {
        assert!(FileKind::Descriptor.cap() <= FileKind::Registry.cap());
        assert!(FileKind::Registry.cap() <= FileKind::Trace.cap());
        assert!(FileKind::Trace.cap() <= FileKind::EventFile.cap());
        for kind in FileKind::ALL {
            assert!(kind.cap() > 0, "{kind}");
        }
    }
}
