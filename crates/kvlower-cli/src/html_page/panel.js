  // Part 2 of 2 (panel.js): a cell's panel, built from the JSON data block only when the
  // cell is opened — its rows by depth, each with what `kvlower explain` prints: the reason,
  // every obligation with the evidence that supplied it and what carries it in the runtime,
  // or every candidate and why it did not count; the atoms, signals, proposals, the
  // descriptor's identity and the mode's non-claim. Text only through textContent, links
  // only from the block's own href fields (made by kvlower from well-formed anchors).
  var DATA = null;
  function data() {
    if (!DATA) { DATA = JSON.parse(document.getElementById("data").textContent); }
    return DATA;
  }
  function str(i) { return i >= 0 ? data().s[i] : ""; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      parent.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return parent;
  }
  function link(href, cls, text) {
    var a = el("a", cls, text);
    a.setAttribute("href", href);
    a.setAttribute("rel", "noopener noreferrer");
    return a;
  }
  var GRADES = ["none", "cited", "verified"];
  function badge(label) {
    var l = data().head.labels[label];
    return add(el("span", "badge l-" + l), add(el("span", "sh", data().head.shapes[label]), ""), " " + l);
  }
  function labelText(r) {
    var detail = [];
    if (r[2] >= 0) { detail.push(str(r[2])); }
    if (r[3] > 0) { detail.push(GRADES[r[3]]); }
    var l = data().head.labels[r[0]];
    return detail.length ? l + " (" + detail.join(", ") + ")" : l;
  }

  // An evidence folder's reproduction, [state, "evidence/NAME/", cpu flags]: what CI's
  // reproduce step does with it (kvlower read its reproduce.json, or found none).
  function folderText(f) {
    if (f[0] === 1) { return "↻ reproduced by CI on every landing (" + str(f[1]) + "reproduce.json)"; }
    if (f[0] === 2) {
      return "↻* reproduced by CI only on machines whose CPU has " + str(f[2]) + " (" + str(f[1]) + "reproduce.json)";
    }
    return "checked from committed files only (no reproduce.json in " + str(f[1]) + ")";
  }
  function folderMark(f) {
    var m = el("span", "repro s" + f[0], folderText(f));
    m.setAttribute("data-rp", ["committed_files_only", "every_landing", "on_cpus_with_flags"][f[0]]);
    return m;
  }
  // [path, depth, anchor, kind, href, rerun, note, campaign, [carried by], folder]
  function evidence(ei, full, shown) {
    var e = data().e[ei];
    var span = add(el("span", "ev"), el("code", "item", str(e[0])), " ", el("span", "depth", "[" + str(e[1]) + "]"), " ",
      el("span", "akind", str(e[3])), " ");
    add(span, e[4] >= 0 ? link(str(e[4]), "anchor", str(e[2])) : el("span", "anchor", str(e[2])));
    add(span, " ", e[5] ? el("span", "rerun", "✓ re-run by check") : el("span", "cited-ev", "cited"));
    if (!full) { return span; }
    if (e[9] !== -1) { add(span, " · ", folderMark(e[9])); }
    if (shown[e[2]]) { return add(span, el("span", "anote", "(the anchor above)")); }
    shown[e[2]] = true;
    if (e[6] >= 0) { add(span, el("span", "anote", str(e[6]))); }
    if (e[7] >= 0) { add(span, campaign(data().c[e[7]])); }
    return span;
  }
  function carriers(ei) {
    var list = data().e[ei][8];
    if (!list.length) { return null; }
    var span = add(el("span", "carry"), "carried by ");
    list.forEach(function (c, i) { add(span, i ? ", " : "", el("code", null, str(c))); });
    return span;
  }
  // [runs, scenarios, held, witnessed, [[name, runs, every run, no run]]]
  function campaign(c) {
    var d = el("details", "campaign");
    add(d, el("summary", null, "gate campaign: " + c[0] + " runs in " + c[1] + " scenarios; re-run by check: " +
      (c[2] ? "holds" : "does NOT hold") + "; witnesses " + str(c[3])));
    var t = el("table"), head = el("tr");
    ["scenario", "runs", "passes in every run", "passes in no run"].forEach(function (h) {
      var th = el("th", null, h); th.setAttribute("scope", "col"); head.appendChild(th);
    });
    add(t, add(el("thead"), head));
    var body = el("tbody");
    c[4].forEach(function (s) {
      add(body, add(el("tr"), el("td", null, str(s[0])), el("td", null, String(s[1])), el("td", null, str(s[2])),
        el("td", null, str(s[3]))));
    });
    return add(d, add(t, body));
  }
  function candidates(list, shown) {
    var ul = el("ul", "candidates");
    list.forEach(function (c) {
      add(ul, add(el("li", "candidate"), evidence(c[0], false, shown), ": ", el("span", "defeat", str(c[1]))));
    });
    return ul;
  }

  // The cell's row at a glance: each obligation, what carries it in the runtime (as the
  // descriptor names it from the anchored evidence), and whether check re-ran that evidence.
  function carrierTable(r) {
    var t = el("table", "carriers");
    add(t, el("caption", null, "What carries each obligation (the cell's row)"));
    var head = el("tr");
    ["obligation", "carried by", "evidence"].forEach(function (h) {
      var th = el("th", null, h); th.setAttribute("scope", "col"); head.appendChild(th);
    });
    add(t, add(el("thead"), head));
    var body = el("tbody");
    r[5].forEach(function (o) {
      var carried = el("td");
      if (o[2] < 0) { carried.textContent = "— (not supplied)"; }
      else if (!data().e[o[2]][8].length) { carried.textContent = "not named by the descriptor"; }
      else { data().e[o[2]][8].forEach(function (c, i) { add(carried, i ? ", " : "", el("code", null, str(c))); }); }
      var ev = o[2] < 0 ? "missing" : (data().e[o[2]][5] ? "✓ re-run by check" : "cited");
      if (o[2] >= 0 && data().e[o[2]][9] !== -1) { ev += "; " + folderText(data().e[o[2]][9]); }
      var name = add(el("th"), el("code", null, str(o[0])));
      name.setAttribute("scope", "row");
      add(body, add(el("tr", o[2] >= 0 ? "ok" : "no"), name, carried, el("td", null, ev)));
    });
    return add(t, body);
  }

  // A verified row's reproduction, [state, phrase, [manifest], [without manifest]].
  function reproduction(x) {
    var p = add(el("p", "repro s" + x[0]), el("strong", null, "Reproduction:"), " " + str(x[1]));
    p.setAttribute("data-rp", ["committed_files_only", "every_landing", "on_cpus_with_flags"][x[0]]);
    if (x[2].length) { add(p, "; CI runs " + x[2].map(str).join(", ")); }
    if (x[3].length) { add(p, "; no reproduce.json for " + x[3].map(str).join(", ")); }
    if (x[0] === 2) { add(p, " (elsewhere CI's log names the folder as not reproduced there; check still judges its files)"); }
    return p;
  }

  // [label, depth, subtype, grade, reason, [obligation], [atom], [signal], [proposal], lacks,
  //  reproduction]
  function row(r, best, mode) {
    var depth = str(r[1]);
    var art = el("article", "row l-" + data().head.labels[r[0]]);
    art.setAttribute("data-depth", depth);
    art.setAttribute("data-label", data().head.labels[r[0]]);
    art.setAttribute("data-grade", GRADES[r[3]]);
    if (best) { art.setAttribute("data-best", "true"); }
    var h = add(el("h3"), badge(r[0]), " " + labelText(r).replace(data().head.labels[r[0]], "").trim() + " at depth ",
      el("code", null, depth));
    if (best) { add(h, " ", el("span", "bestmark", "(the cell's row)")); }
    add(art, h, add(el("p", "why"), el("strong", null, "Why:"), " " + str(r[4])));
    if (r[10] !== -1) { add(art, reproduction(r[10])); }
    var ul = el("ul", "obligations"), shown = {};
    r[5].forEach(function (o) {
      var li = el("li", "ob " + (o[2] >= 0 ? "ok" : "no"));
      li.setAttribute("data-obligation", str(o[0]));
      var mark = el("span", "mark", o[2] >= 0 ? "✓" : "✗");
      mark.setAttribute("aria-label", o[2] >= 0 ? "satisfied" : "not satisfied");
      add(li, mark, " ", el("span", "oname", str(o[0])), " ", el("span", "code", "(" + str(o[1]) + ")"));
      if (o[2] >= 0) {
        var carry = carriers(o[2]);
        if (carry) { add(li, " ", carry); }
        add(li, " ← ", evidence(o[2], true, shown));
        o[3].forEach(function (e) { add(li, add(el("div", "also"), "also supplied by ", evidence(e, false, shown), " (redundant)")); });
      } else {
        add(li, ": " + (o[4].length ? "no candidate counts" : "no evidence item names it"));
      }
      if (o[4].length) { add(li, candidates(o[4], shown)); }
      ul.appendChild(li);
    });
    r[6].forEach(function (a) {
      var li = el("li", "ob atom " + (a[1] >= 0 ? "ok" : "no"));
      li.setAttribute("data-atom", str(a[0]));
      var mark = el("span", "mark", a[1] >= 0 ? "✓" : "✗");
      mark.setAttribute("aria-label", a[1] >= 0 ? "anchored" : "not anchored");
      add(li, mark, " atom ", el("span", "oname", str(a[0])));
      add(li, a[1] >= 0 ? add(el("span"), " ← ", evidence(a[1], true, shown)) : ": not anchored to a trace");
      if (a[2].length) { add(li, candidates(a[2], shown)); }
      ul.appendChild(li);
    });
    art.appendChild(ul);
    if (r[7].length) {
      add(art, add(el("p", "signals"), el("strong", null, "Signals"), " (satisfy nothing): " + r[7].map(str).join(", ")));
    }
    r[8].forEach(function (p) {
      var text = ": " + str(p[1]) + (p[2] >= 0 ? ": forbidden lowering: " + str(p[2]) : "");
      add(art, add(el("p", "proposal"), el("strong", null, "Proposal"), " ", el("code", null, str(p[0])), text));
    });
    if (r[9]) {
      add(art, el("p", "proposal", "(a proposal without the mode's enforcement-critical obligations is a misrepresentation)"));
    }
    return art;
  }

  // [path, name, version, identity, source, reviewed, note, cited-because, [non-claim],
  //  [[row] per mode], [best per mode], href]
  function showPanel(tr, mode, onClose) {
    var d = data().d[Number(tr.getAttribute("data-i"))];
    var mi = data().head.modes.indexOf(mode);
    if (!d || mi < 0) { hidePanel(); return; }
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    panel.setAttribute("data-cell", tr.querySelector(".path").textContent + "/" + mode);
    var close = el("button", "close", "×");
    close.setAttribute("type", "button");
    close.setAttribute("aria-label", "Close, back to the grid");
    close.addEventListener("click", onClose);
    var title = add(el("h2"), str(d[1]) + " " + str(d[2]) + " ", el("span", "at", "·"), " ", el("code", null, mode));
    title.id = "panel-title";
    add(panel, close, title);
    var meta = add(el("p", "meta"), "Descriptor ");
    add(meta, d[11] >= 0 ? add(link(str(d[11]), null, ""), el("code", null, str(d[0]))) : el("code", null, str(d[0])));
    add(meta, " · identity " + str(d[3]) + " · read from " + str(d[4]) + " · ", el("strong", null, "reviewed " + str(d[5])));
    add(panel, meta);
    if (d[6] >= 0) { add(panel, el("p", "note", str(d[6]))); }
    add(panel, add(el("p", "nonclaim"), el("strong", null, "Non-claim."), " " + str(d[8][mi])));
    var rows = d[9][mi].map(function (ri) { return data().r[ri]; });
    if (d[7] >= 0 && rows.some(function (r) { return r[3] === 1; })) {
      add(panel, add(el("p", "note"), el("strong", null, "Cited positives allowed because:"), " " + str(d[7])));
    }
    var nav = el("nav", "depths"), ol = el("ol");
    nav.setAttribute("aria-label", "Rows by depth");
    rows.forEach(function (r, i) {
      var rp = r[10] === -1 ? "" : ["", " ↻", " ↻*"][r[10][0]];
      var li = add(el("li"), badge(r[0]), " " + str(r[1]) + (r[3] > 0 ? " · " + GRADES[r[3]] : "") + rp);
      if (i === d[10][mi]) { add(li, " ", el("span", "bestmark", "← the cell")); }
      ol.appendChild(li);
    });
    add(panel, add(nav, ol));
    var cellRow = rows[d[10][mi]];
    if (cellRow && cellRow[5].some(function (o) { return o[2] >= 0; })) { add(panel, carrierTable(cellRow)); }
    rows.forEach(function (r, i) { panel.appendChild(row(r, i === d[10][mi], mode)); });
    panel.hidden = false;
  }
  function hidePanel() {
    panel.hidden = true;
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
  }

  // Printing shows every campaign table of the open cell.
  window.addEventListener("beforeprint", function () {
    Array.prototype.forEach.call(panel.querySelectorAll("details.campaign"), function (d) { d.open = true; });
  });

  onHash();
}());
