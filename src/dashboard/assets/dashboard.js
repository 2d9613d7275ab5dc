// The coverage dashboard's page: draws what /api/* answers. Served by report-sync itself; it loads
// nothing from elsewhere. Every text from the ledger (file names, errors) goes in as textContent,
// never as HTML: it comes from upstream and may hold anything.

const OUTCOMES = ['failed', 'running', 'queued', 'missing', 'no_data', 'loaded'];
const LABELS = { failed: 'failed', running: 'running', queued: 'queued', missing: 'missing', no_data: 'no data', loaded: 'loaded' };
/** Where each outcome's count sits in a cell: [worst, loaded, noData, failed, missing, queued, running]. */
const INDEX = { loaded: 1, no_data: 2, failed: 3, missing: 4, queued: 5, running: 6 };
const FILTERS = ['from', 'to', 'portfolios', 'reportTypes', 'outcome', 'period'];
/** The row labels' width, as --label in dashboard.css. */
const LABEL_WIDTH = 210;
const REFRESH_MS = 30_000;
/** Least space between two axis labels, in pixels. */
const AXIS_GAP = 6;
/** The range links: days ending where the grid ends, and the whole ledger. */
const RANGES = [
  ['30 days', 30],
  ['90 days', 90],
  ['1 year', 365],
];
const QUEUE_REFRESH_MS = 5_000;

const $ = (selector) => document.querySelector(selector);
let meta;
let view;
let refreshTimer;

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    if (name === 'text') node.textContent = value;
    else if (name === 'className') node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children) node.append(child);
  return node;
}

function number(value) {
  return value.toLocaleString('en-US');
}

/** The filters of the page's URL, as the API takes them. */
function filtersFromUrl() {
  const url = new URLSearchParams(location.search);
  const params = new URLSearchParams();
  for (const name of FILTERS) if (url.get(name)) params.set(name, url.get(name));
  return params;
}

function showError(message) {
  const box = $('#error');
  box.hidden = !message;
  box.textContent = message ?? '';
}

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body?.error ?? `${response.status} ${response.statusText}`);
  return body;
}

function fillForm(params) {
  const form = $('#filters');
  form.from.value = params.get('from') ?? view?.from ?? '';
  form.to.value = params.get('to') ?? view?.to ?? '';
  form.portfolios.value = params.get('portfolios') ?? '';
  form.outcome.value = params.get('outcome') ?? '';
  form.period.value = params.get('period') ?? '';
  const chosen = new Set((params.get('reportTypes') ?? '').split(',').filter(Boolean));
  for (const box of form.querySelectorAll('input[name="reportType"]')) box.checked = chosen.size === 0 ? meta.defaults.reportTypes.includes(box.value) : chosen.has(box.value);
}

/** The form as URL parameters; a field left as its default is left out, so shared links stay short. */
function formParams() {
  const form = $('#filters');
  const params = new URLSearchParams();
  for (const name of ['from', 'to', 'portfolios', 'outcome', 'period']) {
    const value = form[name].value.trim();
    if (value) params.set(name, value.replace(/\s+/g, ''));
  }
  const types = [...form.querySelectorAll('input[name="reportType"]:checked')].map((box) => box.value);
  const defaults = meta.defaults.reportTypes;
  if (types.length > 0 && !(types.length === defaults.length && types.every((type) => defaults.includes(type)))) params.set('reportTypes', types.join(','));
  return params;
}

function navigate(params) {
  const search = params.toString();
  history.pushState(null, '', search ? `?${search}` : location.pathname);
  load();
}

async function load() {
  clearTimeout(refreshTimer);
  const params = filtersFromUrl();
  const columns = Math.max(7, Math.min(2000, Math.floor((document.documentElement.clientWidth - LABEL_WIDTH - 80) / 9)));
  const query = new URLSearchParams(params);
  query.set('columns', String(columns));
  try {
    view = await getJson(`/api/coverage?${query}`);
    showError(undefined);
  } catch (error) {
    showError(`Could not draw the grid: ${error.message}`);
    fillForm(params);
    return;
  }
  fillForm(params);
  drawLegend();
  drawRanges(params);
  drawGrid();
  loadFailures(params);
  refreshTimer = setTimeout(() => {
    if (document.visibilityState === 'visible') load();
  }, REFRESH_MS);
}

