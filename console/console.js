// The console: everything it shows and changes goes through the daemon's own
// HTTP API (docs/api.md), as any client's calls do: GET /healthz,
// GET /v1/admin/limits, GET /v1/admin/denials, GET /v1/admin/audit and
// PUT /v1/admin/limits. Hand-written, no build step, nothing from elsewhere.
// Text from the daemon is only ever set as textContent, never as HTML.
'use strict';

const TOKEN_KEY = 'ratelimiter.console.token';
const DENIALS_SHOWN = 50;
const LIMITS_SHOWN = 200;
const LEASE_SEARCH_KEYS = 64; // limits whose audit a lease id is looked for in
const AUDIT_PAGE = 1000;

const $ = (selector) => document.querySelector(selector);

// ---- the API, with the bearer token when the daemon wants one -------------

let tokenWaiters = null; // the calls waiting for a token to be typed

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

function askForToken(why) {
  if (tokenWaiters === null) {
    tokenWaiters = [];
    $('#token-why').textContent = why;
    $('#token-input').value = '';
    $('#token-dialog').showModal();
  }
  return new Promise((resolve) => tokenWaiters.push(resolve));
}

function tokenGiven(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
  $('#forget-token').hidden = false;
  const waiting = tokenWaiters || [];
  tokenWaiters = null;
  waiting.forEach((resolve) => resolve());
}

// One call: the answer's status and JSON body. A 401 (no token, or one the
// daemon does not take) asks for a token and calls again with it. A refusal
// of a token that has been replaced while the call was under way (calls run
// side by side, and the first refusal's dialog may be answered before the
// others' come back) is not asked about again: the call is made again with
// the token now given.
async function api(method, path, body) {
  for (;;) {
    const headers = {};
    const sent = token();
    if (sent !== '') headers.Authorization = 'Bearer ' + sent;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store', credentials: 'same-origin',
    });
    let json = null;
    try { json = await res.json(); } catch (e) { json = null; }
    const refused = res.status === 401 || (res.status === 403 && sent !== '' && json && json.error !== 'invalid_request');
    if (refused && token() !== sent && tokenWaiters === null) continue;
    if (refused) {
      await askForToken(res.status === 401 && sent === ''
        ? 'The daemon asks for an admin token.'
        : 'The daemon did not take that token: type another.');
      continue;
    }
    return { status: res.status, body: json };
  }
}

function failure(answer) {
  const b = answer.body || {};
  return 'HTTP ' + answer.status + (b.error ? ': ' + b.error : '') + (b.detail ? ' (' + b.detail + ')' : '');
}

// ---- small DOM helpers ------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function cell(row, text, className) {
  const td = el('td', className, text);
  row.appendChild(td);
  return td;
}

function emptyRow(tbody, columns, text) {
  const row = el('tr');
  const td = cell(row, text, 'empty');
  td.colSpan = columns;
  tbody.appendChild(row);
}

function linkButton(text, onClick) {
  const b = el('button', 'link', text);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

// A bar filled to fraction (0..1, more shows full), labelled.
function bar(fraction, label, tone) {
  const outer = el('div', 'bar');
  const fill = el('div', 'fill ' + (tone || toneOf(fraction)));
  fill.style.width = Math.max(0, Math.min(1, fraction)) * 100 + '%';
  outer.appendChild(fill);
  outer.appendChild(el('span', 'label', label));
  return outer;
}

function toneOf(fraction) { return fraction >= 0.9 ? 'bad' : fraction >= 0.7 ? 'warn' : ''; }

const numberFormat = new Intl.NumberFormat('en-US');
function amount(n) { return numberFormat.format(n); }
function percent(fraction) { return (fraction * 100).toFixed(fraction < 0.1 ? 1 : 0) + ' %'; }
function clock(ms) { return new Date(ms).toLocaleTimeString([], { hour12: false }); }
function when(ms) { return new Date(ms).toLocaleString([], { hour12: false }); }
function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return s + ' s';
  const m = Math.round(s / 60);
  if (m < 120) return m + ' min';
  const h = Math.round(m / 60);
  return h < 48 ? h + ' h' : Math.round(h / 24) + ' d';
}
function withUnit(n, unit) { return amount(n) + (unit ? ' ' + unit : ''); }

