//! Issue 42, item 5: `gate --campaign DIR` (a directory, a FIFO) exited 1 with
//! `campaign-document-invalid` and "refused: NotARegularFile". A document refused before
//! it is read is refused as every other input is: exit 2 with the file system's own code
//! (`not-a-regular-file`; docs/output.md, "Exit codes").

use serde_json::Value;

use kvlower_tests::kvlower;

#[test]
fn a_campaign_that_is_no_regular_file_exits_2_with_the_file_systems_code() {
    let repo = kvlower_tests::scratch_repo(&["evidence/dir"]);
    let root = repo.path();
    let root_arg = root.display().to_string();
    let fifo = root.join("evidence/fifo.json");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut docs = vec![root.join("evidence/dir").display().to_string()];
    if made {
        docs.push(fifo.display().to_string());
    }
    for doc in &docs {
        let human = kvlower(&["gate", "--root", &root_arg, "--campaign", doc]);
        assert_eq!(human.code, 2, "{doc}: {}", human.stderr);
        assert!(
            human.stderr.contains("error[not-a-regular-file]"),
            "{doc}: {}",
            human.stderr
        );
        assert!(
            !human.stderr.contains("NotARegularFile"),
            "{}",
            human.stderr
        );
        let run = kvlower(&[
            "gate",
            "--format",
            "json",
            "--root",
            &root_arg,
            "--campaign",
            doc,
        ]);
        assert_eq!(run.code, 2, "{doc}");
        let envelope: Value = serde_json::from_str(&run.stdout).expect("json");
        assert_eq!(
            envelope["diagnostics"][0]["code"], "not-a-regular-file",
            "{doc}: {envelope}"
        );
    }
}
