//! Every end-to-end test of kvlower, one module per file, in one test binary: the
//! whole kvlower stack is linked once, not once per file. Run one file's tests with
//! `cargo test -p kvlower-tests --test integration <module>::`.

mod architecture;
mod audit_independent;
mod audit_mutation;
mod audit_provenance;
mod bad_lowering;
mod borrowed_evidence;
mod campaign_truth;
mod capture_hostile;
mod catalog_floor;
mod cli_audit;
mod cli_check;
mod cli_output;
mod config_root;
mod corpus;
mod docs_examples;
mod evidence_chain;
mod exit_codes;
mod files;
mod first_steps;
mod gate_cli;
mod gate_formats;
mod gate_inputs;
mod join;
mod join_capture;
mod join_fuzz;
mod join_inputs;
mod join_runtime_fixtures;
mod live_connector_evidence;
mod live_residency_evidence;
mod live_vllm_evidence;
mod lowering;
mod output_contract;
mod readme_table;
mod report_page;
mod residency_history;
mod route_gate;
mod route_scale;
mod schema;
mod self_contained;
mod ux_cli;
mod verified_evidence;
mod verified_join;
mod verified_route;
mod yaml_structure;