function drawLegend() {
  const legend = $('#legend');
  legend.replaceChildren();
  for (const outcome of OUTCOMES) {
    if ((outcome === 'queued' || outcome === 'running') && !view.queue) continue;
    legend.append(
      element(
        'span',
        { className: 'legend-item', 'data-outcome': outcome },
        element('span', { className: 'swatch', style: `background: var(--${outcome})` }),
        element('span', { text: `${LABELS[outcome]} ${number(view.totals[outcome])}` }),
      ),
    );
    // Loaded with warnings is loaded (complete); it is said beside loaded, and marked on its cells.
    if (outcome === 'loaded' && view.warned > 0) {
      legend.append(
        element(
          'span',
          { className: 'legend-item', 'data-outcome': 'warned' },
          element('span', { className: 'swatch warned-mark' }),
          element('span', { text: `of which with warnings ${number(view.warned)}` }),
        ),
      );
    }
  }
  const trouble = view.queue ? 'failed, running, queued, missing' : 'failed, missing';
  const period =
    view.period === 'day'
      ? 'one cell per day'
      : `one cell per ${view.period === 'week' ? 'ISO week' : 'month'}: the worst trouble inside (${trouble}), else loaded (no data if nothing inside was loaded); click one to see its days`;
  const parts = [`${view.from} to ${view.to}`, period, `${number(view.rows.length)} rows`];
  if (view.hiddenRows > 0) parts.push(`${number(view.hiddenRows)} rows without ${LABELS[view.outcome]} hidden`);
  if (view.queue && !view.queue.reachable) parts.push(`queue unreachable: ${view.queue.reason}`);
  if (view.queue?.truncated) parts.push('queue too long to lay over in full');
  parts.push(`answered in ${number(view.elapsedMs)} ms`);
  $('#range').textContent = parts.join(' · ');
}

/** Links to other ranges: so many days up to where the grid ends (keeping the other filters), and the whole ledger. */
function drawRanges(params) {
  const nav = $('#ranges');
  const to = params.get('to') ?? view.to;
  const link = (text, from, keepTo) => {
    const target = new URLSearchParams(params);
    target.set('from', from);
    if (!keepTo) target.delete('to');
    target.delete('period');
    const current = from === view.from && (keepTo ? to === view.to : !params.get('to'));
    const node = element('a', { href: `?${target}`, text, 'data-from': from, 'aria-current': current ? 'true' : undefined });
    node.addEventListener('click', (event) => {
      event.preventDefault();
      navigate(target);
    });
    return node;
  };
  const links = RANGES.map(([text, days]) => link(text, shiftDate(to, 1 - days), params.has('to')));
  if (view.ledger) links.push(link(`all the ledger holds (${view.ledger.from} to ${view.ledger.to})`, view.ledger.from, false));
  nav.replaceChildren(element('span', { text: `Show up to ${to}: ` }), ...links.flatMap((node, i) => (i === 0 ? [node] : [' · ', node])));
}

/** The ISO date `days` after `date` (before, when negative). */
function shiftDate(date, days) {
  const time = Date.parse(`${date}T00:00:00Z`) + days * 86_400_000;
  return new Date(time).toISOString().slice(0, 10);
}

/**
 * The date axis over the cells: month starts, as many as fit evenly (every month, else every 2nd,
 * 3rd… month, else years: every 1st, 2nd, 5th…), and by day each Monday's date between them where
 * there is room. No label is drawn where it would touch another or run past the cells and the axis.
 */
