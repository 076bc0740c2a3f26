//! Issue 42, "Also": `KVLOWER_OUTPUT_FORMAT` set to a value that is no format of any
//! command (`bogus`, a typo in CI configuration) was ignored silently; it is now a warning
//! on stderr (ruff refuses an invalid `RUFF_OUTPUT_FORMAT`), and the command runs as if the
//! variable were unset. A format another command has (`sarif` for `explain`) stays
//! ignored without a word, as documented (docs/output.md).

use std::ffi::OsString;

use kvlower_tests::repo_root;

fn run(args: &[&str], env: &str) -> (u8, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv: Vec<OsString> = std::iter::once("kvlower")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    let code =
        kvlower_cli::run_with_env_format(argv, Some(std::ffi::OsStr::new(env)), &mut out, &mut err)
            .as_u8();
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[test]
fn a_format_of_no_command_is_a_warning_and_one_of_another_command_is_ignored() {
    let descriptor = repo_root()
        .join("capabilities/vllm_cpu_0.32.0.yaml")
        .display()
        .to_string();
    let root = repo_root().display().to_string();
    let args = [
        "explain",
        descriptor.as_str(),
        "--root",
        root.as_str(),
        "-q",
    ];
    let (code, out, err) = run(&args, "bogus");
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(" @ "), "runs as if unset: {out}");
    assert!(
        err.contains("warning: KVLOWER_OUTPUT_FORMAT") && err.contains("bogus"),
        "{err}"
    );
    // A control character in the value is shown escaped.
    let (_, _, err) = run(&args, "js\u{1b}on");
    assert!(
        err.contains("\\u{1b}") && !err.contains('\u{1b}'),
        "{err:?}"
    );
    // `sarif` is a format of `check`: ignored by `explain` without a word.
    let (code, _, err) = run(&args, "sarif");
    assert_eq!(code, 0);
    assert!(!err.contains("KVLOWER_OUTPUT_FORMAT"), "{err}");
    // The control: a format the command has applies.
    let (_, out, _) = run(&args, "json");
    assert!(out.trim_start().starts_with('{'), "{out}");
}
