"use strict";
// The results explorer: everything it shows comes from data/ beside this page and is written
// into the page as text (textContent), never as HTML. No request leaves the folder.
(function () {
  const S = window.GB_SUMMARY;
  const PAGE = 200; // rows shown at a time
  const loaded = { episode: {}, task: {}, truth: {} };
  const waiting = { episode: {}, task: {}, truth: {} };
  let shown = PAGE, sortKey = null, sortDir = 1, current = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  const text = (value) => (value === null || value === undefined ? "-" : String(value));
  const fixed = (value, digits) => (value === null || value === undefined ? "-" : Number(value).toFixed(digits));

  // Data files beside the page register themselves here (a script tag works from disk).
  window.GB_LOAD = function (kind, key, data) {
    loaded[kind][key] = data;
    for (const done of waiting[kind][key] || []) done(data);
    delete waiting[kind][key];
  };
  function load(kind, key) {
    if (key in loaded[kind]) return Promise.resolve(loaded[kind][key]);
    return new Promise((resolve, reject) => {
      const first = !(key in waiting[kind]);
      (waiting[kind][key] = waiting[kind][key] || []).push(resolve);
      if (!first) return;
      if (!/^[0-9a-f]{16}$/.test(key)) { reject(new Error("bad key")); return; }
      const script = el("script", { src: "data/" + kind + "/" + key + ".js" });
      script.onerror = () => { delete waiting[kind][key]; reject(new Error("data/" + kind + "/" + key + ".js is missing")); };
      document.head.appendChild(script);
    });
  }
  async function gunzip(base64) {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot decompress (no DecompressionStream)");
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // Summary: success heatmaps and diagnostics ------------------------------------------------
  function heatColor(rate) {
    const hue = Math.round(120 * rate); // red (0) to green (1)
    return "hsl(" + hue + ", 60%, " + (88 - 20 * Math.abs(rate - 0.5)) + "%)";
  }
  function renderSuccess() {
    const box = document.getElementById("success");
    if (!S.heatmaps.length) box.appendChild(el("p", { class: "note", text: "No scored episode yet." }));
    for (const rate of S.rates) {
      box.appendChild(el("h3", { text: "Tool failure rate " + rate }));
      const row = el("div", { class: "runs" });
      for (const map of S.heatmaps.filter((m) => m.rate === rate)) {
        const table = el("table", { class: "heat" }, el("caption", { text: map.run + " (" + map.n + " episodes, success " + fixed(map.success, 3) + ")" }));
        const head = el("tr", {}, el("th", { text: "H \\ B" }));
        for (const b of map.budgets) head.appendChild(el("th", { text: String(b) }));
        table.appendChild(head);
        for (const h of map.horizons) {
          const tr = el("tr", {}, el("th", { text: String(h) }));
          for (const b of map.budgets) {
            const cell = map.cells[h + "," + b];
            if (!cell) { tr.appendChild(el("td", { text: "" })); continue; }
            const td = el("td", { title: "H=" + h + " B=" + b }, fixed(cell.rate, 2),
              el("small", { text: "[" + fixed(cell.low, 2) + ", " + fixed(cell.high, 2) + "] n=" + cell.n }));
            td.style.background = heatColor(cell.rate);
            tr.appendChild(td);
          }
          table.appendChild(tr);
        }
        row.appendChild(table);
      }
      box.appendChild(row);
    }
  }
  function renderDiagnostics() {
    const box = document.getElementById("diagnostics");
    for (const part of S.diagnostics) {
      box.appendChild(el("h3", { text: "Tool failure rate " + part.rate }));
      const table = el("table", { class: "grid-table diagnostics" });
      table.appendChild(el("thead", {}, el("tr", {}, ...S.diagnostics_header.map((h) => el("th", { text: h })))));
      const body = el("tbody");
      for (const cells of part.rows) body.appendChild(el("tr", {}, ...cells.map((c) => el("td", { text: c }))));
      table.appendChild(body);
      box.appendChild(table);
    }
  }

  // Episodes: filters, sorting, rows ---------------------------------------------------------
  const FILTERS = [
    ["run", "run"], ["domain", "domain"], ["hidden_slots", "H"], ["decoy_budget", "B"],
    ["failure_rate", "failure rate"], ["success", "success"], ["informed", "informed"],
  ];
  const filterState = {};
  function renderFilters() {
    const box = document.getElementById("filters");
    for (const [key, label] of FILTERS) {
      const values = [...new Set(S.rows.map((r) => text(r[key])))].sort((a, b) => (isNaN(a) || isNaN(b) ? a.localeCompare(b) : a - b));
      const select = el("select", { id: "filter-" + key, "data-key": key }, el("option", { value: "", text: "all" }));
      for (const value of values) select.appendChild(el("option", { value: value, text: value }));
      select.addEventListener("change", () => { filterState[key] = select.value; shown = PAGE; renderRows(); });
      box.appendChild(el("label", {}, label, select));
    }
    const search = el("input", { id: "filter-text", type: "search", placeholder: "task id contains" });
    search.addEventListener("input", () => { filterState.text = search.value.trim(); shown = PAGE; renderRows(); });
    box.appendChild(el("label", {}, "task", search));
  }
  function matches(row) {
    for (const [key] of FILTERS) if (filterState[key] && text(row[key]) !== filterState[key]) return false;
    return !filterState.text || row.task_id.includes(filterState.text);
  }
  function renderHead() {
    const tr = el("tr");
    for (const [key, label] of S.columns) {
      const th = el("th", { "data-key": key, text: label });
      if (key === sortKey) th.className = sortDir > 0 ? "sorted-asc" : "sorted-desc";
      th.addEventListener("click", () => {
        sortDir = sortKey === key ? -sortDir : 1;
        sortKey = key;
        renderHead();
        renderRows();
      });
      tr.appendChild(th);
    }
    const head = document.querySelector("#episodes thead");
    head.replaceChildren(tr);
  }
  function compare(a, b) {
    return order(a[sortKey], b[sortKey], sortDir);
  }
  function cell(key, value) {
    if (typeof value === "boolean") return el("td", { class: value ? "yes" : "no", text: value ? "yes" : "no" });
    if (typeof value === "number" && !Number.isInteger(value)) return el("td", { text: value.toFixed(3) });
    return el("td", { text: text(value) });
  }
  function renderRows() {
    let rows = S.rows.filter(matches);
    if (sortKey) rows = rows.slice().sort(compare);
    const body = document.querySelector("#episodes tbody");
    body.replaceChildren();
    for (const row of rows.slice(0, shown)) {
      const tr = el("tr", { "data-episode": row.key });
      if (current === row.key) tr.className = "open";
      for (const [key] of S.columns) tr.appendChild(cell(key, row[key]));
      tr.addEventListener("click", () => openEpisode(row));
      body.appendChild(tr);
    }
    document.getElementById("count").textContent = rows.length + " of " + S.rows.length + " episodes" + (rows.length > shown ? " (the first " + shown + " shown)" : "");
    const more = document.getElementById("more");
    more.hidden = rows.length <= shown;
  }

  // Tasks: one row per task, each run's success side by side ---------------------------------
  function taskTable() {
    const state = { shown: PAGE, key: null, dir: 1, filters: {} };
    const box = document.getElementById("task-filters");
    for (const [key, label] of [["domain", "domain"], ["hidden_slots", "H"], ["decoy_budget", "B"], ["depth_rung", "rung"]]) {
      const values = [...new Set(S.task_rows.map((r) => text(r[key])))].sort((a, b) => (isNaN(a) || isNaN(b) ? a.localeCompare(b) : a - b));
      const select = el("select", { id: "task-filter-" + key }, el("option", { value: "", text: "all" }));
      for (const value of values) select.appendChild(el("option", { value: value, text: value }));
      select.addEventListener("change", () => { state.filters[key] = select.value; state.shown = PAGE; draw(); });
      box.appendChild(el("label", {}, label, select));
    }
    const search = el("input", { id: "task-filter-text", type: "search", placeholder: "task id contains" });
    search.addEventListener("input", () => { state.filters.text = search.value.trim(); state.shown = PAGE; draw(); });
    box.appendChild(el("label", {}, "task", search));
    document.getElementById("more-tasks").addEventListener("click", () => { state.shown += PAGE; draw(); });
    function draw() {
      const head = el("tr");
      for (const [key, label] of S.task_columns) {
        const th = el("th", { "data-key": key, text: label });
        if (key === state.key) th.className = state.dir > 0 ? "sorted-asc" : "sorted-desc";
        th.addEventListener("click", () => { state.dir = state.key === key ? -state.dir : 1; state.key = key; draw(); });
        head.appendChild(th);
      }
      document.querySelector("#tasks thead").replaceChildren(head);
      let rows = S.task_rows.filter((row) => Object.entries(state.filters).every(([key, value]) =>
        !value || (key === "text" ? row.task_id.includes(value) : text(row[key]) === value)));
      if (state.key) rows = rows.slice().sort((a, b) => order(a[state.key], b[state.key], state.dir));
      const body = document.querySelector("#tasks tbody");
      body.replaceChildren();
      for (const row of rows.slice(0, state.shown)) {
        const tr = el("tr", { "data-task": row.task_id });
        for (const [key] of S.task_columns) {
          const value = row[key];
          if (key.startsWith("run:")) {
            const td = el("td", { text: value === null || value === undefined ? "-" : value === 1 ? "solved" : value === 0 ? "failed" : fixed(value, 2) });
            td.className = value === 1 ? "yes" : value === 0 ? "no" : "";
            tr.appendChild(td);
          } else tr.appendChild(cell(key, value));
        }
        tr.addEventListener("click", () => {
          const input = document.getElementById("filter-text");
          input.value = row.task_id;
          filterState.text = row.task_id;
          shown = PAGE;
          renderRows();
          document.getElementById("episodes-section").scrollIntoView();
        });
        body.appendChild(tr);
      }
      document.getElementById("task-count").textContent = rows.length + " of " + S.task_rows.length + " tasks" + (rows.length > state.shown ? " (the first " + state.shown + " shown)" : "");
      document.getElementById("more-tasks").hidden = rows.length <= state.shown;
    }
    draw();
  }
  function order(x, y, dir) {
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * dir;
  }

  // One episode: transcript beside the grid as it evolved ------------------------------------
  function events(record) {
    const transcript = Array.isArray(record.transcript) ? record.transcript : [];
    const out = [];
    if (transcript.length && transcript[0] && typeof transcript[0] === "object" && "role" in transcript[0]) {
      const names = {};
      let turn = 0;
      for (const message of transcript) {
        if (!message || typeof message !== "object") continue;
        if (message.role === "assistant") {
          turn += 1;
          const said = [message.reasoning_content, message.reasoning, message.content].filter((t) => typeof t === "string" && t).join("\n\n");
          out.push({ who: "model (turn " + turn + ")", body: said, turn: turn });
          for (const call of message.tool_calls || []) {
            const fn = (call && call.function) || {};
            names[call && call.id] = fn.name;
            out.push({ who: "call", body: text(fn.name) + "(" + text(fn.arguments) + ")", turn: turn });
          }
        } else if (message.role === "tool") {
          out.push(result(names[message.tool_call_id], parse(message.content), turn));
        } else if (message.role === "user" && typeof message.content === "string" && message.content.startsWith("<tool_response>")) {
          const inner = parse(message.content.replace(/^<tool_response>\s*/, "").replace(/\s*<\/tool_response>\s*$/, "")) || {};
          out.push(result(inner.name, inner.result, turn));
        } else {
          out.push({ who: message.role, body: text(message.content), turn: turn, prompt: turn === 0 });
        }
      }
    } else {
      transcript.forEach((entry, index) => {
        if (!entry || typeof entry !== "object") return;
        const event = result(entry.tool, entry.result, null, index + 1);
        event.call = text(entry.tool) + "(" + JSON.stringify(entry.arguments) + ")";
        out.push(event);
      });
    }
    return out;
  }
  function parse(content) {
    try { return JSON.parse(content); } catch (error) { return { status: "?", message: text(content) }; }
  }
  function result(tool, value, turn, step) {
    const res = value && typeof value === "object" ? value : {};
    const event = { who: "result", status: text(res.status), body: text(res.message), data: res.data, turn: turn, step: step, tool: tool };
    const data = res.data;
    if (tool === "set_slot" && res.status === "ok" && data && Number.isInteger(data.row) && Number.isInteger(data.col)) {
      event.set = [data.row, data.col, data.id === null || data.id === undefined ? null : String(data.id)];
    }
    return event;
  }

  async function openEpisode(row) {
    current = row.key;
    document.querySelectorAll("#episodes tbody tr").forEach((tr) => tr.classList.toggle("open", tr.getAttribute("data-episode") === row.key));
    const box = document.getElementById("episode");
    box.hidden = false;
    box.replaceChildren(el("p", { class: "note", text: "loading the transcript of " + row.task_id + "..." }));
    if (location.hash !== "#episode=" + row.key) history.replaceState(null, "", "#episode=" + row.key);
    let record = null, task = null, problem = "";
    try { task = row.task ? await load("task", row.task) : null; } catch (error) { problem = "task: " + error.message; }
    try {
      const packed = row.has_transcript ? await load("episode", row.key) : null;
      record = packed ? await gunzip(packed) : null;
    } catch (error) { problem = (problem ? problem + "; " : "") + "transcript: " + error.message; }
    if (current !== row.key) return;
    renderEpisode(box, row, task, record, problem);
  }

  function renderEpisode(box, row, task, record, problem) {
    const head = el("div", { class: "episode-head" },
      el("h3", { text: row.task_id + " - " + row.run + " (failure rate " + row.failure_rate + ", trial " + row.trial + ")" }),
      el("button", { type: "button", id: "close-episode", text: "close" }));
    head.querySelector("button").addEventListener("click", () => { box.hidden = true; current = null; history.replaceState(null, "", "#"); renderRows(); });
    const facts = el("div", { class: "facts" });
    for (const [key, label] of S.episode_facts) facts.appendChild(el("span", {}, el("b", { text: label + ": " }), text(row[key])));
    box.replaceChildren(head, facts);
    if (problem) box.appendChild(el("p", { class: "warn", text: problem }));
    if (row.transcript_note) box.appendChild(el("p", { class: "note", text: row.transcript_note }));
    const list = record ? events(record) : [];
    const split = el("div", { class: "split" });
    const pane = el("div", { class: "transcript", id: "transcript" });
    const state = el("div", { class: "state" });
    split.append(pane, state);
    box.appendChild(split);
    let grids = [], truth = null;
    const sane = task && Array.isArray(task.grid) && task.grid.every(Array.isArray) && Array.isArray(task.slots);
    const base = sane ? task.grid.map((r) => r.slice()) : null;
    // the grid after every event (only set_slot results change it)
    let grid = base ? base.map((r) => r.slice()) : null;
    for (const event of list) {
      if (event.set && grid && event.set[0] >= 0 && event.set[1] >= 0 && grid[event.set[0]] && event.set[1] < grid[event.set[0]].length) {
        grid = grid.map((r) => r.slice());
        grid[event.set[0]][event.set[1]] = event.set[2];
      }
      grids.push(grid);
    }
    const slider = el("input", { type: "range", min: "0", max: String(Math.max(list.length - 1, 0)), value: String(Math.max(list.length - 1, 0)), id: "step" });
    const label = el("span", { class: "note" });
    const board = el("div", { id: "board" });
    const reveal = el("button", { type: "button", id: "reveal", text: "Reveal the truth" });
    const truthNote = el("p", { class: "note", text: "The truth stays hidden until you ask for it." });
    state.append(el("div", {}, "after event ", slider, " ", label), board, reveal, truthNote);
    if (!base) { board.appendChild(el("p", { class: "note", text: "The task file was not found or cannot be read: no grid." })); reveal.hidden = true; }
    const nodes = [];
    let shownEvents = 0;
    function addEvents(count) {
      const end = Math.min(list.length, shownEvents + count);
      for (let k = shownEvents; k < end; k++) {
        const event = list[k];
        const who = event.who === "result" ? "-> " + event.status : event.who;
        const node = el("div", { class: "event", "data-index": String(k) });
        if (event.call) node.append(el("span", { class: "note", text: "#" + event.step + " " }), el("span", { class: "call", text: event.call }), " ");
        node.appendChild(el("span", { class: "who " + (event.who === "result" ? "status-" + event.status : ""), text: who }));
        const byStep = event.step !== undefined && event.who === "result";
        const byTurn = event.step === undefined && event.who.startsWith("model");
        if ((byStep && event.step === row.informed_step) || (byTurn && event.turn === row.informed_turn)) {
          node.appendChild(el("span", { class: "marker informed", text: byStep ? "enough information from here" : "enough information by the end of this turn" }));
        }
        if (byStep && event.step === row.first_wrong_step) node.appendChild(el("span", { class: "marker wrong", text: "first wrong set_slot" }));
        const body = event.body + (event.data !== undefined && event.data !== null ? "\n" + JSON.stringify(event.data) : "");
        if (event.prompt) node.appendChild(el("details", { class: "prompt" }, el("summary", { text: "prompt" }), el("pre", { text: body })));
        else if (body) node.appendChild(el("pre", { text: body }));
        node.addEventListener("click", () => select(k));
        nodes.push(node);
        pane.appendChild(node);
      }
      shownEvents = end;
      if (shownEvents < list.length) {
        const more = el("button", { type: "button", class: "more-events", text: "show " + Math.min(500, list.length - shownEvents) + " more of " + (list.length - shownEvents) + " events" });
        more.addEventListener("click", () => { more.remove(); addEvents(500); });
        pane.appendChild(more);
      }
    }
    if (!record) pane.appendChild(el("p", { class: "note", text: "No transcript for this episode." }));
    addEvents(500);
    let at = list.length - 1;
    function drawBoard() {
      board.replaceChildren();
      const g = grids[at] || base;
      if (!g) return;
      const before = at > 0 ? grids[at - 1] || base : base;
      const hidden = new Set(task.slots.map((s) => (Array.isArray(s) ? s[0] + "," + s[1] : "")));
      const table = el("table", { class: "board" });
      g.forEach((r, i) => {
        const tr = el("tr");
        r.forEach((id, j) => {
          const isHidden = hidden.has(i + "," + j);
          const td = el("td", { class: isHidden ? "hidden" : "fixed", title: "(" + i + ", " + j + ")" }, id === null ? "" : String(id));
          if (isHidden && before && before[i][j] !== id) td.classList.add("changed");
          if (isHidden && truth) {
            const right = Array.isArray(truth.truth) && Array.isArray(truth.truth[i]) ? truth.truth[i][j] : undefined;
            td.classList.add(id === right ? "right" : "wrong");
            if (id !== right) td.appendChild(el("small", { text: String(right) }));
          }
          tr.appendChild(td);
        });
        table.appendChild(tr);
      });
      board.appendChild(table);
    }
    function select(k) {
      at = k;
      slider.value = String(k);
      label.textContent = list.length ? k + 1 + " of " + list.length : "none";
      nodes.forEach((node) => node.classList.remove("current"));
      if (nodes[k]) nodes[k].classList.add("current");
      drawBoard();
    }
    slider.addEventListener("input", () => select(Number(slider.value)));
    reveal.addEventListener("click", async () => {
      try {
        truth = await load("truth", row.task);
        truthNote.textContent = "Truth shown: green cells hold it, red ones show it below what was placed.";
        reveal.hidden = true;
        drawBoard();
      } catch (error) { truthNote.textContent = "The truth is not available: " + error.message; }
    });
    select(Math.max(list.length - 1, 0));
  }

  // Start -------------------------------------------------------------------------------------
  function start() {
    if (!S) { document.getElementById("subtitle").textContent = "data/summary.js is missing: build the folder again with gridbench view"; return; }
    document.getElementById("subtitle").textContent = S.title;
    const notes = document.getElementById("notes");
    for (const note of S.notes) notes.appendChild(el("p", { class: "note", text: note }));
    renderSuccess();
    renderDiagnostics();
    taskTable();
    renderFilters();
    renderHead();
    renderRows();
    document.getElementById("more").addEventListener("click", () => { shown += PAGE; renderRows(); });
    const wanted = /^#episode=([0-9a-f]{16})$/.exec(location.hash);
    const row = wanted && S.rows.find((r) => r.key === wanted[1]);
    if (row) openEpisode(row);
  }
  start();
})();
