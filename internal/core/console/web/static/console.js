// The console's one script: it follows a Turn's event stream (the API's
// Server-Sent Events, through the console's session), answers questions,
// sends active input, cancels, and lights the Turn's machines on their
// generated diagrams. Every request carries the session's CSRF token; the
// API key never reaches this page.
(function () {
  'use strict';

  // --- diagrams (every page) -------------------------------------------
  const svgs = {};

  function diagram(machine) {
    if (!svgs[machine]) {
      svgs[machine] = fetch('/console/diagrams/' + machine, { credentials: 'same-origin' }).then((r) => r.text());
    }
    return svgs[machine];
  }

  // draw puts the machine's generated SVG into fig, named by its caption.
  // The same machine may be drawn several times on a page: its IDs become
  // data-id, so no ID repeats and lookups stay per figure.
  async function draw(fig, machine) {
    const text = await diagram(machine);
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    const svg = document.importNode(doc.documentElement, true);
    svg.querySelectorAll('[id]').forEach((n) => { n.dataset.id = n.id; n.removeAttribute('id'); });
    svg.querySelectorAll('title').forEach((n) => n.remove());
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-labelledby', fig.querySelector('figcaption').id);
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    fig.append(svg);
  }

  function part(fig, id) { return fig.querySelector('[data-id="' + id + '"]'); }

  // light outlines the current state and thickens the transitions taken
  // (pairs of states: the arrows tr-<from>-<to>).
  function light(fig, state, transitions) {
    fig.querySelectorAll('.aw-current, .aw-taken, .aw-visited').forEach((n) => n.classList.remove('aw-current', 'aw-taken', 'aw-visited'));
    for (const [from, to] of transitions) {
      const tr = part(fig, 'tr-' + from + '-' + to);
      if (tr) tr.classList.add('aw-taken');
      const st = part(fig, 'state-' + from);
      if (st) st.classList.add('aw-visited');
    }
    const cur = part(fig, 'state-' + state);
    if (cur) cur.classList.add('aw-current');
    fig.dataset.state = state;
  }

  // A figure the server rendered with a machine and a state (a workspace
  // write on the Session page) gets its diagram with that state lit.
  document.querySelectorAll('figure[data-machine-view]').forEach(async (fig) => {
    await draw(fig, fig.dataset.machine);
    light(fig, fig.dataset.machineView, []);
  });

  const root = document.getElementById('turn');
  if (!root) return;
  const turnID = root.dataset.turn;
  const token = (document.querySelector('meta[name="csrf-token"]') || {}).content || '';

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const k of kids) e.append(k);
    return e;
  }

  async function api(method, path, body) {
    const r = await fetch('/console/api/' + path, {
      method,
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': token },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try { data = await r.json(); } catch (e) { /* no body */ }
    if (!r.ok) {
      const d = data || {};
      throw new Error((d.field ? d.field + ': ' : '') + (d.detail || d.error || 'HTTP ' + r.status));
    }
    return data;
  }

  const transcript = document.getElementById('transcript');
  const streamState = document.getElementById('stream-state');
  const stateEl = document.getElementById('turn-state');
  const questions = document.getElementById('questions');
  const inputs = document.getElementById('inputs');
  let live = false;
  const waitingQuestions = [];
  const messages = {};
  let lastMessage = null;

  function say(cls, text) {
    const p = el('p', { class: cls, text });
    transcript.append(p);
    return p;
  }

  function messageFor(itemID) {
    if (itemID && messages[itemID]) return messages[itemID];
    if (!itemID && lastMessage) return lastMessage;
    const p = el('p', { class: 'msg' });
    transcript.append(p);
    if (itemID) messages[itemID] = p;
    lastMessage = p;
    return p;
  }

  // --- questions ------------------------------------------------------
  function noQuestions() {
    if (!questions.querySelector('form')) {
      questions.replaceChildren(el('p', { class: 'none', text: 'None.' }));
    }
  }

  function showQuestion(type, d) {
    const id = d.interaction_id;
    if (document.getElementById('q-' + id)) return;
    const req = d.request || {};
    const title = el('p', { id: 'qt-' + id, class: 'qtitle' });
    const form = el('form', { id: 'q-' + id, class: 'question', 'aria-labelledby': 'qt-' + id, 'data-interaction': id });
    const status = el('p', { role: 'status', class: 'qstatus' });
    if (type === 'permission_request') {
      title.textContent = 'Permission for ' + (req.tool || 'a tool') + (req.title ? ': ' + req.title : '');
      form.append(title,
        el('button', { type: 'submit', name: 'decision', value: 'approve', text: 'Approve' }),
        el('button', { type: 'submit', name: 'decision', value: 'deny', text: 'Deny' }), status);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const approved = !ev.submitter || ev.submitter.value === 'approve';
        answer(form, status, { approved });
      });
    } else if (type === 'prompt_for_user_choice') {
      title.textContent = 'Question ' + (req.ask_id || '');
      form.append(title);
      (req.questions || []).forEach((q, qi) => {
        const fs = el('fieldset', {}, el('legend', { text: (q.header ? q.header + ': ' : '') + q.question }));
        (q.options || []).forEach((o, oi) => {
          const inputID = 'q-' + id + '-' + qi + '-' + oi;
          fs.append(el('div', { class: 'opt' },
            el('input', { type: q.multi_select ? 'checkbox' : 'radio', id: inputID, name: 'q' + qi, value: o.label, 'data-question': q.id }),
            el('label', { for: inputID, text: o.label + (o.description ? ' — ' + o.description : '') })));
        });
        form.append(fs);
      });
      form.append(el('button', { type: 'submit', name: 'decision', value: 'answer', text: 'Answer' }),
        el('button', { type: 'submit', name: 'decision', value: 'decline', text: 'Decline' }), status);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        if (ev.submitter && ev.submitter.value === 'decline') {
          answer(form, status, { cancelled: true });
          return;
        }
        const byQ = {};
        (req.questions || []).forEach((q) => { byQ[q.id] = []; });
        form.querySelectorAll('input:checked').forEach((i) => byQ[i.dataset.question].push(i.value));
        answer(form, status, { question_answers: Object.entries(byQ).map(([question_id, answers]) => ({ question_id, answers })) });
      });
    } else {
      title.textContent = 'Function call ' + (req.name || '') + ' ' + JSON.stringify(req.arguments || {});
      const out = el('textarea', { id: 'fr-' + id, rows: '2' });
      const ok = el('input', { type: 'checkbox', id: 'fs-' + id, checked: 'checked' });
      form.append(title, el('label', { for: 'fr-' + id, text: 'Result' }), out,
        el('div', {}, ok, el('label', { for: 'fs-' + id, text: 'Succeeded' })),
        el('button', { type: 'submit', text: 'Send result' }), status);
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const content = out.value ? [{ type: 'input_text', text: out.value }] : [];
        answer(form, status, { success: ok.checked, content });
      });
    }
    const none = questions.querySelector('.none');
    if (none) none.remove();
    questions.append(form);
  }

  async function answer(form, status, body) {
    form.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    status.textContent = 'sending…';
    try {
      const r = await api('POST', 'turns/' + turnID + '/interactions/' + form.dataset.interaction, body);
      status.textContent = 'answer sent (' + r.delivery_id + '), waiting for its receipt';
    } catch (e) {
      status.textContent = 'refused: ' + e.message;
      form.querySelectorAll('button').forEach((b) => { b.disabled = false; });
    }
  }

  function settleQuestion(d) {
    const i = waitingQuestions.findIndex((q) => q.d.interaction_id === d.interaction_id);
    if (i >= 0) waitingQuestions.splice(i, 1);
    const form = document.getElementById('q-' + d.interaction_id);
    if (form) form.remove();
    say('note', 'question ' + d.interaction_id + ': ' + d.outcome);
    noQuestions();
  }

  // --- inputs ---------------------------------------------------------
  function inputItem(id) {
    let li = document.getElementById('in-' + id);
    if (!li) {
      li = el('li', { id: 'in-' + id }, el('span', { class: 'itext' }), ' — ', el('span', { class: 'istate' }));
      inputs.append(li);
    }
    return li;
  }
  // An input's line only moves forward: the stream may report the
  // receipts before the request that stored the input has returned.
  const inputRank = { 'stored, waiting for delivery': 0, 'sent to the Runtime': 1, written: 2 };
  function inputState(id, state, text) {
    const li = inputItem(id);
    if (text !== undefined) li.querySelector('.itext').textContent = '“' + text + '”';
    const rank = (x) => (x in inputRank ? inputRank[x] : 3);
    if (li.dataset.state !== undefined && rank(state) < rank(li.dataset.state)) return;
    li.querySelector('.istate').textContent = state;
    li.dataset.state = state;
  }
  function inputText(input) {
    return (input || []).flatMap((m) => (m.content || []).map((c) => c.text || '')).join(' ');
  }

  document.getElementById('input-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const box = document.getElementById('input-text');
    const text = box.value;
    try {
      const r = await api('POST', 'turns/' + turnID + '/input', { input: [{ content: [{ type: 'input_text', text }] }] });
      inputState(r.input_id, 'stored, waiting for delivery', text);
      box.value = '';
    } catch (e) {
      inputState('error-' + Date.now(), 'refused: ' + e.message, text);
    }
  });

  document.getElementById('cancel-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = document.getElementById('cancel-state');
    try {
      await api('POST', 'turns/' + turnID + '/cancel');
      out.textContent = 'cancellation requested';
    } catch (e) {
      out.textContent = 'refused: ' + e.message;
    }
  });

  // --- machines -------------------------------------------------------
  const seen = {};
  let refreshing = null;
  let again = false;

  async function figureFor(inst) {
    const key = inst.machine + ':' + inst.key;
    let fig = document.querySelector('figure[data-inst="' + CSS.escape(key) + '"]');
    if (fig) return fig;
    fig = el('figure', { class: 'machine', 'data-inst': key, 'data-machine': inst.machine },
      el('figcaption', { id: 'cap-' + Object.keys(seen).length }));
    document.getElementById('machines').append(fig);
    seen[key] = { state: null, extra: [] };
    await draw(fig, inst.machine);
    return fig;
  }

  async function paint(inst) {
    const fig = await figureFor(inst);
    const key = inst.machine + ':' + inst.key;
    const mem = seen[key];
    // A state persisted rather than journaled: the moves this page saw.
    if (mem.state && mem.state !== inst.state && part(fig, 'tr-' + mem.state + '-' + inst.state)) {
      mem.extra.push([mem.state, inst.state]);
    }
    mem.state = inst.state;
    light(fig, inst.state, inst.transitions.concat(mem.extra));
    fig.querySelector('figcaption').textContent = inst.machine + (inst.key ? ' ' + inst.key : '') +
      ': ' + inst.state + (inst.settled ? ' (settled)' : '') + ' — ' + (inst.steps + mem.extra.length) + ' steps';
  }

  // The feed is read at most every quarter second however fast events
  // arrive: each read replays the Turn's journal on the server.
  let lastRefresh = 0;
  let scheduled = false;
  function refreshMachines() {
    if (refreshing) { again = true; return; }
    const wait = lastRefresh + 250 - Date.now();
    if (wait > 0) {
      if (!scheduled) { scheduled = true; setTimeout(() => { scheduled = false; refreshMachines(); }, wait); }
      return;
    }
    refreshing = (async () => {
      try {
        const r = await fetch('/console/turns/' + turnID + '/machines', { credentials: 'same-origin' });
        if (r.ok) {
          const m = await r.json();
          showStatus(m.status);
          for (const inst of m.instances) await paint(inst);
        }
      } finally {
        refreshing = null;
        lastRefresh = Date.now();
        if (again) { again = false; refreshMachines(); }
      }
    })();
  }

  // --- the event stream -----------------------------------------------
  const handlers = {
    placement: (d) => { document.getElementById('waiting').textContent = d.reason + ': ' + d.detail; },
    output_message: (d) => { if (d.status === 'in_progress') { lastMessage = null; messageFor(d.id); } },
    delta: (d) => { messageFor(d.item_id).append(d.delta); },
    thinking: (d) => { say('thinking', 'thinking: ' + d.text); lastMessage = null; },
    tool_call: (d) => {
      const p = say('tool', 'tool ' + d.name + ' (' + d.stage + ')' + (d.args ? ' ' + JSON.stringify(d.args) : '') + (d.result ? ' → ' + JSON.stringify(d.result) : ''));
      if (d.observation) p.append(el('code', { text: ' observation ' + JSON.stringify(d.observation) }));
      lastMessage = null;
    },
    usage: (d) => { document.getElementById('usage').textContent = JSON.stringify(d); },
    done: (d) => { say('done', 'done'); if (d.usage) document.getElementById('usage').textContent = JSON.stringify(d.usage); },
    permission_request: (d) => queueQuestion('permission_request', d),
    prompt_for_user_choice: (d) => queueQuestion('prompt_for_user_choice', d),
    function_call: (d) => queueQuestion('function_call', d),
    interaction_outcome: settleQuestion,
    cancel_requested: () => { document.getElementById('cancel-state').textContent = 'cancellation requested'; },
    prompt_steer: (d) => inputState(d.input_id, 'sent to the Runtime', inputText(d.input)),
    prompt_steer_ack: (d) => inputState(d.input_id, d.accepted ? 'accepted' : (d.written ? 'written' : 'rejected' + (d.error_code ? ' (' + d.error_code + ')' : ''))),
    input_outcome: (d) => inputState(d.input_id, d.outcome),
    observation: (d) => say('error', 'observation: ' + (d.reason || JSON.stringify(d))),
  };

  function showStatus(s) {
    if (!s || !s.state) return;
    const text = s.state + (s.reason ? ' (' + s.reason + ')' : '');
    if (stateEl.textContent !== text) stateEl.textContent = text;
    stateEl.className = 'state state-' + s.state;
    if (s.state !== 'queued') document.getElementById('waiting').textContent = '—';
  }

  function queueQuestion(type, d) {
    waitingQuestions.push({ type, d });
    if (live) showQuestion(type, d);
  }

  const es = new EventSource('/console/api/turns/' + turnID + '/events');
  for (const [type, fn] of Object.entries(handlers)) {
    es.addEventListener(type, (e) => { fn(JSON.parse(e.data)); refreshMachines(); });
  }
  es.addEventListener('error', (e) => {
    if (e.data === undefined) { // the connection, not an event of the stream
      streamState.textContent = es.readyState === EventSource.CLOSED
        ? 'the event stream closed; reload the page (sign in again if the key was revoked)'
        : 'reconnecting to the event stream…';
      return;
    }
    // A Run's error frame ({"error": text, ...}), or the stream's own
    // {"error":"credential_revoked"}, after which the reconnection is
    // refused and the connection's error above says so.
    const d = JSON.parse(e.data);
    say('error', 'error: ' + (d.error || JSON.stringify(d)));
    refreshMachines();
  });
  es.addEventListener('live', () => {
    live = true;
    streamState.textContent = 'live';
    waitingQuestions.forEach((q) => showQuestion(q.type, q.d));
  });
  es.addEventListener('status', (e) => {
    showStatus(JSON.parse(e.data));
    streamState.textContent = 'the Turn has ended';
    es.close();
    waitingQuestions.length = 0;
    questions.querySelectorAll('form').forEach((f) => f.remove());
    noQuestions();
    refreshMachines();
  });
  es.addEventListener('end', (e) => {
    const d = JSON.parse(e.data);
    streamState.textContent = d.reason === 'shutdown' ? 'Core is shutting down; reconnecting…' : 'resuming the event stream…';
  });
  refreshMachines();
})();
