//! Issue 42, "Also": `check` on a repository whose `modes/modes.yaml` is broken and that
//! has no descriptors said "no descriptors found" with no coded finding for the catalog.
//! The catalog's finding comes first; the wrong-directory message stays for a directory
//! with neither a catalog nor descriptors (docs/catalog.md).

use std::fs;

use kvlower_tests::kvlower;

#[test]
fn a_broken_catalog_without_descriptors_is_the_catalogs_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(dir.path().join("modes")).expect("mkdir");
    fs::write(dir.path().join("modes/modes.yaml"), "modes: [\n").expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--root", &root]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("modes/modes.yaml") && run.stderr.contains("error[yaml-syntax]"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("no descriptors"), "{}", run.stderr);
    let json = kvlower(&["check", "--root", &root, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(doc["diagnostics"][0]["file"], "modes/modes.yaml", "{doc}");
    // The control: neither a catalog nor descriptors is still the wrong directory.
    let empty = tempfile::tempdir().expect("tempdir");
    let run = kvlower(&["check", "--root", &empty.path().display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}
