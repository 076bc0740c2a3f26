"""Loads the lowering matrix page in headless Chromium and checks it against the matrix JSON.

    python3 scripts/kvlower_scripts/report_page/browser_test.py [--page results/lowering-matrix.html]
        [--matrix results/lowering-matrix.json] [--chromium PATH] [--hostile KVLOWER_BIN]
        [--screenshot docs/lowering-matrix-page.png] [--screenshot-cell docs/lowering-matrix-cell.png]

Standard library only; the browser is the system's Chromium (Debian's `chromium`), driven over
the DevTools protocol on a pipe (cdp.py). Checks, from file://:
  1. the grid has one cell per (descriptor, mode) of the JSON, each with the best label and
     grade of that mode's rows (greatest label, a tie keeping the shallowest depth), and the
     page one row article per JSON row, under the right cell;
  2. clicking a verified cell opens its rows, and the row behind the cell shows the JSON's
     evidence chain: every satisfied obligation with its anchor (a repository file linked to a
     file that exists), re-run marks as the JSON says, every missing obligation marked missing;
  3. the arrow keys move between cells, Enter opens one, Escape returns to the grid;
  4. filtering by grade (and by label, and by runtime kind) leaves exactly the matching cells;
  5. sorting by a mode puts its strongest cells first;
  6. no console error, no uncaught exception, and no network request but the page itself.
With --hostile KVLOWER_BIN, also generates a page from hostile descriptors (tests/fixtures/report_page/)
in a scratch repository and checks, with every cell opened, that no descriptor text became an element,
an attribute or a script.
With --screenshot / --screenshot-cell PNG, also writes the grid, and the grid with a verified cell open
(docs/lowering-matrix-page.png, docs/lowering-matrix-cell.png).
Exit 0 all hold; 1 a check failed (each printed); 2 usage or no browser.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.common import REPO
from kvlower_scripts.report_page.cdp import Browser, CdpError, find_chromium

LABELS = ["unknown", "approximate", "rejected", "sound_with_adapter", "native_sound"]
MODES = ["best_effort", "soft_priority", "hard_protected", "demotable", "expiring", "offloadable", "routed_reuse"]


def expected_cells(rows: list[dict]) -> tuple[list[str], dict[tuple[str, str], dict]]:
    """Descriptors in order of appearance, and the best row of each (descriptor, mode)."""
    order: list[str] = []
    best: dict[tuple[str, str], dict] = {}
    for r in rows:
        if r["descriptor"] not in order:
            order.append(r["descriptor"])
        key = (r["descriptor"], r["mode"])
        if key not in best or LABELS.index(r["label"]) > LABELS.index(best[key]["label"]):
            best[key] = r
    return order, best


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.passed = 0

    def check(self, ok: bool, what: str) -> None:
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAIL: {what}", file=sys.stderr)


def click(b: Browser, selector: str) -> None:
    """A real mouse click at the middle of the element (scrolled into view first)."""
    rect = b.evaluate(
        f"(function(){{var e=document.querySelector({json.dumps(selector)});e.scrollIntoView({{block:'center'}});"
        "var r=e.getBoundingClientRect();return [r.left+r.width/2, r.top+r.height/2];}())"
    )
    x, y = rect
    for kind in ("mousePressed", "mouseReleased"):
        b.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
               session=True)


KEYS = {
    "ArrowRight": 39, "ArrowLeft": 37, "ArrowDown": 40, "ArrowUp": 38, "Enter": 13, "Escape": 27,
}


def press(b: Browser, key: str) -> None:
    code = KEYS[key]
    down = {"type": "rawKeyDown", "key": key, "code": key, "windowsVirtualKeyCode": code}
    if key == "Enter":
        down = {"type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "text": "\r"}
    b.call("Input.dispatchKeyEvent", down, session=True)
    b.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code},
           session=True)


def select(b: Browser, select_id: str, value: str) -> None:
    b.evaluate(
        f"(function(){{var s=document.getElementById({json.dumps(select_id)});s.value={json.dumps(value)};"
        "s.dispatchEvent(new Event('change',{bubbles:true}));}())"
    )


def visible_matching(b: Browser) -> list[str]:
    return b.evaluate(
        "Array.from(document.querySelectorAll('#grid tbody tr')).filter(function(tr){return !tr.hidden;})"
        ".flatMap(function(tr){return Array.from(tr.querySelectorAll('td.cell:not(.dim) a'))"
        ".map(function(a){return a.id;});})"
    )


def take_screenshots(b: Browser, grid: Path | None, cell: Path | None, order: list[str],
                     best: dict[tuple[str, str], dict]) -> None:
    """The grid alone, and the grid with one verified cell open (preferring one backed by a gate
    campaign, its drawer scrolled to the cell's row), as docs/ and the README show them."""
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": 1700, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session=True)
    b.evaluate("location.hash=''; document.activeElement.blur(); window.scrollTo(0,0)")
    b.pump(0.3)
    if grid is not None:
        grid.write_bytes(base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]))
        print(f"wrote {grid}")
    verified = [k for k, r in best.items() if r["grade"] == "verified"]
    campaign = [k for k in verified if any(e["anchor"].endswith("gate-campaign.json")
                                           for e in best[k]["evidence"].values())]
    if cell is not None and (campaign or verified):
        desc, mode = (campaign or verified)[0]
        sec = f"d-{order.index(desc)}-{mode}"
        b.evaluate(f"location.hash='{sec}'; document.activeElement.blur(); window.scrollTo(0,0)")
        b.pump(0.3)
        b.evaluate(f"(function(){{var s=document.getElementById('{sec}');"
                   "var a=s.querySelector('article.row[data-best=\"true\"]');"
                   "var c=a.querySelector('details.campaign'); if(c){c.open=true;}"
                   "a.scrollIntoView({block:'start'}); window.scrollTo(0,0);}())")
        b.pump(0.3)
        cell.write_bytes(base64.b64decode(b.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]))
        print(f"wrote {cell}")


