/* pytest-sommelier report: the examples table (filters, paging, row details).
   Every stored string is placed with textContent, never parsed as HTML. */
(function () {
  "use strict";
  var holder = document.getElementById("data");
  if (!holder) { return; }
  var D = JSON.parse(holder.textContent);
  var PAGE = 50;
  // positions in D.ex[i] and in an outcome (see htmlreport.examples_blob)
  var ID = 0, SLICE = 1, TOOL = 2, ROOT = 3, SYS = 4, USER = 5, GOLD = 6, OUT = 7;
  var HIT = 0, STATUS = 1, RAW = 2, PARSED = 3, DIFF = 4, NAME_OK = 5, MISS = 6, CACHED = 7,
      RAWLEN = 8, REASONING = 9, UNCLOSED = 10;
  var byId = {};
  var translations = {};
  D.ex.forEach(function (e, i) {
    byId[e[ID]] = i;
    if (e[ROOT] >= 0) { (translations[e[ROOT]] = translations[e[ROOT]] || []).push(i); }
  });
  var haystack = D.ex.map(function (e) { return (e[ID] + "\n" + e[USER]).toLowerCase(); });

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "className") { node.className = attrs[k]; } else { node.setAttribute(k, attrs[k]); }
      });
    }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function option(select, value, label) { select.appendChild(el("option", { value: value }, label)); }

  // ---- filter controls
  var pairs = D.pairs.slice();
  if (!pairs.length && D.arms.length >= 2) {
    pairs.push([D.arms.length - 1, 0, D.arms[D.arms.length - 1] + " vs " + D.arms[0]]);
  }
  var fPair = $("f-pair"), fOutcome = $("f-outcome"), fStatusArm = $("f-status-arm"),
      fStatus = $("f-status"), fSlice = $("f-slice"), fTool = $("f-tool"), fMiss = $("f-miss"),
      fSearch = $("f-search");
  pairs.forEach(function (p, i) { option(fPair, String(i), p[2]); });
  if (!pairs.length) { fPair.disabled = true; fOutcome.disabled = true; }
  D.arms.forEach(function (a, i) { option(fStatusArm, String(i), a); });
  if (pairs.length) { fStatusArm.value = String(pairs[0][0]); }
  D.statuses.forEach(function (s, i) { option(fStatus, String(i), s); });
  D.slices.forEach(function (s, i) { option(fSlice, String(i), s); });
  D.tools.map(function (t, i) { return [t, i]; })
    .sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; })
    .forEach(function (t) { option(fTool, String(t[1]), t[0]); });
  var categories = {};
  D.ex.forEach(function (e) { e[OUT].forEach(function (o) { if (o[MISS]) { categories[o[MISS]] = 1; } }); });
  Object.keys(categories).sort().forEach(function (c) { option(fMiss, c, c); });
  if (Object.keys(categories).length) { $("l-miss").hidden = false; }

  var state = { page: 0, rows: [], open: {}, only: null };

  function matches(i) {
    var e = D.ex[i];
    if (state.only !== null) { return i === state.only; }
    if (fSlice.value !== "" && e[SLICE] !== +fSlice.value) { return false; }
    if (fTool.value !== "" && e[TOOL] !== +fTool.value) { return false; }
    var statusArm = +fStatusArm.value;
    if (fStatus.value !== "" && e[OUT][statusArm][STATUS] !== +fStatus.value) { return false; }
    if (fMiss.value !== "" && e[OUT][statusArm][MISS] !== fMiss.value) { return false; }
    if (!fOutcome.disabled && fOutcome.value !== "all") {
      var p = pairs[+fPair.value];
      var c = e[OUT][p[0]][HIT], r = e[OUT][p[1]][HIT];
      var want = fOutcome.value;
      if (want === "fixed" && !(c === 1 && r === 0)) { return false; }
      if (want === "broken" && !(c === 0 && r === 1)) { return false; }
      if (want === "both_miss" && !(c === 0 && r === 0)) { return false; }
      if (want === "both_hit" && !(c === 1 && r === 1)) { return false; }
    }
    var q = fSearch.value.trim().toLowerCase();
    if (q && haystack[i].indexOf(q) < 0) { return false; }
    return true;
  }

  function refilter() {
    state.rows = [];
    for (var i = 0; i < D.ex.length; i++) { if (matches(i)) { state.rows.push(i); } }
    state.page = 0;
    draw();
  }

  // ---- table
  function head() {
    var tr = el("tr");
    ["", "id", "slice", "tool"].forEach(function (h) { tr.appendChild(el("th", null, h)); });
    D.arms.forEach(function (a) { tr.appendChild(el("th", { dir: "auto" }, a)); });
    tr.appendChild(el("th", null, "user message"));
    $("ex-head").appendChild(tr);
  }

  // a miss category that only repeats the parse status ("parse_no_json") is not shown twice
  function shownMiss(o) { return o[MISS] && o[MISS] !== "parse_" + D.statuses[o[STATUS]]; }

  function outcomeCell(o) {
    var td = el("td", { className: "oc" });
    if (o[HIT] < 0) { td.textContent = "not scored"; td.className += " ns"; return td; }
    td.appendChild(el("span", { className: o[HIT] ? "hit" : "miss" }, o[HIT] ? "hit" : "miss"));
    var status = D.statuses[o[STATUS]];
    if (status !== "ok") { td.appendChild(el("span", { className: "st" }, status)); }
    if (shownMiss(o)) { td.appendChild(el("span", { className: "mc" }, o[MISS])); }
    return td;
  }

  function rowFor(i) {
    var e = D.ex[i];
    var tr = el("tr", { className: "ex-row", "data-id": e[ID], tabindex: "0" });
    tr.appendChild(el("td", { className: "tw" }, state.open[i] ? "▾" : "▸"));
    tr.appendChild(el("td", { className: "mono", dir: "ltr" }, e[ID]));
    tr.appendChild(el("td", null, D.slices[e[SLICE]]));
    tr.appendChild(el("td", { className: "mono", dir: "ltr" }, D.tools[e[TOOL]]));
    e[OUT].forEach(function (o) { tr.appendChild(outcomeCell(o)); });
    var user = e[USER];
    tr.appendChild(el("td", { className: "um", dir: "auto" }, user.length > 140 ? user.slice(0, 140) + "…" : user));
    tr.addEventListener("click", function () { toggle(i); });
    tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { toggle(i); } });
    return tr;
  }

  function draw() {
    var body = $("ex-body");
    body.textContent = "";
    var total = state.rows.length;
    var pages = Math.max(1, Math.ceil(total / PAGE));
    if (state.page >= pages) { state.page = pages - 1; }
    var start = state.page * PAGE, end = Math.min(total, start + PAGE);
    for (var k = start; k < end; k++) {
      var i = state.rows[k];
      body.appendChild(rowFor(i));
      if (state.open[i]) {
        var tr = el("tr", { className: "ex-detail", "data-id": D.ex[i][ID] });
        var td = el("td", { colspan: String(5 + D.arms.length) });
        td.appendChild(detail(i));
        tr.appendChild(td);
        body.appendChild(tr);
      }
    }
    var count = $("count");
    count.setAttribute("data-count", String(total));
    count.textContent = total + " of " + D.ex.length + " examples" +
      (state.only !== null ? " (one example; reset to see all)" : "");
    $("page-info").textContent = total ? (start + 1) + "–" + end + " (page " + (state.page + 1) + " of " + pages + ")" : "";
    $("prev").disabled = state.page === 0;
    $("next").disabled = state.page >= pages - 1;
  }

  function toggle(i) {
    if (state.open[i]) { delete state.open[i]; } else { state.open[i] = true; }
    draw();
  }

  // ---- JSON with highlighted argument paths (paths as in metrics.flatten_arguments)
  function pyKey(key) {
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) { return "." + key; }
    return "[" + JSON.stringify(key).replace(/[\u0080-\uffff]/g, function (ch) {
      return "\\u" + ("0000" + ch.charCodeAt(0).toString(16)).slice(-4);
    }) + "]";
  }
  function isEmpty(v) {
    return v !== null && typeof v === "object" && Object.keys(v).length === 0;
  }
  function jsonNode(value, path, marks, indent, parent) {
    var pad = "\n" + "  ".repeat(indent + 1), close = "\n" + "  ".repeat(indent);
    if (value !== null && typeof value === "object" && !isEmpty(value)) {
      var isArray = Array.isArray(value);
      parent.appendChild(document.createTextNode(isArray ? "[" : "{"));
      var keys = isArray ? value.map(function (_, k) { return k; }) : Object.keys(value).sort();
      keys.forEach(function (k, n) {
        parent.appendChild(document.createTextNode(pad));
        var sub = path + (isArray ? "[" + k + "]" : pyKey(k));
        if (!isArray) { parent.appendChild(el("span", { className: "jk" }, JSON.stringify(k) + ": ")); }
        jsonNode(value[k], sub, marks, indent + 1, parent);
        if (n < keys.length - 1) { parent.appendChild(document.createTextNode(",")); }
      });
      parent.appendChild(document.createTextNode(close + (isArray ? "]" : "}")));
      return;
    }
    var leaf = el(marks[path] ? "mark" : "span", { className: "jv" }, JSON.stringify(value));
    parent.appendChild(leaf);
  }
  function callBlock(call, diff, nameDiffers) {
    var pre = el("pre", { className: "json", dir: "ltr" });
    if (call === null || typeof call !== "object") { pre.textContent = JSON.stringify(call); return pre; }
    var marks = {};
    (diff || []).forEach(function (d) { marks[d[0]] = true; });
    var args = call.arguments;
    pre.appendChild(document.createTextNode("{\n  "));
    pre.appendChild(el("span", { className: "jk" }, "\"name\": "));
    pre.appendChild(el(nameDiffers ? "mark" : "span", { className: "jv" }, JSON.stringify(call.name)));
    pre.appendChild(document.createTextNode(",\n  "));
    pre.appendChild(el("span", { className: "jk" }, "\"arguments\": "));
    if (args !== null && typeof args === "object" && isEmpty(args)) {
      pre.appendChild(el(marks["<root>"] ? "mark" : "span", { className: "jv" }, "{}"));
    } else {
      jsonNode(args, "", marks, 1, pre);
    }
    pre.appendChild(document.createTextNode("\n}"));
    return pre;
  }

  // ---- row details
  function labelled(parent, label, node) {
    parent.appendChild(el("div", { className: "lbl" }, label));
    parent.appendChild(node);
  }
  function armBlock(e, a) {
    var o = e[OUT][a];
    var box = el("div", { className: "arm-out", "data-arm": D.arms[a] });
    var title = el("h5", null);
    title.appendChild(el("bdi", null, D.arms[a]));
    title.appendChild(document.createTextNode(": "));
    if (o[HIT] < 0) {
      title.appendChild(el("span", { className: "ns" }, "not scored"));
      box.appendChild(title);
      return box;
    }
    title.appendChild(el("span", { className: o[HIT] ? "hit" : "miss" }, o[HIT] ? "hit" : "miss"));
    title.appendChild(document.createTextNode(" · parse " + D.statuses[o[STATUS]] +
      (o[CACHED] ? " · cached" : "") + (shownMiss(o) ? " · " + o[MISS] : "")));
    box.appendChild(title);
    var reasoned = o[REASONING] !== null && o[REASONING] !== undefined;
    if (reasoned) {
      var fold = el("details", { className: "reasoning" });
      fold.appendChild(el("summary", null, "reasoning (" + o[REASONING].length + " characters" +
        (o[UNCLOSED] ? ", never closed: no answer" : "") + ")"));
      fold.appendChild(el("pre", { className: "raw", dir: "auto" }, o[REASONING]));
      box.appendChild(fold);
    }
    var raw = el("pre", { className: "raw", dir: "auto" }, o[RAW]);
    labelled(box, (reasoned ? "content after the reasoning" : "raw output") + (o[RAWLEN] > o[RAW].length ? " (first " + o[RAW].length + " of " + o[RAWLEN] + " characters; the generations file has it whole)" : ""), raw);
    if (D.statuses[o[STATUS]] !== "ok") { return box; }
    if (o[HIT]) {
      box.appendChild(el("p", { className: "same" }, "parsed call: equals the gold call"));
      return box;
    }
    var parsed = o[PARSED];
    var nameDiffers = !o[NAME_OK];
    labelled(box, "parsed call", callBlock(parsed, o[DIFF], nameDiffers));
    if (nameDiffers) {
      var nd = el("p", { className: "namediff" }, "function name differs: gold ");
      nd.appendChild(el("mark", { dir: "ltr" }, e[GOLD].name));
      nd.appendChild(document.createTextNode(", output "));
      nd.appendChild(el("mark", { dir: "ltr" }, parsed.name));
      box.appendChild(nd);
    }
    if (o[DIFF].length) {
      var table = el("table", { className: "diff" });
      var hr = el("tr");
      ["argument path", "gold", "output"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
      table.appendChild(hr);
      o[DIFF].forEach(function (d) {
        var tr = el("tr", { className: "diff-row" });
        tr.appendChild(el("td", { className: "mono", dir: "ltr" }, d[0]));
        [d[1], d[2]].forEach(function (v) {
          var td = el("td", { className: "mono", dir: "ltr" });
          if (v === null) { td.appendChild(el("span", { className: "absent" }, "(absent)")); } else { td.appendChild(el("mark", null, v)); }
          tr.appendChild(td);
        });
        table.appendChild(tr);
      });
      labelled(box, "argument paths that differ", table);
    }
    return box;
  }
  function exampleColumn(i, role) {
    var e = D.ex[i];
    var col = el("div", { className: "ex-col", "data-id": e[ID] });
    var h = el("h4", null);
    h.appendChild(el("span", { className: "mono", dir: "ltr" }, e[ID]));
    h.appendChild(document.createTextNode(" · " + D.slices[e[SLICE]] + (role ? " · " + role : "")));
    col.appendChild(h);
    labelled(col, "user message", el("div", { className: "user", dir: "auto" }, e[USER]));
    if (e[SYS] >= 0) {
      var det = el("details", { className: "sys" });
      det.appendChild(el("summary", null, "system message (tools)"));
      det.appendChild(el("pre", { dir: "auto" }, D.systems[e[SYS]]));
      col.appendChild(det);
    }
    labelled(col, "gold call", callBlock(e[GOLD], [], false));
    D.arms.forEach(function (_, a) { col.appendChild(armBlock(e, a)); });
    return col;
  }
  function link(i, text) {
    var a = el("a", { href: "#ex=" + encodeURIComponent(D.ex[i][ID]), className: "exlink", "data-target": D.ex[i][ID] }, text || D.ex[i][ID]);
    return a;
  }
  function detail(i) {
    var e = D.ex[i];
    var box = el("div", { className: "detail" });
    var grid = el("div", { className: e[ROOT] >= 0 ? "grid two" : "grid" });
    if (e[ROOT] >= 0) {
      var p = el("p", { className: "pairnote" }, "Translated example; its root ");
      p.appendChild(link(e[ROOT]));
      p.appendChild(document.createTextNode(" is shown beside it."));
      box.appendChild(p);
      grid.appendChild(exampleColumn(e[ROOT], "root"));
      grid.appendChild(exampleColumn(i, "translation"));
    } else {
      grid.appendChild(exampleColumn(i, ""));
    }
    box.appendChild(grid);
    var tr = translations[i];
    if (tr && tr.length) {
      var q = el("p", { className: "pairnote" }, "Translations of this example: ");
      tr.forEach(function (t, n) {
        if (n) { q.appendChild(document.createTextNode(", ")); }
        q.appendChild(link(t));
      });
      box.appendChild(q);
    }
    return box;
  }

  // ---- navigation to one example (#ex=<id>)
  function showOnly(id) {
    if (!(id in byId)) { return; }
    var i = byId[id];
    state.only = i;
    state.open = {};
    state.open[i] = true;
    refilter();
    var row = document.querySelector("tr.ex-row");
    if (row && row.scrollIntoView) { row.scrollIntoView({ block: "start" }); }
  }
  function fromHash() {
    var m = /^#ex=(.*)$/.exec(location.hash);
    if (m) { showOnly(decodeURIComponent(m[1])); }
  }
  window.addEventListener("hashchange", fromHash);

  var timer = null;
  [fPair, fOutcome, fStatusArm, fStatus, fSlice, fTool, fMiss].forEach(function (s) {
    s.addEventListener("change", function () { state.only = null; refilter(); });
  });
  fSearch.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { state.only = null; refilter(); }, 120);
  });
  $("f-reset").addEventListener("click", function () {
    [fOutcome].forEach(function (s) { s.value = "all"; });
    [fStatus, fSlice, fTool, fMiss].forEach(function (s) { s.value = ""; });
    fSearch.value = "";
    state.only = null;
    state.open = {};
    if (location.hash) { history.replaceState(null, "", location.pathname + location.search); }
    refilter();
  });
  $("prev").addEventListener("click", function () { state.page -= 1; draw(); });
  $("next").addEventListener("click", function () { state.page += 1; draw(); });

  head();
  refilter();
  fromHash();
})();