function drawAxis(pitch) {
  const axis = $('#axis');
  const probe = element('span', { text: '0000-00' });
  axis.replaceChildren(probe);
  const monthRoom = probe.getBoundingClientRect().width + AXIS_GAP;
  probe.textContent = '0000';
  const yearRoom = probe.getBoundingClientRect().width + AXIS_GAP;
  probe.remove();
  const starts = [];
  view.columns.forEach((column, i) => {
    const month = column.from.slice(0, 7);
    if (starts.at(-1)?.month !== month) starts.push({ i, month, index: Number(month.slice(0, 4)) * 12 + Number(month.slice(5, 7)) - 1 });
  });
  // The range's first column starts a month only on the month's first day; it is labelled last, if there is room.
  const whole = starts.filter((start) => start.i > 0 || view.columns[0].from.endsWith('-01'));
  const evenly = (step) => whole.filter((start) => start.index % step === 0);
  const fits = (step) => evenly(step).every((start, k, kept) => k === 0 || (start.i - kept[k - 1].i) * pitch >= (step < 12 ? monthRoom : yearRoom));
  const step = [1, 2, 3, 4, 6, 12, 24, 60, 120, 240].find(fits) ?? 240;
  const text = (start) => (step < 12 ? start.month : start.month.slice(0, 4));
  const wanted = [...evenly(step), starts[0]].filter(Boolean).map((start) => ({ i: start.i, text: text(start) }));
  if (view.period === 'day') {
    view.columns.forEach((column, i) => {
      if (new Date(`${column.from}T00:00:00Z`).getUTCDay() === 1) wanted.push({ i, text: String(Number(column.from.slice(8, 10))), minor: true });
    });
  }
  const bounds = axis.getBoundingClientRect();
  const end = Math.max(bounds.right, bounds.left + view.columns.length * pitch);
  const placed = [];
  for (const label of wanted) {
    const node = element('span', { text: label.text, className: label.minor ? 'minor' : undefined, style: `left: ${label.i * pitch}px` });
    axis.append(node);
    const box = node.getBoundingClientRect();
    if (box.right > end || placed.some((other) => box.left < other.right + AXIS_GAP && other.left < box.right + AXIS_GAP)) node.remove();
    else placed.push(box);
  }
}

function drawGrid() {
  const grid = $('#grid');
  const available = Math.max(200, document.documentElement.clientWidth - LABEL_WIDTH - 80);
  const width = Math.max(3, Math.min(18, Math.floor(available / Math.max(1, view.columns.length)) - 1));
  grid.style.setProperty('--cell', `${width}px`);
  drawAxis(width + 1);
  const rows = view.rows.map((row) => {
    const cells = element('div', { className: 'cells' });
    row.cells.forEach((cell, i) => {
      const column = view.columns[i];
      const node = element('span', {
        className: `cell${view.outcome && cell[INDEX[view.outcome]] === 0 ? ' dim' : ''}${row.warned?.[i] > 0 ? ' warned' : ''}`,
        'data-outcome': cell[0],
        'data-from': column.from,
        'data-to': column.to,
        'data-i': i,
        style: `width: ${width}px`,
      });
      cells.append(node);
    });
    return element(
      'div',
      { className: 'grid-row', role: 'row', 'data-portfolio': row.portfolioId, 'data-report-type': row.reportType },
      element('span', { className: 'row-label', text: `${row.portfolioId}  ${row.reportType}`, title: `${row.portfolioId} ${row.reportType}` }),
      cells,
    );
  });
  grid.replaceChildren(...rows);
  if (rows.length === 0)
    grid.append(
      element('p', { text: view.outcome ? `No row has a slice ${LABELS[view.outcome]} in this range.` : 'Nothing to show: no portfolios or report types are selected.' }),
    );
}

/** The cell under an event, with its row and counts. */
function cellAt(target) {
  const node = target.closest?.('.cell');
  if (!node) return undefined;
  const rowNode = node.closest('.grid-row');
  const row = view.rows.find((candidate) => String(candidate.portfolioId) === rowNode.dataset.portfolio && candidate.reportType === rowNode.dataset.reportType);
  const cell = row?.cells[Number(node.dataset.i)];
  return cell && { node, row, cell, from: node.dataset.from, to: node.dataset.to, warned: row.warned?.[Number(node.dataset.i)] ?? 0 };
}

function describeCell({ row, cell, from, to, warned }) {
  const lines = [`${row.portfolioId} ${row.reportType}  ${from === to ? from : `${from} to ${to}`}`];
  if (from === to) {
    const label = cell[0] === 'loaded' && warned > 0 ? `${LABELS.loaded} with warnings` : LABELS[cell[0]];
    lines.push(`${label}${cell[5] + cell[6] > 0 && cell[0] !== 'queued' && cell[0] !== 'running' ? ' (in the queue)' : ''}`, 'click for its ledger row');
  } else {
    const counts = OUTCOMES.filter((outcome) => cell[INDEX[outcome]] > 0).map((outcome) => `${LABELS[outcome]} ${number(cell[INDEX[outcome]])}`);
    if (warned > 0) counts.push(`of which with warnings ${number(warned)}`);
    lines.push(counts.join(', ') || 'nothing', 'click to see its days');
  }
  return lines.join('\n');
}

