// The lowering matrix page: filters, sorting and keyboard navigation of the grid.
// Reads only the page's own markup (textContent and data-* attributes, never
// innerHTML); the page works without it (each cell is a link to its rows).
(function () {
  "use strict";
  var grid = document.getElementById("grid");
  if (!grid) { return; }
  var tbody = grid.tBodies[0];
  var kind = document.getElementById("f-kind");
  var label = document.getElementById("f-label");
  var grade = document.getElementById("f-grade");
  var status = document.getElementById("f-status");
  var form = document.getElementById("filters");

  function lines() { return Array.prototype.slice.call(tbody.rows); }

  function apply() {
    var k = kind.value, l = label.value, g = grade.value;
    var shown = 0, matching = 0, total = 0;
    lines().forEach(function (tr) {
      var kinds = (tr.getAttribute("data-kinds") || "").split(" ");
      var kindOk = !k || kinds.indexOf(k) >= 0;
      var any = false;
      Array.prototype.forEach.call(tr.querySelectorAll("td.cell"), function (td) {
        total += 1;
        var ok = (!l || td.getAttribute("data-label") === l) &&
                 (!g || td.getAttribute("data-grade") === g);
        td.classList.toggle("dim", !ok);
        if (ok && kindOk) { any = true; matching += 1; }
      });
      var visible = kindOk && any;
      tr.hidden = !visible;
      if (visible) { shown += 1; }
    });
    status.value = (k || l || g)
      ? shown + " of " + tbody.rows.length + " runtimes, " + matching + " matching cells"
      : tbody.rows.length + " runtimes, " + total + " cells";
    status.setAttribute("data-matching", String(matching));
    status.setAttribute("data-shown", String(shown));
  }

  [kind, label, grade].forEach(function (s) { s.addEventListener("change", apply); });
  form.addEventListener("reset", function () { window.setTimeout(apply, 0); });
  form.addEventListener("submit", function (e) { e.preventDefault(); });

  // Sorting: runtime, kind and review date by text; a mode by its label rank.
  var sortKey = null, ascending = true;
  function keyOf(tr, key) {
    if (key === "runtime") { return tr.cells[0].textContent; }
    if (key === "kind") { return tr.cells[1].textContent; }
    if (key === "reviewed") { return tr.cells[2].textContent; }
    var td = tr.querySelector('td.cell[data-mode="' + key + '"]');
    return td ? Number(td.getAttribute("data-rank")) : -1;
  }
  function sortBy(key, button) {
    ascending = sortKey === key ? !ascending : (key === "runtime" || key === "kind");
    sortKey = key;
    var rows = lines();
    rows.sort(function (a, b) {
      var x = keyOf(a, key), y = keyOf(b, key);
      var c = typeof x === "number" ? x - y : x.localeCompare(y);
      if (c === 0) { return Number(a.getAttribute("data-index")) - Number(b.getAttribute("data-index")); }
      return ascending ? c : -c;
    });
    rows.forEach(function (tr) { tbody.appendChild(tr); });
    Array.prototype.forEach.call(grid.tHead.querySelectorAll("th"), function (th) {
      th.setAttribute("aria-sort", "none");
    });
    button.parentNode.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  Array.prototype.forEach.call(grid.tHead.querySelectorAll("button[data-sort]"), function (b) {
    b.addEventListener("click", function () { sortBy(b.getAttribute("data-sort"), b); });
  });

  // Arrow keys move between the visible cells; Home/End along a line.
  grid.addEventListener("keydown", function (e) {
    var a = e.target;
    if (!a || a.tagName !== "A" || !a.parentNode.classList.contains("cell")) { return; }
    var td = a.parentNode, tr = td.parentNode;
    var cells = Array.prototype.slice.call(tr.querySelectorAll("td.cell"));
    var col = cells.indexOf(td);
    var visible = lines().filter(function (r) { return !r.hidden; });
    var row = visible.indexOf(tr);
    var target = null;
    if (e.key === "ArrowRight") { target = cells[col + 1]; }
    else if (e.key === "ArrowLeft") { target = cells[col - 1]; }
    else if (e.key === "Home") { target = cells[0]; }
    else if (e.key === "End") { target = cells[cells.length - 1]; }
    else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      var next = visible[row + (e.key === "ArrowDown" ? 1 : -1)];
      if (next) { target = next.querySelectorAll("td.cell")[col]; }
    } else { return; }
    e.preventDefault();
    var link = target && target.querySelector("a");
    if (link) { link.focus(); }
  });

  // The open cell is marked in the grid; Escape in its rows returns to it.
  function mark() {
    Array.prototype.forEach.call(grid.querySelectorAll("td.cell.current"), function (td) {
      td.classList.remove("current");
    });
    var section = openSection();
    if (!section) { return; }
    var link = document.getElementById("cell-" + section.id.slice(2));
    if (link) { link.parentNode.classList.add("current"); }
    if (section.id === window.location.hash.slice(1)) { section.focus({ preventScroll: true }); }
  }
  // The open cell's section: the hash's target (`d-N-MODE`) or the section holding it (a row).
  function openSection() {
    var target = document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
    var section = target && target.closest ? target.closest("section.detail") : null;
    return section;
  }
  window.addEventListener("hashchange", mark);
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") { return; }
    var section = openSection();
    if (!section) { return; }
    var link = document.getElementById("cell-" + section.id.slice(2));
    if (link) { window.location.hash = "cell-" + section.id.slice(2); link.focus(); }
  });

  // Printing shows every campaign table of the open cell.
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details.campaign"), function (d) {
      d.open = true;
    });
  });

  mark();
  apply();
}());
