//! `kvlower.toml` (docs/config.md), finding the root from a subfolder, `check PATH...`
//! and `kvlower new`'s one finding per placeholder — as a user hits them, in-process
//! from a chosen working directory (`kvlower_tests::kvlower_in`).

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, kvlower, kvlower_in, repo_root};

/// A descriptor whose every anchor resolves without the rest of this repository.
const ALONE: &str = "vllm_upstream_9dc4946.yaml";

/// What the acceptance asks for: a repository with only `modes/`,
/// `capabilities/` and a config file.
fn scratch(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    fs::create_dir_all(root.join("modes")).expect("mkdir");
    fs::create_dir_all(root.join("capabilities")).expect("mkdir");
    fs::copy(
        repo_root().join("modes/modes.yaml"),
        root.join("modes/modes.yaml"),
    )
    .expect("copy");
    fs::copy(
        repo_root().join("capabilities").join(ALONE),
        root.join("capabilities").join(ALONE),
    )
    .expect("copy");
    fs::write(root.join("kvlower.toml"), config).expect("write");
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_scratch_repository_is_generated_and_checked_from_a_subfolder_with_only_the_matrix() {
    let dir = scratch("# this repository keeps the lowering matrix only\n");
    let sub = dir.path().join("capabilities");

    let run = kvlower_in(&sub, &["matrix"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        listing(&dir.path().join("results")),
        ["lowering-matrix.json", "lowering-matrix.md"]
    );
    assert_eq!(
        listing(&dir.path().join("schemas")),
        ["descriptor.schema.json", "modes.schema.json"]
    );
    // Nothing was written where the command was started.
    assert_eq!(listing(&sub), [ALONE]);

    let run = kvlower_in(&sub, &["check"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("1 descriptor(s), 0 invalid, 0 finding(s); all results fresh"),
        "{}",
        run.stdout
    );
}

#[test]
fn without_a_config_file_the_root_is_found_by_modes_yaml_and_the_matrix_is_the_default() {
    let dir = scratch("");
    fs::remove_file(dir.path().join("kvlower.toml")).expect("rm");
    let deep = dir.path().join("capabilities/notes/drafts");
    fs::create_dir_all(&deep).expect("mkdir");
    assert_eq!(kvlower_in(&deep, &["matrix"]).code, 0);
    assert_eq!(
        listing(&dir.path().join("results")),
        ["lowering-matrix.json", "lowering-matrix.md"]
    );
    let run = kvlower_in(&deep, &["check"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn an_audit_result_the_config_does_not_keep_is_a_stray_file() {
    let dir = scratch("");
    assert_eq!(kvlower_in(dir.path(), &["matrix"]).code, 0);
    fs::write(dir.path().join("results/descriptor-provenance.md"), "old\n").expect("write");
    let run = kvlower_in(dir.path(), &["check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("results/descriptor-provenance.md: error[stray-file]"),
        "{}",
        run.stderr
    );
}

#[test]
fn opting_in_generates_that_suite_and_check_compares_it() {
    let dir = scratch("[results]\nprovenance = true\ncentral_result_table = true\n");
    assert_eq!(kvlower_in(dir.path(), &["matrix"]).code, 0);
    assert_eq!(
        listing(&dir.path().join("results")),
        [
            "central-result-table.md",
            "descriptor-provenance.json",
            "descriptor-provenance.md",
            "lowering-matrix.json",
            "lowering-matrix.md",
        ]
    );
    fs::write(dir.path().join("results/descriptor-provenance.md"), "old\n").expect("write");
    let run = kvlower_in(dir.path(), &["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("results/descriptor-provenance.md: error[stale-result]"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_readme_table_is_regenerated_only_when_opted_in() {
    let readme = format!(
        "# mine\n\n{}\nold\n{}\n",
        kvlower_cli::readme::BEGIN,
        kvlower_cli::readme::END
    );
    let dir = scratch("");
    fs::write(dir.path().join("README.md"), &readme).expect("write");
    assert_eq!(kvlower_in(dir.path(), &["matrix"]).code, 0);
    assert_eq!(
        fs::read_to_string(dir.path().join("README.md")).expect("read"),
        readme
    );
    fs::write(
        dir.path().join("kvlower.toml"),
        "[results]\nreadme_table = true\n",
    )
    .expect("write");
    assert_eq!(kvlower_in(dir.path(), &["check", "-q"]).code, 1);
    assert_eq!(kvlower_in(dir.path(), &["matrix"]).code, 0);
    assert_ne!(
        fs::read_to_string(dir.path().join("README.md")).expect("read"),
        readme
    );
    assert_eq!(kvlower_in(dir.path(), &["check", "-q"]).code, 0);
}

#[test]
fn an_unknown_key_is_located_with_a_did_you_mean() {
    let dir = scratch("[results]\nprovenance = true\nmutaton_controls = true\n");
    let run = kvlower_in(dir.path(), &["check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("kvlower.toml:3:1: error[config-invalid]: unknown field `mutaton_controls`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("did you mean `mutation_controls`?"),
        "{}",
        run.stderr
    );
    // `matrix` refuses too, and writes nothing.
    assert_eq!(kvlower_in(dir.path(), &["matrix"]).code, 1);
    assert!(!dir.path().join("results").exists());
}

#[test]
fn a_wrong_type_is_located_in_json_too() {
    let dir = scratch("[check]\nrequire_verified = \"yes\"\n");
    let run = kvlower_in(dir.path(), &["check", "--format", "json"]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    let d = &doc["diagnostics"][0];
    assert_eq!(d["code"], "config-invalid");
    assert_eq!(d["file"], "kvlower.toml");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(20))
    );
    assert!(
        d["message"].as_str().is_some_and(|m| m.contains("bool")),
        "{d}"
    );
}

#[test]
fn require_verified_in_the_config_is_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in [
        "modes",
        "capabilities",
        "results",
        "schemas",
        "bad_lowering",
        "evidence",
        "scripts", // the source files a campaign's digest covers
    ] {
        copy_dir(&repo_root().join(sub), &dir.path().join(sub));
    }
    fs::copy(
        repo_root().join("kvlower.toml"),
        dir.path().join("kvlower.toml"),
    )
    .expect("copy");
    let flag = kvlower_in(dir.path(), &["check", "-q", "--require-verified"]);
    assert_eq!(kvlower_in(dir.path(), &["check", "-q"]).code, 0);
    let config = fs::read_to_string(dir.path().join("kvlower.toml"))
        .expect("read")
        .replace("require_verified = false", "require_verified = true");
    fs::write(dir.path().join("kvlower.toml"), config).expect("write");
    let configured = kvlower_in(dir.path(), &["check", "-q"]);
    assert_eq!(configured.code, flag.code);
    assert_eq!(configured.stdout, flag.stdout);
}

#[test]
fn this_repository_opts_in_to_everything_it_commits() {
    let run = kvlower_in(&repo_root().join("capabilities"), &["check", "-q"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("all results fresh"), "{}", run.stdout);
}

#[test]
fn check_takes_descriptor_paths_from_the_working_directory() {
    let root = repo_root();
    let total = listing(&root.join("capabilities")).len();
    let run = kvlower_in(&root.join("capabilities"), &["check", ALONE]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "kvlower check: 1 descriptor(s), 0 invalid, 0 finding(s); results not compared (1 of {total} descriptors checked)"
        )),
        "{}",
        run.stdout
    );
    let run = kvlower_in(
        &root,
        &[
            "check",
            &format!("capabilities/{ALONE}"),
            "capabilities/vllm_patched.yaml",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains(&format!("(2 of {total} descriptors checked)")),
        "{}",
        run.stdout
    );
}

#[test]
fn a_named_descriptor_with_a_finding_is_reported_and_the_others_are_not() {
    let dir = scratch("");
    let caps = dir.path().join("capabilities");
    let text = fs::read_to_string(caps.join(ALONE)).expect("read");
    fs::write(caps.join("broken.yaml"), text.replace("status:", "statos:")).expect("write");
    let run = kvlower_in(&caps, &["check", ALONE]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = kvlower_in(&caps, &["check", "broken.yaml"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("capabilities/broken.yaml:"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(ALONE), "{}", run.stderr);
}

#[test]
fn a_path_outside_capabilities_is_a_usage_error() {
    let root = repo_root();
    let run = kvlower_in(&root, &["check", "modes/modes.yaml"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("is not a descriptor of this repository"),
        "{}",
        run.stderr
    );
}

#[test]
fn explain_from_a_subfolder_finds_the_catalog_and_reads_the_path_from_there() {
    let root = repo_root();
    let run = kvlower_in(
        &root.join("capabilities"),
        &["explain", "vllm_patched.yaml"],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // The path as given, joined to the directory the run started in.
    let shown = root.join("capabilities/vllm_patched.yaml");
    assert!(
        run.stdout
            .starts_with(&format!("{}: vLLM (patched)", shown.display())),
        "{}",
        run.stdout
    );
}

#[test]
fn an_explicit_root_still_wins() {
    let dir = scratch("");
    let run = kvlower_in(
        &repo_root().join("capabilities"),
        &["matrix", "--root", &dir.path().display().to_string()],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(dir.path().join("results/lowering-matrix.json").is_file());
}

#[test]
fn a_new_descriptor_reports_each_placeholder_once() {
    let dir = scratch("");
    let run = kvlower(&[
        "new",
        "acme",
        "--version",
        "1.0",
        "--root",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = kvlower_in(
        &dir.path().join("capabilities"),
        &["check", "acme_1_0.yaml", "--format", "json"],
    );
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let diagnostics = doc["diagnostics"].as_array().expect("array");
    let codes: Vec<&str> = diagnostics
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(!codes.contains(&"anchor-self-reference"), "{codes:?}");
    let placeholders: Vec<&str> = diagnostics
        .iter()
        .filter(|d| d["code"] == "anchor-placeholder")
        .filter_map(|d| d["yaml_path"].as_str())
        .collect();
    assert!(!placeholders.is_empty());
    let mut unique = placeholders.clone();
    unique.dedup();
    assert_eq!(unique, placeholders, "one finding per item");
}

#[test]
fn a_real_anchor_to_kvlowers_own_file_is_still_a_self_reference() {
    let dir = scratch("");
    let caps = dir.path().join("capabilities");
    let text = fs::read_to_string(caps.join(ALONE)).expect("read");
    let own = "\n  - obligation: claim_identity\n    status: partial\n    scope: docs_only\n    anchor:\n      kind: repo_file\n      path: modes/modes.yaml\n      note: the catalog says what an obligation is\n";
    let text = text.replacen("\nnative:\n", &format!("\nnative:{own}"), 1);
    assert!(
        text.contains("path: modes/modes.yaml"),
        "fixture: no `native:` list"
    );
    fs::write(caps.join(ALONE), text).expect("write");
    let run = kvlower_in(&caps, &["check", ALONE]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("error[anchor-self-reference]"),
        "{}",
        run.stderr
    );
}

/// Issue 34, item 1: a nested repository whose marker exists but cannot be read
/// (`kvlower.toml` a FIFO, a directory or a dangling link; `modes/modes.yaml` a
/// dangling link) stops the walk there and is reported (exit 2, coded); before,
/// the walk went past it, checked the outer repository and exited 0.
#[test]
fn a_broken_marker_in_a_nested_repository_stops_the_walk_and_is_reported() {
    let outer = scratch("");
    assert_eq!(kvlower_in(outer.path(), &["matrix"]).code, 0);
    assert_eq!(kvlower_in(outer.path(), &["check"]).code, 0);
    /// What is wrong, and how to make it so in the inner repository.
    type Broken = (&'static str, fn(&Path));
    let broken: [Broken; 4] = [
        ("kvlower.toml is a FIFO", |inner| {
            let made = std::process::Command::new("mkfifo")
                .arg(inner.join("kvlower.toml"))
                .status()
                .expect("mkfifo");
            assert!(made.success());
        }),
        ("kvlower.toml is a directory", |inner| {
            fs::create_dir(inner.join("kvlower.toml")).expect("mkdir");
        }),
        ("kvlower.toml is a dangling link", |inner| {
            std::os::unix::fs::symlink("nowhere.toml", inner.join("kvlower.toml")).expect("ln");
        }),
        ("modes/modes.yaml is a dangling link", |inner| {
            fs::create_dir(inner.join("modes")).expect("mkdir");
            std::os::unix::fs::symlink("nowhere.yaml", inner.join("modes/modes.yaml")).expect("ln");
        }),
    ];
    for (i, (what, make)) in broken.iter().enumerate() {
        let inner = outer.path().join(format!("vendor/inner{i}"));
        fs::create_dir_all(inner.join("capabilities")).expect("mkdir");
        fs::copy(
            repo_root().join("capabilities").join(ALONE),
            inner.join("capabilities").join(ALONE),
        )
        .expect("copy");
        make(&inner);
        for start in [inner.clone(), inner.join("capabilities")] {
            let run = kvlower_in(&start, &["check", "--format", "json"]);
            assert_eq!(run.code, 2, "{what}: {}{}", run.stdout, run.stderr);
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
            let codes: Vec<&str> = doc["diagnostics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| d["code"].as_str())
                .collect();
            assert!(!codes.is_empty(), "{what}: no coded diagnostic: {doc}");
        }
    }
}
