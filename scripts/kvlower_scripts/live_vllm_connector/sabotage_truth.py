"""SABOTAGE (e), never used for committed evidence: a truth recorder the patch steers. It takes
the claim's blocks from the patch's own bookkeeping (claim_residency's Residency: the blocks it
believes it pinned, whether it believes the copy was lost), which is what the patch's trace
says, instead of the BlockPool's reference counts. Selected by
KVLOWER_TRUTH_RECORDER=kvlower_scripts.live_vllm_connector.sabotage_truth (SABOTAGE.md).

It exists to show that such a recorder is refused: it imports the patch (the verifiers read
engine_truth.py and require it among the source files), and the source files it is digested
with are not the ones the descriptor names.
"""

from __future__ import annotations

from kvlower_scripts.live_vllm_connector import claim_residency
from kvlower_scripts.live_vllm_connector.engine_truth import (  # noqa: F401  (the recorder's interface)
    ConnectorTruth,
    ResidencyTruth,
    match_request,
    residency_run_record,
    truth_document,
    write_truth,
)
from kvlower_scripts.live_vllm_connector.engine_truth import ResidencyTruth as _Honest

TRUTH_RECORDER = "kvlower-sabotage-truth-from-the-patch"
assert claim_residency.PATCH


class ResidencyTruth(_Honest):  # noqa: F811
    def sample(self) -> dict:
        honest = super().sample()
        claims = [r for r in getattr(self.scheduler, "_res_claims", [])
                  if r.request.request_id == self.claim_rid and r.materialized]
        if not claims:
            return honest
        (res,) = claims
        fp = self.claim_footprint
        # what the patch says: pinned blocks are pinned, a copy it never saw lost is whole
        cached = fp if not res.lost else honest["device_cached"]
        pinned = len(res.blocks)
        return {"device_cached": cached, "pinned": pinned, "evictable": max(cached - pinned, 0) if pinned else
                honest["evictable"], "host_tier": honest["host_tier"]}
