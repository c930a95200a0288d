"""The playground page served at ``GET /``: type texts and labels, see the scores, and under them the answer's notes
(a text longer than the model reads, named by position). Each table has a header row (the raw score, of the model's
score type, and the probability); in multi-label answers a label that did not pass is greyed with a hatched bar, so
that a high probability is not read as chosen. One self-contained HTML file (no external scripts, styles or
fonts), calling ``POST /classify`` with ``fetch``; what the answer holds is shown as text, never as markup.

Query parameters fill the form, and ``run=1`` submits it on load (``/?text=...&labels=a,b&run=1``): a link
that shows a result, and how the headless-browser test drives the page.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter()

PLAYGROUND_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>zstc playground</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 860px; padding: 0 1rem; color: #1d2330; }
  h1 { font-size: 1.4rem; margin-bottom: .2rem; }
  #model { color: #5a6478; margin-top: 0; }
  label { display: block; font-weight: 600; margin-top: .9rem; }
  textarea, input[type=text], input[type=password], input[type=number] { width: 100%; box-sizing: border-box; padding: .45rem;
    border: 1px solid #b9c0cf; border-radius: 6px; font: inherit; }
  .row { display: flex; gap: 1rem; align-items: end; }
  .row > div { flex: 1; }
  button { margin-top: 1rem; padding: .55rem 1.4rem; border: 0; border-radius: 6px; background: #2f5bd3; color: white; font: inherit; cursor: pointer; }
  #error { color: #b3261e; margin-top: 1rem; white-space: pre-wrap; }
  .result { margin-top: 1.4rem; border-top: 1px solid #dde2ec; padding-top: .8rem; }
  .text { font-style: italic; margin-bottom: .4rem; }
  .winner { font-weight: 700; }
  table { border-collapse: collapse; width: 100%; }
  td { padding: .18rem .4rem; vertical-align: middle; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; width: 6rem; }
  td.barcell { width: 45%; }
  .bar { height: .8rem; background: #2f5bd3; border-radius: 3px; min-width: 1px; }
  th { padding: .18rem .4rem; text-align: left; font-size: .8rem; font-weight: 600; color: #5a6478; }
  th.num { text-align: right; }
  tr.passed td:first-child::after { content: " \\2713"; color: #1b7f3b; }
  tr.unchosen td { color: #8a93a6; }
  tr.unchosen .bar { background: repeating-linear-gradient(45deg, #c9ceda 0 4px, #e3e6ee 4px 8px); }
  small { color: #5a6478; }
  #notes { margin-top: 1.2rem; color: #5a6478; }
  #notes p { margin: .2rem 0; }
</style>
</head>
<body data-state="idle">
<h1>zstc playground</h1>
<p id="model">zero-shot classification</p>
<form id="form">
  <label for="texts">Texts <small>(one per line)</small></label>
  <textarea id="texts" rows="4">The striker scored twice in the second half.</textarea>
  <label for="labels">Labels <small>(comma-separated)</small></label>
  <input id="labels" type="text" value="sports, economy, politics">
  <div class="row">
    <div><label for="template">Template <small>(optional, one {})</small></label>
      <input id="template" type="text" value="This text is about {}."></div>
    <div><label for="threshold">Threshold <small>(multi-label; empty: default)</small></label>
      <input id="threshold" type="number" step="any"></div>
  </div>
  <div class="row">
    <div><label><input id="multi" type="checkbox"> multi-label</label></div>
    <div><label for="key">API key <small>(if the server needs one)</small></label>
      <input id="key" type="password" autocomplete="off"></div>
  </div>
  <button type="submit">Classify</button>
</form>
<div id="error"></div>
<div id="results"></div>
<div id="notes"></div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);

function cell(row, text, className) {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function render(data) {
  const out = $("results");
  out.replaceChildren();
  for (const result of data.results) {
    const box = document.createElement("div");
    box.className = "result";
    const text = document.createElement("div");
    text.className = "text";
    text.textContent = result.text;
    const answer = document.createElement("div");
    answer.className = "winner";
    answer.textContent = data.multi_label ? "labels: " + result.labels.join(", ") : "label: " + result.label;
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const [title, className] of [["label", ""], ["score (" + data.score_type + ")", "num"], ["probability", "num"], ["", ""]]) {
      const th = document.createElement("th");
      th.textContent = title;
      if (className) th.className = className;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const s of result.scores) {
      const row = body.insertRow();
      // Multi-label: a label that did not pass is greyed, its bar hatched, whatever its probability.
      if (data.multi_label) row.className = s.passed ? "passed" : "unchosen";
      cell(row, s.label);
      cell(row, s.score.toFixed(4), "num");
      cell(row, (100 * s.probability).toFixed(1) + "%", "num");
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.style.width = Math.max(0, Math.min(100, 100 * s.probability)).toFixed(1) + "%";
      cell(row, "", "barcell").appendChild(bar);
    }
    box.append(text, answer, table);
    out.appendChild(box);
  }
  // What applies to the request's own texts (one the model cut to its token limit), in the server's words.
  $("notes").replaceChildren(...(data.notes || []).map((note) => {
    const line = document.createElement("p");
    line.className = "note";
    line.textContent = note;
    return line;
  }));
}

async function classify(event) {
  if (event) event.preventDefault();
  document.body.dataset.state = "running";
  $("error").textContent = "";
  const body = {
    texts: $("texts").value.split("\\n").filter((t) => t.trim()),
    labels: $("labels").value.split(",").map((l) => l.trim()).filter((l) => l),
    multi_label: $("multi").checked,
  };
  if ($("template").value.trim()) body.template = $("template").value;
  if (body.multi_label && $("threshold").value !== "") body.threshold = Number($("threshold").value);
  const headers = { "content-type": "application/json" };
  if ($("key").value) headers.authorization = "Bearer " + $("key").value;
  try {
    const response = await fetch("classify", { method: "POST", headers, body: JSON.stringify(body) });
    const data = await response.json();
    if (!response.ok) throw new Error(response.status + " " + (data.error || JSON.stringify(data)));
    $("model").textContent = data.model + " (" + data.family + ", scores: " + data.score_type + ")";
    render(data);
    document.body.dataset.state = "done";
  } catch (error) {
    $("error").textContent = String(error.message || error);
    document.body.dataset.state = "error";
  }
}

$("form").addEventListener("submit", classify);
const query = new URLSearchParams(location.search);
if (query.has("text")) $("texts").value = query.getAll("text").join("\\n");
if (query.has("labels")) $("labels").value = query.get("labels");
if (query.has("template")) $("template").value = query.get("template");
if (query.get("multi_label") === "1") $("multi").checked = true;
if (query.get("run") === "1") classify();
</script>
</body>
</html>
"""


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def playground() -> HTMLResponse:
    """The playground page (no model work: the page calls ``POST /classify``)."""
    return HTMLResponse(PLAYGROUND_HTML)


router.head("/", include_in_schema=False)(playground)