// ---- limits and budgets -----------------------------------------------------

let limits = []; // the last GET /v1/admin/limits

function fractionUsed(info) {
  const u = info.usage;
  return u.capacity > 0 ? u.used / u.capacity : 0;
}

function renderLimits() {
  const tbody = $('#limits tbody');
  tbody.replaceChildren();
  const filter = $('#limit-filter').value.trim();
  let shown = limits.filter((info) => filter === '' || info.definition.key.includes(filter));
  if ($('#limit-order').value === 'usage') shown.sort((a, b) => fractionUsed(b) - fractionUsed(a) || (a.definition.key < b.definition.key ? -1 : 1));
  const matching = shown.length;
  shown = shown.slice(0, LIMITS_SHOWN);
  $('#limits-count').textContent = matching === limits.length
    ? limits.length + ' limits' + (matching > shown.length ? ', the first ' + shown.length + ' shown' : '')
    : matching + ' of ' + limits.length + ' limits' + (matching > shown.length ? ', the first ' + shown.length + ' shown' : '');
  if (limitsEvery() > 0) $('#limits-count').textContent += ' (so many that they are read every ' + duration(limitsEvery()) + ')';
  if (shown.length === 0) emptyRow(tbody, 7, limits.length === 0 ? 'no limits defined' : 'no key matches (a limit made from a template is not listed here yet)');
  for (const info of shown) {
    const d = info.definition, u = info.usage;
    const row = el('tr', 'limit');
    row.dataset.key = d.key;
    row.dataset.used = String(u.used);
    row.dataset.capacity = String(u.capacity);
    cell(row, d.key, 'key');
    cell(row, d.kind + (d.kind === 'rolling' ? ' ' + duration(d.window_seconds * 1000) : d.kind === 'budget' ? ' ' + d.period : '') +
      (info.preset ? ' · preset ' + info.preset : ''));
    const f = fractionUsed(info);
    cell(row, null).appendChild(bar(f, percent(f)));
    const figures = cell(row, withUnit(u.used, '') + ' / ' + withUnit(u.capacity, d.unit), 'num used');
    if (u.debt > 0) figures.appendChild(el('span', 'over', ' debt ' + amount(u.debt)));
    cell(row, amount(u.active), 'num');
    const status = cell(row, info.status + (info.pending_decrease_to ? ' → ' + amount(info.pending_decrease_to) : ''));
    if (info.status !== 'active') status.className = 'status-' + info.status;
    cell(row, null).appendChild(linkButton('edit', () => editLimit(info)));
    tbody.appendChild(row);
  }
}

function renderBudgets(now) {
  const tbody = $('#budgets tbody');
  tbody.replaceChildren();
  const budgets = limits.filter((info) => info.definition.kind === 'budget');
  $('#budgets-section').hidden = budgets.length === 0;
  for (const info of budgets) {
    const d = info.definition, u = info.usage;
    const row = el('tr', 'budget');
    row.dataset.key = d.key;
    cell(row, d.key, 'key');
    const f = fractionUsed(info);
    cell(row, null).appendChild(bar(f, percent(f)));
    cell(row, amount(u.used) + ' / ' + withUnit(u.capacity, d.unit) + (u.reserved > 0 ? ' (' + amount(u.reserved) + ' held)' : ''), 'num');
    const length = u.period_end_unix_ms - u.period_start_unix_ms;
    const elapsed = Math.min(Math.max(now - u.period_start_unix_ms, 0), length);
    const progress = length > 0 ? elapsed / length : 0;
    cell(row, null).appendChild(bar(progress, percent(progress) + ' of the ' + d.period, 'period'));
    // Linear: what was spent so far at the pace of the period so far. Too
    // early in a period (under 2 %) the pace means little.
    const forecastCell = cell(row, '', 'num');
    if (progress < 0.02) {
      forecastCell.textContent = 'too early to tell';
      forecastCell.classList.add('muted');
    } else {
      const forecast = Math.round(u.used / progress);
      forecastCell.textContent = withUnit(forecast, d.unit) + ' · ' + percent(forecast / u.capacity);
      if (forecast > u.capacity) {
        forecastCell.classList.add('over');
        const runsOut = u.period_start_unix_ms + (u.capacity / u.used) * elapsed;
        if (u.used > 0 && runsOut < u.period_end_unix_ms) forecastCell.title = 'at this pace it runs out at ' + when(runsOut);
      }
      forecastCell.dataset.forecast = String(forecast);
    }
    cell(row, 'in ' + duration(u.period_end_unix_ms - now) + ' (' + when(u.period_end_unix_ms) + ')');
    tbody.appendChild(row);
  }
}

