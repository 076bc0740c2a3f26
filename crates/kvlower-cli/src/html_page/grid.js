// The lowering matrix page's one script, part 1 of 2 (grid.js, then panel.js, in one
// function scope): search, filters, sorting, runtime groups, arrow keys and the URL's
// state (#q=…&kind=…&mode=…&label=…&grade=…&cell=STEM/MODE). It reads the page's own
// markup (textContent and data-* attributes, never innerHTML) and, for a cell's panel,
// the JSON data block (panel.js).
(function () {
  "use strict";
  var grid = document.getElementById("grid");
  var panel = document.getElementById("panel");
  if (!grid || !panel) { return; }
  var tbody = grid.tBodies[0];
  var form = document.getElementById("filters");
  var inputs = {
    q: document.getElementById("f-q"),
    kind: document.getElementById("f-kind"),
    mode: document.getElementById("f-mode"),
    label: document.getElementById("f-label"),
    grade: document.getElementById("f-grade")
  };
  var status = document.getElementById("f-status");
  var KEYS = ["q", "kind", "mode", "label", "grade", "sort", "cell"];
  var all = Array.prototype.slice.call(tbody.rows);
  var lines = all.filter(function (tr) { return tr.classList.contains("ln"); });
  var byStem = {};
  lines.forEach(function (tr) {
    var path = tr.querySelector(".path").textContent;
    byStem[path] = tr;
    // What search reads: name, version, file and kinds, in lower case.
    tr.setAttribute("data-q", (tr.cells[0].textContent + " " + tr.getAttribute("data-k")).toLowerCase());
  });
  var state = {};
  // On a phone the legend starts folded (the grid is the first screen); the header's
  // two-letter mode names are spelled out in it.
  var legend = document.querySelector("details.legend");
  if (legend && window.matchMedia && window.matchMedia("(max-width: 700px)").matches) { legend.open = false; }

  // The URL's state: a fixed key order, each value percent-encoded ('/' kept).
  function parseHash() {
    var s = {};
    window.location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq < 1) { return; }
      var k = part.slice(0, eq);
      if (KEYS.indexOf(k) < 0) { return; }
      try { s[k] = decodeURIComponent(part.slice(eq + 1).replace(/\+/g, " ")); } catch (e) { /* a malformed part is ignored */ }
    });
    return s;
  }
  function hashOf(s) {
    return KEYS.filter(function (k) { return s[k]; }).map(function (k) {
      return k + "=" + encodeURIComponent(s[k]).replace(/%2F/g, "/");
    }).join("&");
  }
  function setHash(push) {
    var h = hashOf(state);
    if (push) {
      window.location.hash = h;
    } else if (window.history && window.history.replaceState) {
      window.history.replaceState(null, "", h ? "#" + h : window.location.pathname + window.location.search);
    }
  }

  function apply() {
    var q = (state.q || "").trim().toLowerCase(), k = state.kind || "", m = state.mode || "";
    var l = state.label || "", g = state.grade || "";
    var cellFilter = !!(m || l || g);
    var shown = 0, matching = 0, total = 0;
    var groupShown = {};
    lines.forEach(function (tr) {
      var kindOk = !k || tr.getAttribute("data-k").split(" ").indexOf(k) >= 0;
      var qOk = !q || q.split(/\s+/).every(function (w) { return tr.getAttribute("data-q").indexOf(w) >= 0; });
      var any = false;
      Array.prototype.forEach.call(tr.cells, function (td) {
        if (!td.classList.contains("x")) { return; }
        total += 1;
        var ok = (!m || td.getAttribute("data-m") === m) && (!l || td.getAttribute("data-l") === l) &&
                 (!g || td.getAttribute("data-gr") === g);
        td.classList.toggle("dim", cellFilter && !ok);
        if (ok && kindOk && qOk) { any = true; matching += 1; }
      });
      var visible = kindOk && qOk && any;
      tr.classList.toggle("out", !visible);
      if (visible) { shown += 1; groupShown[tr.getAttribute("data-g")] = true; }
    });
    all.forEach(function (tr) {
      if (tr.classList.contains("grp")) { tr.classList.toggle("out", !groupShown[tr.getAttribute("data-g")]); }
    });
    var filtered = !!(q || k || cellFilter);
    status.value = filtered
      ? shown + " of " + lines.length + " runtimes, " + matching + " matching cells"
      : lines.length + " runtimes, " + total + " cells";
    status.setAttribute("data-matching", String(matching));
    status.setAttribute("data-shown", String(shown));
  }

  function fromInputs() {
    Object.keys(inputs).forEach(function (k) { state[k] = inputs[k].value; });
    apply();
    setHash(false);
  }
  function toInputs() {
    Object.keys(inputs).forEach(function (k) {
      var v = state[k] || "";
      if (inputs[k].tagName === "SELECT" && !inputs[k].querySelector("option[value=\"" + CSS.escape(v) + "\"]")) { v = ""; }
      inputs[k].value = v;
    });
  }
  Object.keys(inputs).forEach(function (k) {
    inputs[k].addEventListener(k === "q" ? "input" : "change", fromInputs);
  });
  form.addEventListener("reset", function () { window.setTimeout(fromInputs, 0); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });

  // Sorting (state.sort): "" by runtime (the groups, in file order), "-runtime" the same
  // reversed, MODE by that mode's cells, strongest first, "-MODE" weakest first; sorted
  // by a mode, the lines are one flat list and the groups are set aside.
  function sortKey() { return (state.sort || "runtime").replace(/^-/, ""); }
  function order() {
    var key = sortKey(), reversed = (state.sort || "").charAt(0) === "-";
    if (!grid.tHead.querySelector("button[data-sort=\"" + CSS.escape(key) + "\"]")) {
      key = "runtime"; reversed = false; state.sort = "";
    }
    var rows;
    if (key === "runtime") {
      rows = all.slice();
      if (reversed) {
        rows = [];
        all.filter(function (tr) { return tr.classList.contains("grp"); }).reverse().forEach(function (gr) {
          rows.push(gr);
          lines.filter(function (tr) { return tr.getAttribute("data-g") === gr.getAttribute("data-g"); })
            .reverse().forEach(function (tr) { rows.push(tr); });
        });
      }
      tbody.classList.remove("flat");
    } else {
      var rank = function (tr) {
        var td = tr.querySelector("td.x[data-m=\"" + key + "\"]");
        return td ? Number(td.getAttribute("data-r")) : -1;
      };
      rows = lines.slice().sort(function (a, b) {
        var c = rank(b) - rank(a);
        if (c === 0) { return Number(a.getAttribute("data-i")) - Number(b.getAttribute("data-i")); }
        return reversed ? -c : c;
      });
      tbody.classList.add("flat");
    }
    rows.forEach(function (tr) { tbody.appendChild(tr); });
    Array.prototype.forEach.call(grid.tHead.rows[0].cells, function (th) {
      var b = th.querySelector("button[data-sort]");
      var on = b && b.getAttribute("data-sort") === key;
      var up = key === "runtime" ? !reversed : reversed;
      th.setAttribute("aria-sort", on ? (up ? "ascending" : "descending") : "none");
    });
  }
  Array.prototype.forEach.call(grid.tHead.querySelectorAll("button[data-sort]"), function (b) {
    b.addEventListener("click", function () {
      var key = b.getAttribute("data-sort");
      var flip = sortKey() === key && (state.sort || "").charAt(0) !== "-";
      state.sort = flip ? "-" + key : (key === "runtime" ? "" : key);
      order();
      setHash(false);
    });
  });

  // A runtime's versions fold under it.
  tbody.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button.fold") : null;
    if (!b) { return; }
    var open = b.getAttribute("aria-expanded") !== "true";
    b.setAttribute("aria-expanded", String(open));
    lines.forEach(function (tr) {
      if (tr.getAttribute("data-g") === b.getAttribute("data-g")) { tr.classList.toggle("folded", !open); }
    });
  });

  function visibleLines() {
    return Array.prototype.filter.call(tbody.rows, function (tr) {
      return tr.classList.contains("ln") && !tr.classList.contains("out") && !tr.classList.contains("folded");
    });
  }
  // Arrow keys move between the visible cells; Home/End along a line.
  grid.addEventListener("keydown", function (e) {
    var a = e.target;
    if (!a || a.tagName !== "A" || !a.parentNode.classList.contains("x")) { return; }
    var td = a.parentNode, tr = td.parentNode;
    var cells = Array.prototype.filter.call(tr.cells, function (c) { return c.classList.contains("x"); });
    var col = cells.indexOf(td);
    var visible = visibleLines();
    var row = visible.indexOf(tr);
    var target = null;
    if (e.key === "ArrowRight") { target = cells[col + 1]; }
    else if (e.key === "ArrowLeft") { target = cells[col - 1]; }
    else if (e.key === "Home") { target = cells[0]; }
    else if (e.key === "End") { target = cells[cells.length - 1]; }
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      var next = visible[row + (e.key === "ArrowDown" ? 1 : -1)];
      if (next) { target = next.querySelectorAll("td.x")[col]; }
    } else { return; }
    e.preventDefault();
    var link = target && target.querySelector("a");
    if (link) { link.focus(); }
  });

  // A cell link opens its panel and keeps the search and filters in the URL.
  grid.addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("td.x a") : null;
    if (!a) { return; }
    e.preventDefault();
    state.cell = decodeURIComponent(a.getAttribute("href").replace(/^#cell=/, ""));
    setHash(true);
  });
  function cellLink(cell) {
    var cut = (cell || "").lastIndexOf("/");
    var tr = cut > 0 ? byStem[cell.slice(0, cut)] : null;
    return tr ? tr.querySelector("td.x[data-m=\"" + CSS.escape(cell.slice(cut + 1)) + "\"] a") : null;
  }
  function closePanel(focus) {
    var cell = state.cell;
    state.cell = "";
    setHash(true);
    var link = cellLink(cell);
    if (focus && link) { link.focus(); }
  }
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && state.cell) { e.preventDefault(); closePanel(true); }
  });

  function onHash() {
    var s = parseHash();
    var sortChanged = (s.sort || "") !== (state.sort || "");
    state = s;
    toInputs();
    if (sortChanged) { order(); }
    apply();
    Array.prototype.forEach.call(grid.querySelectorAll("td.x.current"), function (td) { td.classList.remove("current"); });
    var link = cellLink(state.cell);
    if (link) {
      link.parentNode.classList.add("current");
      var tr = link.parentNode.parentNode;
      tr.classList.remove("folded");
      var cut = state.cell.lastIndexOf("/");
      showPanel(tr, state.cell.slice(cut + 1), function () { closePanel(true); });
      panel.focus({ preventScroll: true });
    } else {
      hidePanel();
    }
  }
  window.addEventListener("hashchange", onHash);