def run(page: Path, matrix: Path, chromium: str, shots: tuple[Path | None, Path | None]) -> Checks:
    c = Checks()
    rows = json.loads(matrix.read_text())["rows"]
    order, best = expected_cells(rows)
    url = page.resolve().as_uri()
    with Browser(chromium) as b:
        for domain in ("Page", "Runtime", "Log", "Network"):
            b.call(f"{domain}.enable", session=True)
        b.call("Page.navigate", {"url": url}, session=True)
        b.wait_event("Page.loadEventFired")
        b.pump(0.5)

        # 1. Cells and rows against the JSON.
        cells = b.evaluate(
            "Array.from(document.querySelectorAll('#grid td.cell')).map(function(td){"
            "var tr=td.parentNode;return [Number(tr.getAttribute('data-index')),td.getAttribute('data-mode'),"
            "td.getAttribute('data-label'),td.getAttribute('data-grade')];})"
        )
        c.check(len(cells) == len(best), f"{len(cells)} cells in the grid, {len(best)} (descriptor, mode) in the JSON")
        for di, mode, label, grade in cells:
            want = best.get((order[di], mode)) if di < len(order) else None
            c.check(want is not None and want["label"] == label and (want["grade"] or "none") == grade,
                    f"cell {di} {mode}: page {label}/{grade}, JSON {want and (want['label'], want['grade'])}")
        n_rows = b.evaluate("document.querySelectorAll('section.detail article.row').length")
        c.check(n_rows == len(rows), f"{n_rows} row articles on the page, {len(rows)} rows in the JSON")
        per_cell = b.evaluate(
            "Array.from(document.querySelectorAll('section.detail')).map(function(s){"
            "return [Number(s.getAttribute('data-index')),s.getAttribute('data-mode'),"
            "Array.from(s.querySelectorAll('article.row')).map(function(a){"
            "return [a.getAttribute('data-depth'),a.getAttribute('data-label'),a.getAttribute('data-grade')];})];})"
        )
        for di, mode, arts in per_cell:
            want = [(r["depth"], r["label"], r["grade"] or "none") for r in rows
                    if r["descriptor"] == order[di] and r["mode"] == mode]
            c.check([tuple(a) for a in arts] == want, f"rows of cell {di} {mode}: page {arts}, JSON {want}")
        c.check(b.evaluate("document.querySelectorAll('section.detail:target').length") == 0,
                "no cell is open before one is chosen")

        # 2. Open a verified cell with a click; its evidence chain is the JSON's.
        verified = [(k, r) for k, r in best.items() if r["grade"] == "verified"]
        c.check(bool(verified), "the JSON has a verified cell to open")
        if verified:
            (desc, mode), row = verified[0]
            di = order.index(desc)
            click(b, f"#cell-{di}-{mode}")
            b.pump(0.3)
            c.check(b.evaluate("location.hash") == f"#d-{di}-{mode}", "clicking the cell opens its rows")
            shown = b.evaluate(f"getComputedStyle(document.getElementById('d-{di}-{mode}')).display")
            c.check(shown != "none", f"the opened cell's rows are shown (display {shown})")
            c.check(b.evaluate(f"document.getElementById('cell-{di}-{mode}').parentNode.classList.contains('current')"),
                    "the open cell is marked in the grid")
            sec = f"document.getElementById('d-{di}-{mode}')"
            art = f"{sec}.querySelector('article.row[data-best=\"true\"]')"
            c.check(b.evaluate(f"{art}.getAttribute('data-depth')") == row["depth"],
                    "the cell's row is the JSON's best row")
            c.check(row["non_claim"] in b.evaluate(f"{sec}.querySelector('.nonclaim').textContent"),
                    "the non-claim is shown")
            c.check(row["reviewed"] in b.evaluate(f"{sec}.querySelector('.meta').textContent"),
                    "the review date is shown")
            c.check(row["reason"] in b.evaluate(f"{art}.querySelector('.why').textContent"), "the reason is shown")
            for ob, ev in row["evidence"].items():
                li = f"{art}.querySelector('li.ob.ok[data-obligation=\"{ob}\"]')"
                got = b.evaluate(
                    f"(function(){{var li={li};if(!li)return null;var a=li.querySelector('.ev .anchor');"
                    "return [a.textContent, a.href||null, li.querySelector('.ev .item').textContent,"
                    "!!li.querySelector(':scope > .ev > .rerun')];}())"
                )
                c.check(got is not None, f"{ob}: shown as satisfied")
                if got is None:
                    continue
                text, href, item, rerun = got
                c.check(text == ev["anchor"] and item == ev["path"] and rerun == ev["rerun"],
                        f"{ob}: page {got}, JSON {ev}")
                if href and href.startswith("file:"):
                    target = Path(unquote(urlparse(href).path))
                    c.check(target.is_file(), f"{ob}: the anchor links to {target}, which exists")
                    c.check(target.resolve() == (REPO / ev["anchor"]).resolve() or not ev["rerun"],
                            f"{ob}: the link names the anchored file {ev['anchor']}")
            for ob in row["missing"]:
                c.check(b.evaluate(f"!!{art}.querySelector('li.ob.no[data-obligation=\"{ob}\"]')"),
                        f"{ob}: shown as missing")
            n_ok = b.evaluate(f"{art}.querySelectorAll('li.ob.ok:not(.atom)').length")
            c.check(n_ok == len(row["satisfied"]),
                    f"{n_ok} satisfied obligations shown, {len(row['satisfied'])} in JSON")

        # 3. Keyboard: arrows between cells, Enter opens, Escape returns.
        b.evaluate("document.getElementById('cell-0-best_effort').focus()")
        press(b, "ArrowRight")
        c.check(b.evaluate("document.activeElement.id") == "cell-0-soft_priority", "ArrowRight moves to the next mode")
        press(b, "ArrowDown")
        c.check(b.evaluate("document.activeElement.id") == "cell-1-soft_priority",
                "ArrowDown moves to the next runtime")
        press(b, "Enter")
        b.pump(0.3)
        c.check(b.evaluate("location.hash") == "#d-1-soft_priority", "Enter opens the focused cell")
        press(b, "Escape")
        b.pump(0.3)
        c.check(b.evaluate("location.hash") == "#cell-1-soft_priority"
                and b.evaluate("document.activeElement.id") == "cell-1-soft_priority",
                "Escape returns to the cell in the grid")

        # 4. Filters.
        for select_id, value, field in (("f-grade", "verified", "grade"), ("f-grade", "cited", "grade"),
                                        ("f-label", "rejected", "label")):
            select(b, select_id, value)
            want = sorted(f"cell-{order.index(d)}-{m}" for (d, m), r in best.items() if r[field] == value)
            got = sorted(visible_matching(b))
            c.check(got == want, f"filter {field}={value}: {len(got)} cells shown, {len(want)} expected")
            select(b, select_id, "")
        select(b, "f-kind", "vllm")
        kinds = b.evaluate(
            "Array.from(document.querySelectorAll('#grid tbody tr')).filter(function(tr){return !tr.hidden;})"
            ".map(function(tr){return tr.getAttribute('data-kinds');})"
        )
        c.check(bool(kinds) and all("vllm" in k.split() for k in kinds), f"filter kind=vllm shows only vLLM: {kinds}")
        select(b, "f-kind", "")
        c.check(len(visible_matching(b)) == len(best), "clearing the filters shows every cell again")

        # 5. Sorting by a mode puts its strongest cells first.
        click(b, "#grid thead button[data-sort='hard_protected']")
        ranks = b.evaluate(
            "Array.from(document.querySelectorAll('#grid tbody tr')).map(function(tr){"
            "return Number(tr.querySelector('td.cell[data-mode=\"hard_protected\"]').getAttribute('data-rank'));})"
        )
        c.check(ranks == sorted(ranks, reverse=True), f"sorted by hard_protected, strongest first: {ranks}")
        click(b, "#grid thead button[data-sort='runtime']")

        if shots != (None, None):
            take_screenshots(b, shots[0], shots[1], order, best)

        # 6. Nothing went wrong on the way, and nothing left the page.
        b.pump(0.3)
        events_clean(c, b, url)
        requests = [e for e in b.events if e.get("method") == "Network.requestWillBeSent"]
        c.check(len(requests) >= 1, "the page load itself was seen by the network log")
    return c