// ---- denials ------------------------------------------------------------------

function renderDenials(answer) {
  const tbody = $('#denials tbody');
  tbody.replaceChildren();
  const denials = answer.denials || [];
  $('#denials-count').textContent = answer.noted_total + ' since the daemon started; the last ' + answer.kept + ' kept';
  if (denials.length === 0) emptyRow(tbody, 8, 'no denial yet');
  for (const x of denials) {
    const by = x.denied_by;
    const row = el('tr', 'denial');
    row.dataset.key = by.key;
    row.dataset.reason = by.reason;
    row.dataset.leaseId = x.lease_id;
    cell(row, clock(x.at_unix_ms));
    cell(row, null, 'mono').appendChild(linkButton(x.lease_id, () => lookUp(x.lease_id)));
    cell(row, null, 'key').appendChild(linkButton(by.key, () => lookUp(by.key)));
    cell(row, null).appendChild(el('span', 'reason ' + by.reason, by.reason));
    cell(row, amount(by.requested), 'num');
    cell(row, amount(by.available) + ' / ' + amount(by.capacity), 'num');
    cell(row, x.retry_after_ms > 0 ? duration(x.retry_after_ms) : '—', 'num');
    let what = x.endpoint === 'reserve_batch' ? 'batch: ' + x.denied_items + ' of ' + x.items + ' denied' : 'reserve';
    if (x.dry_run) what += ' (dry run)';
    if (x.job_id) what += ' · job ' + x.job_id;
    cell(row, what);
    tbody.appendChild(row);
  }
}

// ---- audit: a key's spend, or a lease's ---------------------------------------

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

// The Unix ms a ULID was made at: its first 10 characters.
function ulidTime(id) {
  let ms = 0;
  for (const c of id.slice(0, 10).toUpperCase()) ms = ms * 32 + CROCKFORD.indexOf(c);
  return ms;
}

function auditRow(tbody, e) {
  const row = el('tr', 'audit-entry');
  row.dataset.leaseId = e.lease_id;
  cell(row, when(e.at_unix_ms));
  cell(row, null, 'mono').appendChild(linkButton(e.lease_id, () => lookUp(e.lease_id)));
  cell(row, e.job_id || '—');
  cell(row, e.key, 'key');
  cell(row, amount(e.reserved), 'num');
  cell(row, amount(e.actual), 'num');
  cell(row, e.expired ? 'refunded: never completed' : '', 'muted');
  tbody.appendChild(row);
}

// Also from the page's address: /console#audit=<key or lease id> links to it.
function lookUp(text) {
  $('#audit-query').value = text;
  runAudit();
  $('#audit-section').scrollIntoView({ behavior: 'smooth', block: 'start' });
}

// The address's #audit=<key or lease id, percent-encoded>, looked up. A link
// cut short or typed by hand may not decode (decodeURIComponent throws a
// URIError): the audit section says so, and nothing is looked up.
function lookUpLinked() {
  const linked = /^#audit=(.+)$/.exec(location.hash);
  if (!linked) return;
  let text;
  try {
    text = decodeURIComponent(linked[1]);
  } catch (e) {
    const summary = $('#audit-summary');
    summary.textContent = 'the address\'s #audit= is not a key or lease id: "' + linked[1] +
      '" is not valid percent-encoding';
    summary.classList.add('error');
    $('#audit-section').scrollIntoView({ behavior: 'smooth', block: 'start' });
    return;
  }
  lookUp(text);
}

