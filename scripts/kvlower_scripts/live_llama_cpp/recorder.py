"""Engine truth for the llama.cpp slot campaign, recorded apart from the adapter.

Judging code (PIN: pinned by content in the catalog's `judging_code`, recorded in the truth's
`recorder` entry, never in the judged `source_files`). It never imports the adapter and never
reads a trace: every engine call the campaign makes goes through `EngineTap.post`, which
forwards it unchanged and records what the *engine* answered: the HTTP status, the
`/metrics` counter deltas around the call (`llamacpp:prompt_tokens_cached_total`,
`llamacpp:prompt_tokens_total`), the token ids and log-probabilities it returned, each
slot-save file parsed offline (its token ids, its SHA-256), and its own probes: right after
every restore the slot is saved again to a probe file (the restored state, byte for byte), and
the first reuse after a restore is repeated on another slot with `cache_prompt: false` (the
no-cache reference). No timing field is recorded: two runs give identical documents.

The document and digest code (truth, campaign, source digest) is here too, for the same
reason: it decides what the evidence says.
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
import urllib.error
import urllib.request
from pathlib import Path

MAGIC = b"qsgg"  # llama_state_seq file magic 'ggsq', little endian
PROBE = "kvlower-recorder-probe.bin"
RECORDER_FILES = ["scripts/kvlower_scripts/live_llama_cpp/recorder.py"]


def sha256_bytes(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def source_digest(files: list[str], root: Path) -> str:
    """docs/conformance.md section 1.3."""
    lines = sorted(f"{f}\0{sha256_bytes((root / f).read_bytes())}\n" for f in files)
    return sha256_bytes("".join(lines).encode())


def parse_slot_file(data: bytes) -> dict | None:
    """The token ids of a slot-save file, read offline. Layout observed for this build
    (state-seq version 2): magic, version, two header words, a stream count, the token count
    n, n int32 token ids, then the KV bytes. None when it is not such a file."""
    if len(data) < 24 or data[:4] != MAGIC:
        return None
    version, n = struct.unpack_from("<I", data, 4)[0], struct.unpack_from("<I", data, 20)[0]
    if 24 + 4 * n > len(data):
        return None
    return {"version": version, "tokens": list(struct.unpack_from(f"<{n}i", data, 24))}


class EngineTap:
    def __init__(self, base: str, slot_dir: Path):
        self.base = base
        self.slot_dir = slot_dir
        self.run: dict | None = None
        self.prefix_ids: dict[str, list[int]] = {}
        self.reference_due = False

    # -- raw engine access (the recorder's own; nothing here is the adapter's) --
    def _http(self, path: str, body: dict | None) -> tuple[int, dict | str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        text = raw.decode()
        try:
            return status, json.loads(text)
        except json.JSONDecodeError:
            return status, text

    def _counters(self) -> tuple[int, int]:
        _, text = self._http("/metrics", None)
        got = {}
        for line in str(text).splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] in ("llamacpp:prompt_tokens_total",
                                                 "llamacpp:prompt_tokens_cached_total"):
                got[parts[0]] = int(float(parts[1]))
        return (got.get("llamacpp:prompt_tokens_cached_total", -1),
                got.get("llamacpp:prompt_tokens_total", -1))

    def tokenize(self, text: str) -> list[int]:
        _, body = self._http("/tokenize", {"content": text, "add_special": True})
        return body["tokens"] if isinstance(body, dict) else []

    def _file_facts(self, name: str) -> dict:
        path = self.slot_dir / name
        if not path.is_file():
            return {"exists": False, "bytes": 0, "sha256": None, "version": None, "tokens": 0}
        data = path.read_bytes()
        parsed = parse_slot_file(data)
        return {"exists": True, "bytes": len(data), "sha256": sha256_bytes(data),
                "version": parsed and parsed["version"],
                "tokens": len(parsed["tokens"]) if parsed else 0,
                "_ids": parsed["tokens"] if parsed else []}

    def _prefix_claim(self, ids: list[int]) -> str | None:
        best = None
        for claim, pre in self.prefix_ids.items():
            if ids[: len(pre)] == pre and (best is None or len(pre) > len(self.prefix_ids[best])):
                best = claim
        return best

    # -- the run --
    def begin_run(self, run: str, scenario: str, trace: str,
                  claims: list[tuple[str, str, int]], fault: str | None) -> None:
        self.prefix_ids = {c: self.tokenize(prefix) for c, prefix, _ in claims}
        self.prompts = {c: prefix for c, prefix, _ in claims}
        self.run = {"run": run, "scenario": scenario, "trace": trace,
                    "claims": [{"claim_id": c, "prefix_tokens": k,
                                "prefix_token_ids_sha256": sha256_bytes(
                                    json.dumps(self.prefix_ids[c]).encode())}
                               for c, _, k in claims],
                    "fault": fault, "calls": []}
        self.reference_due = False

    def end_run(self) -> dict:
        run, self.run = self.run, None
        return run

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        """The only way the campaign reaches the engine: forwards the call and records it."""
        calls = self.run["calls"]
        if path == "/completion":
            before = self._counters()
            status, resp = self._http(path, body)
            after = self._counters()
            prompt = body.get("prompt", "")
            claim = max((c for c, p in self.prompts.items() if prompt.startswith(p)),
                        key=lambda c: len(self.prompts[c]), default=None)
            call = {"call": "completion", "slot": body.get("id_slot"), "status": status,
                    "claim_id": claim, "cache_n": after[0] - before[0],
                    "prompt_n": after[1] - before[1], **self._output(resp), "reference": None}
            if self.reference_due and claim is not None and status == 200:
                ref = dict(body, id_slot=1, cache_prompt=False)
                _, ref_resp = self._http(path, ref)
                call["reference"] = self._output(ref_resp)
                self.reference_due = False
            calls.append(call)
            return status, resp if isinstance(resp, dict) else {}
        action = path.split("action=")[-1]
        slot = int(path.split("/slots/")[1].split("?")[0])
        if action == "restore":
            before = self._file_facts(body.get("filename", ""))
            status, resp = self._http(path, body)
            probe_status, _ = self._http(f"/slots/{slot}?action=save", {"filename": PROBE})
            after = self._file_facts(PROBE)
            (self.slot_dir / PROBE).unlink(missing_ok=True)
            calls.append({"call": "restore", "slot": slot, "status": status,
                          "file": body.get("filename"),
                          "file_at_restore": {k: v for k, v in before.items() if k != "_ids"},
                          "slot_after": {"probe_status": probe_status, "tokens": after["tokens"],
                                         "state_sha256": after["sha256"] or ""}})
            self.reference_due = True
        elif action == "save":
            status, resp = self._http(path, body)
            facts = self._file_facts(body.get("filename", ""))
            calls.append({"call": "save", "slot": slot, "status": status,
                          "file": body.get("filename"), "file_tokens": facts["tokens"],
                          "file_prefix_claim": self._prefix_claim(facts.get("_ids", [])),
                          "state_sha256": facts["sha256"]})
        else:
            status, resp = self._http(path, body)
            calls.append({"call": action, "slot": slot, "status": status})
        return status, resp if isinstance(resp, dict) else {}

    @staticmethod
    def _output(resp) -> dict:
        probs = resp.get("completion_probabilities", []) if isinstance(resp, dict) else []
        return {"token_ids": [p["id"] for p in probs], "logprobs": [p["logprob"] for p in probs]}


def outcome_of(run: dict) -> str:
    """What the engine showed, in a few words, for a reader (each control's outcome)."""
    calls = run["calls"]
    state_claim = {c["state_sha256"]: c["file_prefix_claim"] for c in calls if c["call"] == "save"}
    shown = []
    for i, c in enumerate(calls):
        if c["call"] != "restore":
            continue
        if c["status"] != 200:
            shown.append("restore refused, slot cleared")
            continue
        owner = state_claim.get(c["slot_after"]["state_sha256"])
        user = next((x["claim_id"] for x in calls[i + 1:] if x["call"] == "completion"), None)
        shown.append("restored the stored state" if owner == user and owner
                     else "restored another claim's state")
    if not shown:
        shown.append("no restore: the reuse recomputed")
    return "; ".join(shown)


def engine_outcome(run: dict) -> str:
    """What the engine showed, in the catalog's runtime-neutral outcome names
    (docs/conformance.md, "Control outcomes"); `check` derives the same from the calls and
    requires the two equal: failed_closed (a restore refused and no reuse served from the
    cache for its claim's whole prefix after it), else served_from_tier (a reuse served from
    the cache for its whole prefix), else recomputed."""
    prefix = {c["claim_id"]: c["prefix_tokens"] for c in run["claims"]}
    calls = run["calls"]

    def served(c: dict) -> bool:
        return (c["call"] == "completion" and c["status"] == 200
                and c.get("claim_id") in prefix and c["cache_n"] >= prefix[c["claim_id"]])

    for i, c in enumerate(calls):
        if c["call"] == "restore" and c["status"] != 200 and not any(map(served, calls[i + 1:])):
            return "failed_closed"
    return "served_from_tier" if any(map(served, calls)) else "recomputed"


def loaded_files(root: Path) -> list[str]:
    """Every repository file loaded as a module in this process (sys.modules), repository-
    relative: `check` requires each inside the source digest or the recorder's files, which
    catches a module loaded by a computed name that no import statement shows."""
    out = set()
    base = root.resolve()
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        if not isinstance(f, str) or not Path(f).is_absolute():
            continue
        try:
            out.add(Path(f).resolve().relative_to(base).as_posix())
        except (ValueError, OSError):
            continue
    return sorted(out, key=str.encode)


def write_documents(root: Path, rel: str, out: Path, runtime: list[dict], source_files: list[str],
                    engine: dict, runs: list[dict], scenarios: list[dict]) -> None:
    """Writes truth.json and gate-campaign.json into `out` as the repository's `rel` folder
    (sorted keys, no timing, no absolute path)."""
    digest = source_digest(source_files, root)
    for run in runs:
        run["outcome"] = outcome_of(run)
        run["engine_outcome"] = engine_outcome(run)
    truth = {"schema": "kvlower-engine-truth/1", "family": "slot", "runtime": runtime,
             "source_digest": digest, "engine": engine,
             "recorder": {"files": RECORDER_FILES, "sha256": source_digest(RECORDER_FILES, root)},
             "loaded_files": loaded_files(root),
             "runs": runs}
    text = json.dumps(truth, indent=1, sort_keys=True) + "\n"
    (out / "truth.json").write_text(text)
    campaign = {"kind": "kvlower-gate-campaign", "schema_version": 2, "runtime": runtime,
                "truth": {"path": f"{rel}/truth.json", "sha256": sha256_bytes(text.encode())},
                "source": {"files": sorted(source_files), "sha256": digest},
                "scenarios": scenarios}
    (out / "gate-campaign.json").write_text(json.dumps(campaign, indent=1) + "\n")
