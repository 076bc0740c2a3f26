//! `kvlower gate` in CI: GitHub annotations, a Markdown summary, quiet and colour.

use kvlower_tests::{kvlower, repo_root};

fn fixture(rel: &str) -> String {
    repo_root()
        .join("tests/fixtures/traces")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn github_format_annotates_malformed_lines_with_file_and_line() {
    let path = fixture("malformed/not_json.jsonl");
    let run = kvlower(&["gate", "--format", "github", &path]);
    assert_eq!(run.code, 1);
    let annotation = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error "))
        .expect("an annotation");
    assert!(
        annotation
            .contains("not_json.jsonl,line=2,col=130,title=kvlower malformed-trace::not JSON"),
        "{annotation}"
    );
    assert!(
        run.stderr
            .contains("not_json.jsonl:2:130: error[malformed-trace]: not JSON"),
        "the human report follows"
    );
}

#[test]
fn markdown_format_is_a_table_with_the_campaign() {
    let run = kvlower(&["gate", "--format", "markdown", &fixture("scenarios")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("### kvlower gate\n"));
    assert!(
        run.stdout
            .contains("| trace | claim | family | gates | rejected as control |")
    );
    assert!(
        run.stdout.contains("| control passes (must be 0) | 0/7 |"),
        "{}",
        run.stdout
    );
}

#[test]
fn quiet_prints_only_the_summary_line_and_colour_is_opt_in() {
    // `-q` is the summary line (the tally), as for every command (issue 36).
    let run = kvlower(&["gate", "-q", &fixture("scenarios/connector_success.jsonl")]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout, "1 runs, 1 passed, 0 failed\n");
    let campaign = kvlower(&["gate", "-q", &fixture("scenarios")]);
    assert_eq!(campaign.stdout.lines().count(), 1, "{}", campaign.stdout);
    assert!(campaign.stderr.is_empty(), "{}", campaign.stderr);
    let plain = kvlower(&[
        "gate",
        "--color",
        "never",
        &fixture("scenarios/connector_success.jsonl"),
    ]);
    assert!(!plain.stdout.contains('\x1b'));
    let coloured = kvlower(&[
        "gate",
        "--color",
        "always",
        &fixture("scenarios/connector_success.jsonl"),
    ]);
    assert!(
        coloured.stdout.contains("\x1b[32mPASS"),
        "{}",
        coloured.stdout
    );
}