async function runAudit() {
  const query = $('#audit-query').value.trim();
  const tbody = $('#audit tbody');
  const summary = $('#audit-summary');
  tbody.replaceChildren();
  summary.classList.remove('error');
  if (query === '') return;
  history.replaceState(null, '', '#audit=' + encodeURIComponent(query));
  const sinceWindow = Number($('#audit-since').value);
  if (ULID.test(query)) {
    await auditLease(query.toUpperCase(), tbody, summary);
  } else {
    await auditKey(query, sinceWindow, tbody, summary);
  }
  $('#audit').dataset.done = query; // what the table now shows
}

// A key: what was charged to it, newest first.
async function auditKey(query, sinceWindow, tbody, summary) {
  const since = sinceWindow > 0 ? Date.now() - sinceWindow : 0;
  const answer = await api('GET', '/v1/admin/audit?key=' + encodeURIComponent(query) + '&since_unix_ms=' + since + '&limit=' + AUDIT_PAGE);
  if (answer.status !== 200) {
    summary.textContent = failure(answer);
    summary.classList.add('error');
    return;
  }
  const entries = answer.body.entries;
  let spent = 0;
  entries.forEach((e) => { spent += e.actual; });
  summary.textContent = entries.length === 0 ? 'nothing charged to ' + query + ' in that time'
    : entries.length + ' charges to ' + query + ', ' + amount(spent) + ' in all' +
      (entries.length === AUDIT_PAGE ? ' (the first ' + AUDIT_PAGE + ' from ' + when(since) + '; more follow)' : '') + ', newest first';
  entries.slice().reverse().forEach((e) => auditRow(tbody, e));
}

// A lease: whether it was denied (the recent denials), and what it spent on
// the limits that count spend (their audit from the moment its id was made).
async function auditLease(leaseId, tbody, summary) {
  const denied = await api('GET', '/v1/admin/denials?lease_id=' + leaseId + '&limit=1');
  const parts = [];
  if (denied.status === 200 && denied.body.denials.length > 0) {
    const by = denied.body.denials[0].denied_by;
    parts.push('denied at ' + when(denied.body.denials[0].at_unix_ms) + ' by ' + by.key + ': ' + by.reason +
      ' (asked ' + amount(by.requested) + ', ' + amount(by.available) + ' of ' + amount(by.capacity) + ' free)');
  }
  const spending = limits.filter((info) => info.definition.kind !== 'concurrency').map((info) => info.definition.key);
  const keys = spending.slice(0, LEASE_SEARCH_KEYS);
  const since = Math.max(ulidTime(leaseId) - 60000, 0); // a minute for the caller's clock
  const found = [];
  for (let i = 0; i < keys.length; i += 6) {
    const answers = await Promise.all(keys.slice(i, i + 6).map((key) =>
      api('GET', '/v1/admin/audit?key=' + encodeURIComponent(key) + '&since_unix_ms=' + since + '&limit=' + AUDIT_PAGE)));
    answers.forEach((a) => { if (a.status === 200) found.push(...a.body.entries.filter((e) => e.lease_id === leaseId)); });
  }
  found.sort((a, b) => b.at_unix_ms - a.at_unix_ms);
  found.forEach((e) => auditRow(tbody, e));
  parts.push(found.length === 0 ? 'no spend found' : found.length + ' charges found');
  parts.push('looked in the audit of ' + keys.length + (spending.length > keys.length ? ' of ' + spending.length : '') +
    ' rolling and budget limits from ' + when(since));
  summary.textContent = 'lease ' + leaseId + ': ' + parts.join('; ');
}

// ---- the form that changes a limit ---------------------------------------------

function showKindFields() {
  const form = $('#limit-form');
  const kind = form.elements.kind.value;
  form.querySelectorAll('[data-kinds]').forEach((label) => {
    label.hidden = !label.dataset.kinds.split(' ').includes(kind);
  });
}

function editLimit(info) {
  const form = $('#limit-form');
  const d = info.definition;
  for (const name of ['key', 'kind', 'capacity', 'unit', 'overage', 'description', 'period', 'timezone']) {
    if (d[name] !== undefined && form.elements[name]) form.elements[name].value = d[name];
  }
  if (d.window_seconds) form.elements.window_seconds.value = d.window_seconds;
  if (d.timeout_seconds) form.elements.timeout_seconds.value = d.timeout_seconds;
  showKindFields();
  $('#limit-result').textContent = '';
  form.scrollIntoView({ behavior: 'smooth', block: 'start' });
  form.elements.capacity.focus();
}

