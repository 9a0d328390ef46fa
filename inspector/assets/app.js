// The inspector page. Every value shown comes from a delivery, which anyone
// can send: the DOM is built with createElement and textContent only (the
// page's Content-Security-Policy requires Trusted Types, so an HTML string
// sink would throw), links are fragments the page builds itself, and
// invisible or direction-changing characters are shown as escapes.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const canRedeliver = document.querySelector('meta[name="redeliver"]').content === 'on';
  const PAGE = 50;
  const MAX_ROWS = 1000;
  const MAX_TREE = 2 << 20; // bytes of payload rendered as a tree; larger ones show raw

  const state = {
    filter: { event: '', status: '', tenant: '', q: '' },
    next: '',
    trimmed: false,
    rows: new Map(), // key -> tr
    pending: [],
    detailKey: null,
    detail: null,
    reloadOnOpen: false,
  };

  // Characters that render invisibly or reorder text (zero-width, bidi
  // controls, BOM, other C0/C1 controls but tab and newline) are shown as \u escapes.
  const hidden = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\ufff9-\ufffb]/g;
  const show = (s) => String(s == null ? '' : s).replace(hidden, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = show(text);
    return e;
  }

  async function call(url, init) {
    const r = await fetch(url, init);
    let body = null;
    try { body = await r.json(); } catch (_) { body = null; }
    if (!r.ok) throw new Error((body && body.error) || r.status + ' ' + r.statusText);
    return body;
  }

  function query(extra) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(extra)) if (v) p.set(k, v);
    return p.toString();
  }

  function fmtTime(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    const p = (n, w) => String(n).padStart(w || 2, '0');
    return p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()) + '.' + p(d.getMilliseconds(), 3);
  }
  function fmtDur(ms) {
    if (!ms) return '';
    if (ms < 1) return Math.round(ms * 1000) + ' µs';
    if (ms < 1000) return ms.toFixed(1) + ' ms';
    return (ms / 1000).toFixed(2) + ' s';
  }
  const eventName = (r) => r.action ? r.name + '.' + r.action : r.name;
  const hrefOf = (key) => '#' + encodeURIComponent(key);

  // ---- list ----

  function matches(r) {
    const f = state.filter;
    if (f.event) {
      const i = f.event.indexOf('.');
      const ev = i < 0 ? f.event : f.event.slice(0, i);
      const act = i < 0 ? '' : f.event.slice(i + 1);
      if (ev && r.name !== ev) return false;
      if (act && r.action.toLowerCase() !== act.toLowerCase()) return false;
    }
    if (f.status && r.status !== f.status) return false;
    if (f.tenant && r.tenant !== f.tenant) return false;
    if (f.q) {
      const q = f.q.toLowerCase();
      return [r.id, r.tenant, r.name + '.' + r.action, r.repository, r.sender, r.statusText].some((s) => String(s || '').toLowerCase().includes(q));
    }
    return true;
  }

  function rowEl(r) {
    const tr = el('tr');
    tr.dataset.key = r.key;
    tr.dataset.status = r.status;
    tr.append(el('td', 'mono', fmtTime(r.receivedAt)));
    const name = el('td');
    const a = el('a', 'open', eventName(r) || '(no event)');
    a.href = hrefOf(r.key);
    name.append(a);
    tr.append(name);
    tr.append(el('td', 'id', (r.tenant ? r.tenant + ' / ' : '') + (r.id || '(none)')));
    tr.append(el('td', '', r.repository));
    tr.append(el('td', '', r.sender));
    tr.append(el('td', r.verified ? 'sig-ok' : 'sig-bad', r.verified ? '✓ valid' : '✗ unverified'));
    const st = el('td');
    st.append(el('span', 'pill st-' + r.status.replace(/[^a-z]/g, ''), r.statusText));
    tr.append(st);
    tr.append(el('td', 'num mono', fmtDur(r.durationMs)));
    for (const td of tr.children) td.title = td.textContent;
    const at = new Date(r.receivedAt);
    if (!isNaN(at)) tr.firstChild.title = at.toISOString();
    return tr;
  }

  function setEmpty() {
    $('empty').hidden = state.rows.size > 0;
    $('more').hidden = !state.next && !state.trimmed;
    $('more').textContent = state.trimmed ? 'Reload the list' : 'Older deliveries';
  }

  async function loadList(append) {
    const f = state.filter;
    const qs = query({ name: f.event, status: f.status, tenant: f.tenant, q: f.q, limit: String(PAGE), before: append ? state.next : '' });
    let body;
    try {
      body = await call('api/deliveries?' + qs);
    } catch (e) {
      live('down', 'cannot list: ' + e.message);
      return;
    }
    const tb = $('tbody');
    if (!append) {
      tb.replaceChildren();
      state.rows.clear();
      state.trimmed = false;
    }
    for (const r of body.rows) {
      if (state.rows.has(r.key)) continue;
      const tr = rowEl(r);
      state.rows.set(r.key, tr);
      tb.append(tr);
    }
    state.next = body.next;
    setEmpty();
    document.body.dataset.loaded = String(Date.now());
  }

  // Rows from the stream are applied once per frame, so that a burst of
  // deliveries costs one layout.
  function queueRow(r) {
    state.pending.push(r);
    if (state.pending.length === 1) requestAnimationFrame(flushRows);
    if (state.detailKey === r.key) refreshDetailSoon();
  }

  function flushRows() {
    const batch = state.pending;
    state.pending = [];
    const tb = $('tbody');
    for (const r of batch) {
      const old = state.rows.get(r.key);
      if (old) {
        if (matches(r)) {
          const tr = rowEl(r);
          old.replaceWith(tr);
          state.rows.set(r.key, tr);
        } else {
          old.remove();
          state.rows.delete(r.key);
        }
        continue;
      }
      if (!matches(r)) continue;
      const tr = rowEl(r);
      tr.classList.add('fresh');
      state.rows.set(r.key, tr);
      tb.prepend(tr);
    }
    while (state.rows.size > MAX_ROWS) {
      const last = tb.lastElementChild;
      state.rows.delete(last.dataset.key);
      last.remove();
      state.trimmed = true;
    }
    setEmpty();
  }

  function readFilters() {
    state.filter = { event: $('f-event').value.trim(), status: $('f-status').value, tenant: $('f-tenant').value.trim(), q: $('f-q').value.trim() };
  }
  let filterTimer = 0;
  function onFilter() {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => { readFilters(); loadList(false); }, 150);
  }

  // ---- live stream ----

  function live(st, text) {
    const l = $('live');
    l.dataset.state = st;
    l.textContent = text;
  }

  function connect() {
    const es = new EventSource('api/events');
    es.addEventListener('open', () => {
      live('live', 'live');
      if (state.reloadOnOpen) {
        state.reloadOnOpen = false;
        loadList(false);
      }
    });
    es.addEventListener('row', (ev) => {
      let r;
      try { r = JSON.parse(ev.data); } catch (_) { return; }
      queueRow(r);
    });
    es.addEventListener('dropped', () => {
      live('down', 'fell behind; reloading…');
      state.reloadOnOpen = true;
    });
    es.addEventListener('error', () => {
      live('down', 'reconnecting…');
      state.reloadOnOpen = true;
    });
  }

  // ---- detail ----

  function dl(pairs) {
    const d = $('d-summary');
    d.replaceChildren();
    for (const [k, v, cls] of pairs) {
      if (v === '' || v == null) continue;
      d.append(el('dt', '', k), el('dd', cls || '', v));
    }
  }

  let detailTimer = 0;
  function refreshDetailSoon() {
    clearTimeout(detailTimer);
    detailTimer = setTimeout(() => { if (state.detailKey) loadDetail(state.detailKey, true); }, 100);
  }

  async function loadDetail(key, keepView) {
    let d;
    try {
      d = await call('api/delivery?' + query({ key }));
    } catch (e) {
      $('d-title').textContent = show(e.message);
      $('d-summary').replaceChildren();
      return;
    }
    if (state.detailKey !== key) return;
    const first = !keepView || !state.detail || state.detail.payload !== d.payload;
    state.detail = d;
    $('d-title').textContent = show(eventName(d) || '(no event)');
    dl([
      ['Delivery', d.id || '(none)', 'mono'],
      ['Received', d.receivedAt ? new Date(d.receivedAt).toISOString() : '', 'mono'],
      ['Status', d.statusText, 'st-' + d.status],
      ['Answered', d.httpStatus ? String(d.httpStatus) : ''],
      ['Signature', d.verified ? '✓ valid' : '✗ unverified', d.verified ? 'sig-ok' : 'sig-bad'],
      ['Reason', d.reason, 'bad'],
      ['Repository', d.repository],
      ['Sender', d.sender],
      ['Go type', d.typeName, 'mono'],
      ['Payload', d.verified ? d.size + ' bytes' : 'not kept (the request was not verified)'],
    ]);
    $('a-replay').disabled = !d.canReplay;
    $('a-retry').disabled = !d.canRetry;
    $('a-redeliver').hidden = !canRedeliver;
    $('a-redeliver').disabled = !d.canRedeliver;
    const ol = $('d-attempts');
    ol.replaceChildren();
    for (const a of d.attemptList || []) {
      const li = el('li');
      li.dataset.attempt = String(a.number);
      li.append(el('span', '', 'attempt ' + a.number + ' · ' + fmtTime(a.start) + ' · ' + (fmtDur(a.durationMs) || 'running')));
      li.append(el('span', a.error ? 'bad' : 'sig-ok', a.error ? (a.final ? ' · failed, final: not retried' : ' · failed') : (a.durationMs ? ' · ok' : '')));
      if (a.error) li.append(el('pre', 'err', a.error));
      if (a.stack) {
        const det = el('details');
        det.append(el('summary', '', 'panic stack'), el('pre', 'stack', a.stack));
        li.append(det);
      }
      ol.append(li);
    }
    if (!ol.children.length) ol.append(el('li', 'empty', d.status === 'rejected' || d.status === 'duplicate' ? 'no handler ran' : 'none yet'));
    const hd = $('d-headers');
    hd.replaceChildren();
    for (const [k, v] of d.headers || []) {
      const tr = el('tr');
      tr.append(el('th', '', k), el('td', '', v));
      hd.append(tr);
    }
    $('d-send').textContent = show(d.send);
    $('d-curl').textContent = show(d.curl);
    $('d-send').hidden = !d.send;
    $('d-curl').hidden = !d.curl;
    $('p-download').href = 'api/payload?' + query({ key });
    $('p-download').hidden = !d.verified;
    if (first) renderPayload(d);
  }

  // ---- payload tree ----

  let treeValue;
  function renderPayload(d) {
    $('p-raw').textContent = show(d.payload);
    const tree = $('p-tree');
    tree.replaceChildren();
    $('p-hits').textContent = '';
    $('p-search').value = '';
    treeValue = undefined;
    if (!d.payload) {
      tree.append(el('span', 'empty', 'no payload'));
      return;
    }
    if (d.truncated || d.payload.length > MAX_TREE) {
      tree.append(el('span', 'empty', d.truncated
        ? 'payload of ' + d.size + ' bytes: Raw shows its first ' + d.payload.length + '; Download has it whole'
        : 'payload too large for a tree: see Raw'));
      setRaw(true);
      return;
    }
    try {
      treeValue = JSON.parse(d.payload);
    } catch (e) {
      tree.append(el('span', 'bad', 'not JSON: ' + e.message));
      return;
    }
    tree.append(node(null, treeValue, 0));
    setRaw(false);
  }

  // node renders one value; an object's or array's members are rendered when
  // it is first opened, so that a large payload opens fast.
  function node(key, value, depth) {
    if (value !== null && typeof value === 'object') {
      const isArr = Array.isArray(value);
      const det = el('details');
      const sum = el('summary');
      if (key !== null) sum.append(el('span', 'k', key), el('span', 'p', ': '));
      const n = isArr ? value.length : Object.keys(value).length;
      sum.append(el('span', 'meta', isArr ? '[' + n + ']' : '{' + n + '}'));
      det.append(sum);
      det._value = value;
      det._depth = depth;
      det.addEventListener('toggle', () => { if (det.open) fill(det); });
      if (depth < 2) { det.open = true; fill(det); }
      return det;
    }
    const leaf = el('div', 'leaf');
    if (key !== null) leaf.append(el('span', 'k', key), el('span', 'p', ': '));
    const t = value === null ? 'null' : typeof value;
    leaf.append(el('span', 'v ' + t, JSON.stringify(value)));
    return leaf;
  }

  function fill(det) {
    if (det._filled) return;
    det._filled = true;
    const box = el('div', 'children');
    const v = det._value;
    const entries = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
    for (const [k, x] of entries) box.append(node(k, x, det._depth + 1));
    det.append(box);
  }

  function fillAll(root) {
    const stack = [...root.querySelectorAll('details')];
    while (stack.length) {
      const d = stack.pop();
      if (!d._filled) {
        fill(d);
        stack.push(...d.querySelectorAll(':scope > .children > details'));
      }
    }
  }

  function setAll(open) {
    const tree = $('p-tree');
    if (open) fillAll(tree);
    for (const d of tree.querySelectorAll('details')) d.open = open;
    const top = tree.querySelector('details');
    if (top) top.open = true;
  }

  let searchTimer = 0;
  function searchPayload() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      const tree = $('p-tree');
      const q = $('p-search').value.trim().toLowerCase();
      for (const h of tree.querySelectorAll('.hit')) h.classList.remove('hit');
      if (!q) { $('p-hits').textContent = ''; return; }
      fillAll(tree);
      let n = 0;
      let firstHit = null;
      for (const s of tree.querySelectorAll('.k, .v')) {
        if (!s.textContent.toLowerCase().includes(q)) continue;
        n++;
        s.classList.add('hit');
        if (!firstHit) firstHit = s;
        for (let p = s.parentElement; p && p !== tree; p = p.parentElement) if (p.tagName === 'DETAILS') p.open = true;
      }
      $('p-hits').textContent = n + (n === 1 ? ' match' : ' matches');
      if (firstHit) firstHit.scrollIntoView({ block: 'nearest' });
    }, 120);
  }

  function setRaw(raw) {
    $('p-raw').hidden = !raw;
    $('p-tree').hidden = raw;
    $('p-toggle').textContent = raw ? 'Tree' : 'Raw';
    $('p-toggle').setAttribute('aria-pressed', String(raw));
  }

  // ---- actions ----

  async function act(name) {
    const d = state.detail;
    if (!d) return;
    const res = $('a-result');
    res.className = '';
    res.textContent = name + '…';
    try {
      const body = await call('api/' + name + '?' + query({ id: d.id }), { method: 'POST', headers: { 'X-CSRF-Token': csrf } });
      res.textContent = show(name + ': ' + (body.result === 'ok' ? 'done' : 'handlers failed: ' + (body.error || '')));
      res.className = body.result === 'ok' ? 'sig-ok' : 'bad';
    } catch (e) {
      res.textContent = show(name + ': ' + e.message);
      res.className = 'bad';
    }
    loadDetail(d.key, true);
  }

  // ---- views ----

  function route() {
    const h = location.hash.slice(1);
    let key = '';
    try { key = decodeURIComponent(h); } catch (_) { key = ''; }
    if (key.startsWith('d:') || key.startsWith('r:')) {
      state.detailKey = key;
      state.detail = null;
      // Nothing of the previous delivery stays while this one loads.
      for (const id of ['d-title', 'a-result', 'd-send', 'd-curl', 'p-raw', 'p-hits']) $(id).textContent = '';
      for (const id of ['d-summary', 'd-attempts', 'd-headers', 'p-tree']) $(id).replaceChildren();
      $('list-view').hidden = true;
      $('detail-view').hidden = false;
      loadDetail(key, false).then(() => $('back').focus());
    } else {
      const back = state.detailKey;
      state.detailKey = null;
      $('detail-view').hidden = true;
      $('list-view').hidden = false;
      const tr = back && state.rows.get(back);
      if (tr) tr.querySelector('a.open').focus();
    }
  }

  function moveFocus(step) {
    const links = [...document.querySelectorAll('#tbody a.open')];
    if (!links.length) return;
    let i = links.indexOf(document.activeElement);
    i = i < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, i + step));
    links[i].focus();
    links[i].scrollIntoView({ block: 'nearest' });
  }

  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
    if (e.key === 'Escape') {
      if (typing) { t.blur(); return; }
      if (state.detailKey) { location.hash = ''; e.preventDefault(); }
      return;
    }
    if (typing) return;
    const inDetail = !!state.detailKey;
    if (e.key === '/') {
      e.preventDefault();
      (inDetail ? $('p-search') : $('f-q')).focus();
    } else if (!inDetail && (e.key === 'j' || e.key === 'ArrowDown')) {
      e.preventDefault(); moveFocus(1);
    } else if (!inDetail && (e.key === 'k' || e.key === 'ArrowUp')) {
      e.preventDefault(); moveFocus(-1);
    } else if (inDetail && e.key === 'r' && !$('a-replay').disabled) {
      e.preventDefault(); act('replay');
    }
  });

  $('filters').addEventListener('submit', (e) => e.preventDefault());
  $('f-event').addEventListener('input', onFilter);
  $('f-tenant').addEventListener('input', onFilter);
  $('f-status').addEventListener('change', onFilter);
  $('f-q').addEventListener('input', onFilter);
  $('more').addEventListener('click', () => loadList(!state.trimmed));
  $('a-replay').addEventListener('click', () => act('replay'));
  $('a-retry').addEventListener('click', () => act('retry'));
  $('a-redeliver').addEventListener('click', () => act('redeliver'));
  $('p-search').addEventListener('input', searchPayload);
  $('p-expand').addEventListener('click', () => setAll(true));
  $('p-collapse').addEventListener('click', () => setAll(false));
  $('p-toggle').addEventListener('click', () => setRaw(!$('p-tree').hidden));
  $('p-copy').addEventListener('click', async () => {
    const res = $('a-result');
    try {
      await navigator.clipboard.writeText(state.detail ? state.detail.payload : '');
      res.textContent = 'payload copied';
    } catch (e) {
      res.textContent = show('copy failed: ' + e.message);
    }
  });
  window.addEventListener('hashchange', route);

  readFilters();
  loadList(false).then(() => {
    connect();
    route();
  });
})();
