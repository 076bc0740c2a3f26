//! Issue 47, "The newcomer's stumbles": an empty repository, a runtime described from
//! the docs alone (`init` → `new` → edit → `check`), and each place the messages did
//! not say what to do.

use std::fs;
use std::path::Path;

use kvlower_tests::{kvlower_in, repo_root};

/// A new repository (`kvlower init`) holding `descriptor` as capabilities/x_1_0_0.yaml.
fn repo_with(descriptor: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let init = kvlower_in(dir.path(), &["init"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    fs::write(dir.path().join("capabilities/x_1_0_0.yaml"), descriptor).expect("write");
    dir
}

/// A valid descriptor with one `supported` item whose `modes:` line is `modes`.
fn one_item(modes: &str) -> String {
    format!(
        "runtime:\n  name: X\n  version: \"1.0.0\"\n  source: source_tree\n  reviewed: 2026-01-01\n  \
         identity:\n    - kind: other\n      version: \"1.0.0\"\n\
         native:\n  - obligation: claim_identity\n    status: supported\n    scope: source_inspection\n    \
         {modes}\n    anchor:\n      kind: public_source\n      repository: owner/x\n      \
         commit: 0123456\n      path: src/x.py\n      note: where the claim's identity is kept\n\
         non_claims:\n  default: nothing else\n"
    )
}

fn check(dir: &Path) -> kvlower_tests::Run {
    kvlower_in(dir, &["check", "--color", "never"])
}

// ------------------------------------------------- 1: a misspelt mode in `modes:`

#[test]
fn a_misspelt_mode_in_modes_is_an_unknown_name_with_a_suggestion() {
    let dir = repo_with(&one_item("modes: [best_effort, ofloadable]"));
    let run = check(dir.path());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[unknown-name]") && run.stderr.contains("native[0].modes[1]"),
        "the misspelt mode is an unknown name at its place: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("did you mean `offloadable`?"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("untagged enum"), "{}", run.stderr);
    assert!(!run.stderr.contains("yaml-syntax"), "{}", run.stderr);
    // `all` and a list still read; a bare word that is not `all` is a wrong type.
    for ok in ["modes: all", "modes: [best_effort]"] {
        let dir = repo_with(&one_item(ok));
        let run = check(dir.path());
        assert!(
            !run.stderr.contains("(at `native[0].modes"),
            "`{ok}` reads: {}",
            run.stderr
        );
    }
    let dir = repo_with(&one_item("modes: offloadable"));
    let run = check(dir.path());
    assert!(
        run.stderr.contains("error[wrong-type]") && run.stderr.contains("`all` or a list of modes"),
        "{}",
        run.stderr
    );
}

// ------------------------------------------------- 2: init's kvlower.toml, a key out of place

#[test]
fn init_writes_every_key_of_kvlower_toml_at_its_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(kvlower_in(dir.path(), &["init"]).code, 0);
    let text = fs::read_to_string(dir.path().join("kvlower.toml")).expect("kvlower.toml");
    // serde's own list of the keys each table accepts (the error for an unknown one).
    for (table, probe) in [
        ("results", "[results]\nzz = 1\n"),
        ("check", "[check]\nzz = 1\n"),
    ] {
        let err = kvlower_cli::config::parse(probe).expect_err("unknown key");
        let expected = err.message.split("expected").nth(1).expect("a list");
        let keys: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        assert!(!keys.is_empty(), "{}", err.message);
        let section = text
            .split(&format!("[{table}]\n"))
            .nth(1)
            .expect("the table")
            .split("\n[")
            .next()
            .unwrap_or("");
        for key in keys {
            assert!(
                section.contains(&format!("\n{key} = false"))
                    || section.starts_with(&format!("{key} = false")),
                "init writes `{key} = false` under [{table}]:\n{text}"
            );
        }
    }
    // And what it writes is the default.
    assert_eq!(
        kvlower_cli::config::parse(&text).expect("parses"),
        kvlower_cli::config::Config::default()
    );
}

#[test]
fn a_known_key_in_the_wrong_table_says_where_it_belongs() {
    let text = format!(
        "{}html_report = true\n",
        kvlower_cli::cmd::init::CONFIG_TEXT
    );
    let d = kvlower_cli::config::parse(&text).expect_err("misplaced");
    let hint = d.hint.as_deref().unwrap_or("");
    assert!(
        hint.contains("`html_report` belongs under `[results]`"),
        "{}: {hint}",
        d.message
    );
    let d = kvlower_cli::config::parse("require_verified = true\n").expect_err("misplaced");
    assert!(
        d.hint
            .as_deref()
            .is_some_and(|h| h.contains("`require_verified` belongs under `[check]`")),
        "{d:?}"
    );
}

// ------------------------------------------------- 3: the scaffold shows `modes:`

#[test]
fn the_scaffold_shows_modes_where_a_supported_item_needs_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert_eq!(kvlower_in(dir.path(), &["init"]).code, 0);
    let new = kvlower_in(dir.path(), &["new", "X", "--version", "1.0.0"]);
    assert_eq!(new.code, 0, "{}", new.stderr);
    let path = dir.path().join("capabilities/x_1_0_0.yaml");
    let text = fs::read_to_string(&path).expect("scaffold");
    let items = text.matches("  - obligation: ").count();
    assert_eq!(
        text.matches("    # modes: [").count(),
        items,
        "every item shows its `modes:` line:\n{text}"
    );
    // A newcomer marks the first item supported and uncomments its `modes:` line,
    // as the comment says: no `modes-not-stated`.
    let first = text.find("  - obligation: ").expect("an item");
    let (head, rest) = text.split_at(first);
    let end = rest[4..]
        .find("  - obligation: ")
        .map_or(rest.len(), |e| e + 4);
    let item = rest[..end]
        .replacen("status: unknown", "status: supported", 1)
        .replacen("    # modes: [", "    modes: [", 1);
    let edited = format!("{head}{item}{}", &rest[end..]);
    fs::write(&path, &edited).expect("write");
    let run = check(dir.path());
    assert!(run.stderr.contains("placeholder"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("modes-not-stated"),
        "the scaffold's modes line is what `supported` needs: {}",
        run.stderr
    );
}

// ------------------------------------------------- 4: an acknowledgement at the item's path

#[test]
fn an_acknowledgement_off_by_a_sub_path_suggests_the_nearest_warning() {
    // `source_inspection` on a `supported` item: `warning[inert-scope]` at `native[0].scope`.
    let base = one_item("modes: all");
    let with_ack = |path: &str| {
        format!(
            "{base}acknowledge:\n  - code: inert-scope\n    path: {path}\n    reason: the source reading is kept for reviewers\n"
        )
    };
    let dir = repo_with(&with_ack("native[0]"));
    let run = check(dir.path());
    assert!(
        run.stderr.contains("warning[unused-acknowledgement]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("did you mean `code: inert-scope`, `path: native[0].scope`?"),
        "{}",
        run.stderr
    );
    // The exact path the hint gives acknowledges it.
    let dir = repo_with(&with_ack("native[0].scope"));
    let run = check(dir.path());
    assert!(
        !run.stderr.contains("unused-acknowledgement"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("warning[inert-scope]"),
        "{}",
        run.stderr
    );
}

// ------------------------------------------------- 5: a misspelt required key is one finding

#[test]
fn a_misspelt_required_key_is_one_unknown_field_not_also_a_missing_field() {
    for (from, to, at) in [
        (
            "  - obligation: claim_identity",
            "  - obligaton: claim_identity",
            "native[0].obligaton",
        ),
        ("runtime:\n", "runtme:\n", "runtme"),
        (
            "    status: supported",
            "    stauts: supported",
            "native[0].stauts",
        ),
    ] {
        let text = one_item("modes: all").replacen(from, to, 1);
        assert_ne!(text, one_item("modes: all"), "{from}");
        let dir = repo_with(&text);
        let run = kvlower_in(dir.path(), &["check", "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
        let errors: Vec<(String, String)> = v["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["severity"] == "error" && d["file"] == "capabilities/x_1_0_0.yaml")
            .map(|d| {
                (
                    d["code"].as_str().unwrap_or("").to_string(),
                    d["yaml_path"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        assert_eq!(
            errors,
            [("unknown-field".to_string(), at.to_string())],
            "`{to}`: one finding, at the misspelt key: {}",
            run.stdout
        );
    }
}

// ------------------------------------------------- 6: `check` outside any repository

#[test]
fn check_outside_any_repository_says_to_run_init() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [&["check"][..], &["check", "--format", "json"][..]] {
        let run = kvlower_in(dir.path(), args);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            format!("{}{}", run.stdout, run.stderr).contains("kvlower init"),
            "{args:?}: {}{}",
            run.stdout,
            run.stderr
        );
    }
    // Inside a repository with no descriptor yet, it names `kvlower new` instead.
    assert_eq!(kvlower_in(dir.path(), &["init"]).code, 0);
    let run = kvlower_in(dir.path(), &["check"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("kvlower new"), "{}", run.stderr);
}

// ------------------------------------------------- 7: the README's command table

/// Every long option of every command appears in its row of the README's command table.
#[test]
fn the_readme_command_table_names_every_option() {
    let readme = fs::read_to_string(repo_root().join("README.md")).expect("README");
    let table: Vec<&str> = readme
        .split("\n## Commands\n")
        .nth(1)
        .expect("## Commands")
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect();
    // Shared by every command and documented once below the table.
    let shared = ["color", "quiet", "help", "version"];
    let mut missing = Vec::new();
    let cli = kvlower_cli::command();
    for sub in cli.get_subcommands() {
        let name = sub.get_name();
        let rows: Vec<&&str> = table
            .iter()
            .filter(|r| r.contains(&format!("`kvlower {name}")))
            .collect();
        if rows.is_empty() {
            missing.push(format!("`kvlower {name}` has no row"));
            continue;
        }
        let subs: Vec<&clap::Command> = if sub.has_subcommands() {
            sub.get_subcommands().collect()
        } else {
            vec![sub]
        };
        for cmd in subs {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if shared.contains(&long) || arg.is_hide_set() {
                    continue;
                }
                let short = arg.get_short().map(|c| format!("[-{c}]"));
                let short_n = arg.get_short().map(|c| format!("-{c} "));
                if !rows.iter().any(|r| {
                    r.contains(&format!("--{long}"))
                        || short.as_ref().is_some_and(|s| r.contains(s.as_str()))
                        || short_n.as_ref().is_some_and(|s| r.contains(s.as_str()))
                }) {
                    missing.push(format!("`kvlower {name}`: --{long}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