function onHover(event) {
  const tooltip = $('#tooltip');
  const target = cellAt(event.target);
  if (!target) {
    tooltip.hidden = true;
    return;
  }
  tooltip.textContent = describeCell(target);
  tooltip.hidden = false;
  const x = Math.min(event.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
  tooltip.style.left = `${Math.max(4, x)}px`;
  tooltip.style.top = `${event.clientY + 16}px`;
}

async function onClick(event) {
  const target = cellAt(event.target);
  if (!target) return;
  $('#tooltip').hidden = true;
  if (target.from !== target.to) {
    // Drill down: the same filters, this cell's dates, one cell per day.
    const params = filtersFromUrl();
    params.set('from', target.from);
    params.set('to', target.to);
    params.set('portfolios', String(target.row.portfolioId));
    params.delete('period');
    navigate(params);
    return;
  }
  for (const node of document.querySelectorAll('.cell.selected')) node.classList.remove('selected');
  target.node.classList.add('selected');
  const query = new URLSearchParams({ portfolio: String(target.row.portfolioId), reportType: target.row.reportType, date: target.from });
  try {
    showDetail(await getJson(`/api/slice?${query}`));
  } catch (error) {
    showError(`Could not read the ledger row: ${error.message}`);
  }
}

function showDetail(slice) {
  const detail = $('#detail');
  const fields = [
    ['outcome', slice.status],
    ['rows', slice.rows],
    ['bytes', slice.bytes === null ? null : number(slice.bytes)],
    ['format', slice.format],
    ['file name', slice.fileName],
    ['sha256', slice.sha256],
    ['load id', slice.loadId],
    ['loaded at', slice.loadedAt],
    ['attempts', slice.attempts],
    ['first loaded', slice.firstLoadedAt],
    ['updated', slice.updatedAt],
    ['last checked', slice.checkedAt],
    ['attempt took', slice.durationMs === null ? null : `${number(slice.durationMs)} ms`],
    ['error', slice.error],
    ['job', slice.job],
  ];
  const list = element('dl');
  for (const [name, value] of fields) {
    if (value === null || value === undefined) continue;
    list.append(element('dt', { text: name }), element('dd', { text: String(value), 'data-field': name }));
  }
  const close = element('button', { type: 'button', text: 'Close' });
  close.addEventListener('click', () => {
    detail.hidden = true;
  });
  detail.replaceChildren(
    element('h2', { text: `${slice.portfolioId} ${slice.reportType} ${slice.reportDate}` }),
    slice.status === 'missing' ? element('p', { text: 'The ledger has no row for this slice: it was never attempted.' }) : '',
    list,
    checksTable(slice.checks ?? []),
    close,
  );
  detail.hidden = false;
}

/** The data-quality checks of the slice's latest checked file: one row per check, its outcome, measure and limit. */
function checksTable(checks) {
  if (checks.length === 0) return '';
  const table = element(
    'table',
    { class: 'checks' },
    element(
      'tr',
      {},
      element('th', { text: 'check' }),
      element('th', { text: 'outcome' }),
      element('th', { text: 'measured' }),
      element('th', { text: 'limit' }),
      element('th', { text: 'finding' }),
    ),
  );
  for (const check of checks) {
    table.append(
      element(
        'tr',
        { class: `check-${check.outcome}`, 'data-check': check.check },
        element('td', { text: check.check }),
        element('td', { text: check.outcome === 'pass' ? 'pass' : `${check.outcome} (${check.severity})` }),
        element('td', { text: String(check.measured) }),
        element('td', { text: String(check.threshold) }),
        element('td', { text: check.message }),
      ),
    );
  }
  return element('div', {}, element('h3', { text: 'Data-quality checks of the latest file' }), table);
}

async function loadFailures(params) {
  const section = $('#failures');
  const query = new URLSearchParams();
  query.set('from', view.from);
  query.set('to', view.to);
  for (const name of ['portfolios', 'reportTypes']) if (params.get(name)) query.set(name, params.get(name));
  let failures;
  try {
    failures = await getJson(`/api/failures?${query}`);
  } catch (error) {
    section.replaceChildren(element('h2', { text: 'Failures' }), element('p', { text: `Could not read them: ${error.message}` }));
    return;
  }
  if (failures.total === 0) {
    section.replaceChildren(element('h2', { text: 'Failures' }), element('p', { text: 'No failed slices in this range.' }));
    return;
  }
  const table = element(
    'table',
    { id: 'failure-groups' },
    element('tr', {}, element('th', { text: 'error code' }), element('th', { text: 'portfolio' }), element('th', { text: 'slices' }), element('th', { text: 'e.g.' })),
  );
  for (const code of failures.codes) {
    code.portfolios.forEach((group, i) => {
      const examples = group.examples.map((example) => `${example.reportType} ${example.reportDate}`).join(', ');
      const reason = group.examples[0] ? element('div', { className: 'reason', text: `${code.code}: ${group.examples[0].message}` }) : '';
      table.append(
        element(
          'tr',
          { 'data-code': code.code, 'data-portfolio': group.portfolioId },
          element('td', { text: i === 0 ? `${code.code} (${number(code.slices)})` : '' }),
          element('td', { text: String(group.portfolioId) }),
          element('td', { text: number(group.slices) }),
          element('td', {}, element('span', { text: examples }), reason),
        ),
      );
    });
    table.append(element('tr', {}, element('td', {}), element('td', { colspan: 3 }, element('span', { text: 'Re-run these: ' }), element('code', { text: code.retry }))));
  }
  section.replaceChildren(
    element('h2', { text: `Failures by error code and portfolio (${number(failures.total)} ${failures.total === 1 ? 'slice' : 'slices'})` }),
    table,
    element('p', {}, element('span', { text: 'Re-run every failed or missing slice: ' }), element('code', { id: 'retry-run', text: failures.retry.run })),
    element('p', {}, element('span', { text: 'or through the workers: ' }), element('code', { text: failures.retry.backfill })),
    element('p', {}, element('span', { text: 'Every failed slice: ' }), element('code', { text: failures.everyOne })),
  );
}

async function loadQueue() {
  const panel = $('#queue-panel');
  panel.hidden = false;
  let snapshot;
  try {
    snapshot = await getJson('/api/queue');
  } catch (error) {
    snapshot = { reachable: false, reason: error.message };
  }
  const heading = element('h2', {}, element('span', { text: 'Queue ' }), element('a', { href: `${meta.queue.board}/`, text: 'open Bull Board' }));
  if (!snapshot.reachable) {
    panel.replaceChildren(heading, element('p', { text: `Unreachable: ${snapshot.reason}` }));
  } else {
    const c = snapshot.counts;
    const rate = (value) => (value === null ? '–' : number(value));
    const items = [
      ['waiting', c.waiting + c.prioritized],
      ['active', c.active],
      ['delayed', c.delayed],
      ['completed', c.completed],
      ['failed', c.failed],
      ['completed / min', rate(snapshot.perMinute.completed)],
      ['failed / min', rate(snapshot.perMinute.failed)],
    ];
    panel.replaceChildren(
      heading,
      element(
        'div',
        { className: 'counts' },
        ...items.map(([name, value]) =>
          element('div', { className: 'count', 'data-count': name }, element('b', { text: typeof value === 'number' ? number(value) : value }), element('span', { text: name })),
        ),
      ),
      element('p', {
        className: 'reason',
        text: `${snapshot.location}; completed and failed are the jobs BullMQ keeps (queue.keepCompleted / keepFailed); rates are the workers' last five minutes.`,
      }),
    );
  }
  setTimeout(loadQueue, QUEUE_REFRESH_MS);
}

async function start() {
  try {
    meta = await getJson('/api/meta');
  } catch (error) {
    showError(`The dashboard server did not answer: ${error.message}`);
    return;
  }
  $('#source').textContent = `${meta.warehouse} · report-sync ${meta.version}`;
  const types = $('#report-types');
  for (const type of meta.reportTypes) {
    types.append(element('label', {}, element('input', { type: 'checkbox', name: 'reportType', value: type }), element('span', { text: type })));
  }
  $('#filters').addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(formParams());
  });
  $('#reset').addEventListener('click', (event) => {
    event.preventDefault();
    navigate(new URLSearchParams());
  });
  const grid = $('#grid');
  grid.addEventListener('mousemove', onHover);
  grid.addEventListener('mouseleave', () => {
    $('#tooltip').hidden = true;
  });
  grid.addEventListener('click', onClick);
  window.addEventListener('popstate', load);
  if (meta.queue) loadQueue();
  await load();
}

start();