HOSTILE = REPO / "tests" / "fixtures" / "report_page" / "hostile.yaml"
NOTE_ATTACK = '</code><script>alert(2)</script><a href="javascript:alert(3)">x</a>'


def events_clean(c: Checks, b: Browser, url: str) -> None:
    """No console error, exception, dialog, or request besides the page, in everything seen so far."""
    for e in b.events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            c.check(False, f"uncaught exception: {params.get('exceptionDetails')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            c.check(False, f"console error: {params.get('args')}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            c.check(False, f"browser error: {params['entry'].get('text')}")
        elif method == "Network.requestWillBeSent":
            req = params.get("request", {}).get("url", "")
            c.check(req.split("#")[0] == url, f"a network request besides the page: {req}")
        elif method == "Page.javascriptDialogOpening":
            c.check(False, f"a dialog opened: {params.get('message')}")


def run_hostile(kvlower: str, chromium: str) -> Checks:
    """The escaping attack in the browser: a page generated from hostile descriptors (markup,
    quotes, `javascript:` in every free-text field, and in the notes of evidence that satisfies
    positive rows) runs only its own script, holds no element a descriptor wrote, and every
    cell's rows open without an error or a request."""
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="kvlower-hostile-") as tmp:
        root = Path(tmp)
        (root / "modes").mkdir()
        (root / "capabilities").mkdir()
        shutil.copy(REPO / "modes" / "modes.yaml", root / "modes" / "modes.yaml")
        shutil.copy(HOSTILE, root / "capabilities" / "evil.yaml")
        patched = (REPO / "capabilities" / "vllm_patched.yaml").read_text().replace("Reported by the paper",
                                                                                   NOTE_ATTACK)
        (root / "capabilities" / "patched.yaml").write_text(patched)
        (root / "kvlower.toml").write_text("[results]\nhtml_report = true\n")
        made = subprocess.run([kvlower, "matrix", "--root", str(root)], capture_output=True, text=True)
        c.check(made.returncode == 0, f"kvlower matrix on the hostile repository: {made.stderr}")
        page = root / "results" / "lowering-matrix.html"
        if not page.is_file():
            return c
        url = page.resolve().as_uri()
        with Browser(chromium) as b:
            for domain in ("Page", "Runtime", "Log", "Network"):
                b.call(f"{domain}.enable", session=True)
            b.call("Page.navigate", {"url": url}, session=True)
            b.wait_event("Page.loadEventFired")
            ids = b.evaluate("Array.from(document.querySelectorAll('section.detail')).map(function(s){return s.id;})")
            for sid in ids:
                b.evaluate(f"location.hash={json.dumps(sid)}")
            b.pump(0.5)
            c.check(b.evaluate("typeof window.__pwned") == "undefined", "no descriptor script ran")
            c.check(b.evaluate("document.scripts.length") == 1, "the page's own script is its only one")
            c.check(b.evaluate("document.querySelectorAll('img,svg,iframe,object,embed,style').length") == 1,
                    "no element from a descriptor (the one <style> is the page's)")
            c.check(b.evaluate("Array.from(document.querySelectorAll('[href]')).filter(function(a){"
                               "return /^javascript:/i.test(a.getAttribute('href'));}).length") == 0,
                    "no javascript: link")
            handlers = b.evaluate("Array.from(document.querySelectorAll('*')).filter(function(e){"
                                  "return Array.from(e.attributes).some(function(a){return /^on/i.test(a.name);});})"
                                  ".length")
            c.check(handlers == 0, f"{handlers} elements with an event handler attribute")
            name = b.evaluate("document.querySelector('#grid tbody tr:first-child .name').textContent")
            c.check(name.startswith("Evil <script>"), f"the hostile name is shown as text: {name!r}")
            notes = b.evaluate("Array.from(document.querySelectorAll('.anote'))"
                               ".map(function(n){return n.textContent;})")
            c.check(any(NOTE_ATTACK in n for n in notes), "the hostile anchor note is shown as text")
            events_clean(c, b, url)
    return c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--page", type=Path, default=REPO / "results" / "lowering-matrix.html")
    ap.add_argument("--matrix", type=Path, default=REPO / "results" / "lowering-matrix.json")
    ap.add_argument("--chromium", default=None, help="the browser (default: $CHROMIUM, else chromium on PATH)")
    ap.add_argument("--screenshot", type=Path, default=None, help="also write a PNG of the page's grid")
    ap.add_argument("--screenshot-cell", type=Path, default=None, help="also write a PNG with a verified cell open")
    ap.add_argument("--hostile", metavar="KVLOWER_BIN", default=None,
                    help="also generate a page from hostile descriptors with this kvlower and check it is inert")
    args = ap.parse_args(argv)
    try:
        chromium = find_chromium(args.chromium)
    except CdpError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for p in (args.page, args.matrix):
        if not p.is_file():
            print(f"error: {p} does not exist (run `kvlower matrix`)", file=sys.stderr)
            return 2
    failed = 0
    try:
        c = run(args.page, args.matrix, chromium, (args.screenshot, args.screenshot_cell))
        print(f"{c.passed} checks passed, {len(c.failures)} failed ({args.page})")
        failed += len(c.failures)
        if args.hostile:
            h = run_hostile(args.hostile, chromium)
            print(f"{h.passed} checks passed, {len(h.failures)} failed (a page from hostile descriptors)")
            failed += len(h.failures)
    except CdpError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