async function saveLimit(event) {
  event.preventDefault();
  const form = $('#limit-form');
  const f = form.elements;
  const kind = f.kind.value;
  const def = { key: f.key.value.trim(), kind, capacity: Number(f.capacity.value), overage: f.overage.value };
  if (kind === 'rolling') def.window_seconds = Number(f.window_seconds.value);
  else def.timeout_seconds = Number(f.timeout_seconds.value);
  if (kind === 'budget') { def.period = f.period.value; def.timezone = f.timezone.value.trim() || 'UTC'; }
  if (f.unit.value.trim() !== '') def.unit = f.unit.value.trim();
  if (f.description.value !== '') def.description = f.description.value;
  const result = $('#limit-result');
  result.className = '';
  result.textContent = 'saving…';
  const answer = await api('PUT', '/v1/admin/limits', def);
  if (answer.status === 200 && answer.body && answer.body.ok) {
    result.className = 'ok';
    result.textContent = 'saved: ' + def.key + ' is ' + answer.body.status;
    limitsAt = 0; // show it now, however many limits there are
    refresh();
  } else {
    result.className = 'error';
    result.textContent = failure(answer);
  }
}

// ---- live refresh ---------------------------------------------------------------

let timer = null;
let refreshing = false;
let limitsAt = 0; // when the limits were last asked for

// The whole list of limits is one answer of the daemon's (no paging): with
// thousands of them it is megabytes, so it is asked for less often the
// longer it is; denials keep the chosen pace. It holds the limits defined
// one by one (a preset's among them), not those made from a template: the
// daemon does not list those (GET /v1/admin/limits/{key} finds one).
function limitsEvery() {
  return limits.length > 20000 ? 60000 : limits.length > 2000 ? 15000 : 0;
}

async function refresh() {
  if (refreshing) return;
  refreshing = true;
  try {
    const now = Date.now();
    const wantLimits = now - limitsAt >= limitsEvery();
    const none = Promise.resolve(null);
    const [health, limitList, denials] = await Promise.all([
      api('GET', '/healthz'), wantLimits ? api('GET', '/v1/admin/limits') : none,
      api('GET', '/v1/admin/denials?limit=' + DENIALS_SHOWN)]);
    const h = health.body || {};
    $('#health').textContent = h.ok ? 'up · ' + h.backend + ' backend' + (h.degraded ? ' · degraded: ' + h.detail : '')
      : 'cannot serve' + (h.detail ? ': ' + h.detail : '');
    if (limitList !== null && limitList.status === 200) {
      limits = limitList.body.limits;
      limitsAt = now;
      renderLimits();
      renderBudgets(Date.now());
    } else if (limitList !== null) {
      $('#limits-count').textContent = failure(limitList);
    }
    if (denials.status === 200) renderDenials(denials.body);
    else $('#denials-count').textContent = failure(denials);
    $('#refreshed').textContent = 'as of ' + clock(Date.now());
    document.body.dataset.state = 'ready';
  } catch (e) {
    $('#health').textContent = 'daemon unreachable: ' + e.message;
  } finally {
    refreshing = false;
  }
}

function schedule() {
  clearInterval(timer);
  const every = Number($('#refresh-every').value);
  timer = every > 0 ? setInterval(refresh, every) : null;
}

document.addEventListener('DOMContentLoaded', () => {
  $('#token-form').addEventListener('submit', () => tokenGiven($('#token-input').value.trim()));
  $('#token-dialog').addEventListener('cancel', (event) => event.preventDefault());
  $('#forget-token').hidden = token() === '';
  $('#forget-token').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    $('#forget-token').hidden = true;
  });
  $('#refresh-every').addEventListener('change', schedule);
  $('#limit-filter').addEventListener('input', renderLimits);
  $('#limit-order').addEventListener('change', renderLimits);
  $('#audit-form').addEventListener('submit', (event) => { event.preventDefault(); runAudit(); });
  $('#limit-form').addEventListener('submit', saveLimit);
  $('#limit-form').elements.kind.addEventListener('change', showKindFields);
  showKindFields();
  refresh().then(lookUpLinked);
  schedule();
});
