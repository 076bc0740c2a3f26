//! A request- or transfer-scoped hold offered as `expiring` or `offloadable` is a
//! forbidden lowering (issue 46): vLLM's NixlConnector keeps a finished prefill's blocks
//! under a lease that lapses by the clock, and a decode read after the lapse is only
//! logged by the prefill side (`nixl/pull_worker.py` in the 0.33.0 wheel), so the
//! request is served on released blocks with no outcome at all. Offered as a claim that
//! expires, or as restorable offload, that lease misrepresents the contract; the row is
//! `rejected` with the catalog's reason, never `approximate` or `unknown`.

use kvlower_core::descriptor::{Descriptor, Proposal};
use kvlower_core::judgment::{LabelReason, Offered};
use kvlower_core::{Depth, Label, Mode, Signal, baseline, judge};
use kvlower_tests::AssumeRepoFilesPresent;

fn committed(file: &str) -> Descriptor {
    kvlower_tests::committed_repository()
        .descriptors
        .iter()
        .find(|d| d.path == format!("capabilities/{file}"))
        .unwrap_or_else(|| panic!("{file} is committed"))
        .descriptor
        .clone()
}

/// The plain vLLM 0.33.0 descriptor with one more proposal: the hold offered as `mode`.
fn offered_as(mode: Mode) -> Descriptor {
    let mut d = committed("vllm_0.33.0.yaml");
    d.proposals.retain(|p| p.mode != mode);
    d.proposals.push(Proposal {
        primitive: Signal::RequestScopedPin,
        mode,
        depth: Depth::None,
        note: "a transfer-window lease offered as this mode".into(),
    });
    d
}

#[test]
fn a_request_scoped_hold_offered_as_expiring_or_offloadable_is_rejected() {
    let catalog = &kvlower_tests::committed_repository().catalog;
    for mode in [Mode::Expiring, Mode::Offloadable] {
        let d = offered_as(mode);
        for depth in [Depth::None, Depth::ClaimRegistry] {
            let j = judge(catalog, &d, mode, depth, &AssumeRepoFilesPresent);
            assert_eq!(
                j.label,
                Label::Rejected,
                "{mode:?} @ {depth:?}: {}",
                j.reason
            );
            assert_eq!(
                j.reason,
                LabelReason::ForbiddenLowering {
                    offered: Offered::Primitive {
                        primitive: Signal::RequestScopedPin
                    }
                },
                "{mode:?} @ {depth:?}"
            );
        }
        let why = &catalog
            .forbidden(Signal::RequestScopedPin, mode)
            .unwrap_or_else(|| panic!("request_scoped_pin -> {mode:?} is forbidden"))
            .why;
        assert!(why.contains("not an accepted"), "{why}");
    }
}

/// The floor holds the rule, not only the committed file: a catalog that drops it is
/// weakened.
#[test]
fn the_baseline_forbids_the_hold_as_expiring_and_offloadable() {
    let doc = baseline::doc();
    for mode in [Mode::Expiring, Mode::Offloadable] {
        assert!(
            doc.forbidden_lowerings
                .iter()
                .any(|f| f.primitive == Signal::RequestScopedPin && f.mode == mode),
            "{mode:?}"
        );
    }
}

/// The NixlConnector descriptor offers its lease as both modes, and both rows are
/// `rejected` in the committed matrix for that reason.
#[test]
fn the_nixl_lease_rows_are_rejected() {
    let catalog = &kvlower_tests::committed_repository().catalog;
    let d = committed("vllm_nixlconnector_0_33_0.yaml");
    for mode in [Mode::Expiring, Mode::Offloadable] {
        let j = judge(catalog, &d, mode, Depth::None, &AssumeRepoFilesPresent);
        assert_eq!(j.label, Label::Rejected, "{mode:?}: {}", j.reason);
    }
}
