// irscope report: virtual scrolling of embedded stages, Python <-> IR line mapping, sortable tables.
// Plain script, no library, no network: the page works from a file:// URL.
"use strict";
(function () {
  const ROW = 17; // px, the CSS row height (.vs .r)
  const SPARE = 30; // rows drawn above and below the visible ones
  const cache = new Map();
  // Rows come short (irscope/report/stages.py `compact`): `<nv|` opens a span of class nv, `>` closes it.
  const TAG = /<([\w-]*)\||>/g;
  const expand = (row) => row.replace(TAG, (m, c) => (c === undefined ? "</span>" : '<span class="' + c + '">'));
  // Big values are embedded gzip-compressed, in base64 (irscope/report/page.py): unpacked once, when the
  // page loads, into their JSON text; parsed when a pane first needs them.
  const unpacked = new Map();
  async function unpack(el) {
    const bin = atob(el.textContent.trim()), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    unpacked.set(el.id, await new Response(stream).text());
  }
  function data(id) {
    if (!cache.has(id)) {
      const el = document.getElementById(id);
      cache.set(id, el ? JSON.parse(unpacked.has(id) ? unpacked.get(id) : el.textContent) : null);
    }
    return cache.get(id);
  }

  // One scrolling pane that draws only the rows in view.
  // With `onClick`, its rows are chosen by a click or from the keyboard: the pane takes the focus (Tab), and
  // the arrows, Page Up/Down, Home and End move to the next row `selectable` allows and choose it.
  class Pane {
    constructor(el, onClick, selectable) {
      this.el = el; this.onClick = onClick; this.d = null; this.marks = new Set(); this.cursor = -1;
      this.selectable = selectable || (() => true);
      el.innerHTML = '<div class="spacer"></div><div class="block"></div>';
      this.spacer = el.firstChild; this.block = el.lastChild; this.drawn = [-1, -1];
      el.addEventListener("scroll", () => this.draw());
      this.block.addEventListener("click", (e) => {
        const r = e.target.closest(".r");
        if (r && this.onClick) this.onClick(+r.dataset.i, this);
      });
      if (onClick) {
        el.tabIndex = 0;
        el.addEventListener("keydown", (e) => this.key(e));
      }
    }
    key(e) {
      if (!this.d || e.altKey || e.ctrlKey || e.metaKey) return;
      const n = this.d.rows.length, page = Math.max(1, Math.floor((this.el.clientHeight || 400) / ROW) - 1);
      const steps = { ArrowDown: [1, 1], ArrowUp: [-1, -1], PageDown: [page, 1], PageUp: [-page, -1],
                      Home: [-n, 1], End: [n, -1] }[e.key];
      if (!steps) return;
      e.preventDefault();
      const from = this.cursor >= 0 ? this.cursor : Math.floor(this.el.scrollTop / ROW) - (steps[1] > 0 ? 1 : -1);
      // the row `steps` away (clamped to the pane), then onward in the key's direction to one that can be chosen
      let i = Math.min(n - 1, Math.max(0, from + steps[0]));
      const dir = e.key === "Home" ? 1 : e.key === "End" ? -1 : steps[1];
      while (i >= 0 && i < n && !this.selectable(i)) i += dir;
      if (i < 0 || i >= n || i === this.cursor) return;
      this.onClick(i, this);
      this.reveal(i);
    }
    show(d) { this.d = d; this.el.scrollTop = 0; this.spacer.style.height = (d.rows.length * ROW) + "px"; this.redraw(); }
    redraw() { this.drawn = [-1, -1]; this.draw(); }
    draw() {
      if (!this.d) return;
      const n = this.d.rows.length, top = this.el.scrollTop, h = this.el.clientHeight || 400;
      const a = Math.max(0, Math.floor(top / ROW) - SPARE), b = Math.min(n, Math.ceil((top + h) / ROW) + SPARE);
      if (a === this.drawn[0] && b === this.drawn[1]) return;
      this.drawn = [a, b];
      const rows = this.d.rows, src = this.d.src || [], out = [];
      for (let i = a; i < b; i++) {
        let cls = "r";
        if (src[i]) cls += " mp";
        if (this.marks.has(i)) cls += " hit";
        if (i === this.cursor) cls += " cur";
        out.push('<div class="' + cls + '" data-i="' + i + '"><span class="ln">' + (i + 1) + "</span>" + expand(rows[i]) + "</div>");
      }
      this.block.style.top = (a * ROW) + "px";
      this.block.innerHTML = out.join("");
    }
    mark(rows, cursor) { this.marks = new Set(rows); this.cursor = cursor; this.redraw(); }
    reveal(i) {
      const top = i * ROW, h = this.el.clientHeight;
      if (top < this.el.scrollTop || top > this.el.scrollTop + h - ROW) this.el.scrollTop = Math.max(0, top - h / 3);
      this.draw();
    }
  }

  // A snapshot's viewer: Python on the left, the stages in tabs on the right.
  function viewer(root) {
    const ids = JSON.parse(root.dataset.stages), py = root.querySelector(".vs.py"), ir = root.querySelector(".vs.ir");
    const tabs = root.querySelectorAll(".tabs button");
    let stage = root.dataset.first, line = 0;
    const source = (i) => (data(ids[stage]).src || [])[i];
    const irPane = new Pane(ir, (i) => { const l = source(i); if (l) select(l, i); }, (i) => !!source(i));
    const pyPane = py ? new Pane(py, (i) => select(i + 1, -1)) : null;
    if (pyPane) pyPane.show(data(root.dataset.python));
    function rowsOf(s, l) {
      const src = data(ids[s]).src || [], out = [];
      for (let i = 0; i < src.length; i++) if (src[i] === l) out.push(i);
      return out;
    }
    function select(l, irRow) {
      line = l;
      if (pyPane) { pyPane.mark([l - 1], l - 1); pyPane.reveal(l - 1); }
      const counts = data(root.dataset.counts) || {}; // every stage's lines per Python line, computed in Python
      tabs.forEach((t) => {
        if (t.dataset.stage === stage) return;
        t.querySelector(".badge").textContent = String((counts[t.dataset.stage] || {})[l] || 0);
      });
      const hits = rowsOf(stage, l);
      root.querySelector(".tabs button.on .badge").textContent = String(hits.length);
      irPane.mark(hits, irRow >= 0 ? irRow : (hits.length ? hits[0] : -1));
      if (irRow < 0 && hits.length) irPane.reveal(hits[0]);
      root.querySelector(".status").textContent = "line " + l + ": " + hits.length + " line(s) of " + stage +
        (hits.length ? "" : " (none: try another stage)");
    }
    function open(s) {
      stage = s;
      tabs.forEach((t) => t.classList.toggle("on", t.dataset.stage === s));
      const d = data(ids[s]);
      irPane.show(d);
      root.querySelector(".note").textContent = d.note || "";
      if (line) select(line, -1);
    }
    tabs.forEach((t) => t.addEventListener("click", () => open(t.dataset.stage)));
    open(stage);
  }

  function diffPane(el) {
    const p = new Pane(el, null);
    p.show(data(el.dataset.src));
  }

  // A cell's sort key: a number where the cell is one (1,024 and 76% too), else its text; "-", "" and "?"
  // are missing values, which sort last whichever way the column is sorted.
  const MISSING = new Set(["", "-", "\u2014", "?", "n/a"]);
  const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i;
  function sortKey(cell) {
    const v = (cell.dataset.v !== undefined ? cell.dataset.v : cell.textContent).trim();
    if (MISSING.has(v)) return null;
    const n = v.replace(/,/g, "").replace(/%$/, "");
    return NUMBER.test(n) ? +n : v;
  }
  function compareKeys(x, y, dir) {
    if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1; // missing: last, both ways
    const nx = typeof x === "number", ny = typeof y === "number";
    if (nx !== ny) return (nx ? -1 : 1) * dir; // numbers before words ascending
    return (nx ? x - y : x.localeCompare(y, undefined, { numeric: true })) * dir;
  }
  function sortable(table) {
    table.querySelectorAll("th").forEach((th) => { // sorted from the keyboard too: Tab to a heading, Enter
      th.tabIndex = 0;
      th.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); th.click(); } });
    });
    table.querySelectorAll("th").forEach((th, col) => th.addEventListener("click", () => {
      const body = table.tBodies[0], rows = Array.from(body.rows), dir = th.dataset.dir === "asc" ? -1 : 1;
      table.querySelectorAll("th").forEach((h) => delete h.dataset.dir);
      th.dataset.dir = dir === 1 ? "asc" : "desc";
      const keyed = rows.map((r, i) => [r.cells[col] ? sortKey(r.cells[col]) : null, i, r]);
      keyed.sort((a, b) => compareKeys(a[0], b[0], dir) || a[1] - b[1]); // ties keep their order
      keyed.forEach((k) => body.appendChild(k[2]));
    }));
  }

  // A viewer (and a lone source pane) is built when it comes near the screen, or when a click lands in it
  // first: all of them built on load held a page of 500 snapshots for most of a minute.
  function lazily(els, build) {
    const once = (el) => { if (!el.dataset.built) { el.dataset.built = "1"; build(el); } };
    if (typeof IntersectionObserver === "undefined") { els.forEach(once); return; }
    const io = new IntersectionObserver((seen) => seen.forEach((e) => {
      if (e.isIntersecting) { io.unobserve(e.target); once(e.target); }
    }), { rootMargin: "100% 0px" });
    const h = window.innerHeight || 1000;
    const near = Array.from(els, (el) => { const r = el.getBoundingClientRect(); return r.bottom > -h && r.top < 2 * h; });
    els.forEach((el, i) => {
      if (near[i]) { once(el); return; } // on screen now: drawn before the page says it is ready
      io.observe(el);
      el.addEventListener("click", () => once(el), true); // (before the tab's own listener, which it adds)
      el.addEventListener("focusin", () => once(el)); // reached by Tab before it came near the screen
    });
  }

  function start() {
    lazily(document.querySelectorAll(".viewer"), viewer);
    document.querySelectorAll("details.lazy").forEach((d) => d.addEventListener("toggle", () => {
      if (d.open && !d.dataset.done) { d.dataset.done = "1"; d.querySelectorAll(".vs.diff").forEach(diffPane); }
    }, { once: false }));
    lazily(document.querySelectorAll(".vs.lone"), diffPane); // a failed compile's source.py, beside its error
    document.documentElement.dataset.ready = "1";
    performance.mark("irscope-ready"); // benchmarks/bench_report.py times the load to here
  }

  // The script is the file's last element: that it runs says the file is whole (page.py's note says otherwise)
  const unready = document.getElementById("unready");
  if (unready) unready.remove();
  document.querySelectorAll("table.sortable").forEach(sortable); // the tables need none of the packed data
  const packed = Array.from(document.querySelectorAll("script[data-base64]"));
  if (packed.length && typeof DecompressionStream === "undefined") {
    const note = document.createElement("p");
    note.className = "warn";
    note.textContent = "This browser cannot unpack the report's embedded stages (it has no DecompressionStream: " +
      "Chrome 80, Firefox 113, Safari 16.4 or later can): the tables and plots work, the stage panes do not.";
    document.body.insertBefore(note, document.body.firstChild);
    document.documentElement.dataset.ready = "1";
    return;
  }
  Promise.all(packed.map(unpack)).then(start, (err) => {
    const note = document.createElement("p");
    note.className = "warn";
    note.textContent = "The report's embedded stages could not be unpacked (" + err + "): the file may be cut short.";
    document.body.insertBefore(note, document.body.firstChild);
    console.error("irscope report: " + err);
    document.documentElement.dataset.ready = "failed";
  });
})();
