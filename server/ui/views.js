// The views: users, and a user's profile, timeline, notes, "what would the agent see", decision log,
// activity and exports.

import { api, qs, text } from './api.js';
import { barChart } from './chart.js';
import { field, fill, h, num, status, table } from './dom.js';
import { notesView } from './notes.js';
import { state, target, userHref } from './state.js';

const PAGE = 50;

/** Every user of the store, with a filter box and pages of 100. */
export async function usersView(main) {
  fill(main, h('h1', { text: 'Users' }), status('info', 'Loading users…'));
  const users = await api('GET', `/v1/users${qs({ store: state.store })}`);
  const find = h('input', { type: 'search', id: 'find-user', placeholder: 'name', attrs: { 'aria-describedby': 'user-count' } });
  const out = h('div');
  const count = h('p', { id: 'user-count', class: 'muted' });
  let page = 0;
  const show = () => {
    const needle = find.value.trim().toLowerCase();
    const shown = users.filter((u) => u.user.toLowerCase().includes(needle));
    const pages = Math.max(1, Math.ceil(shown.length / 100));
    page = Math.min(page, pages - 1);
    count.textContent = `${num(shown.length)} of ${num(users.length)} users`;
    const rows = shown.slice(page * 100, page * 100 + 100).map((u) =>
      h('tr', {},
        h('th', { attrs: { scope: 'row' } }, h('a', { href: userHref(u.user), text: u.user })),
        h('td', { text: u.latest || '—' }),
        h('td', { class: 'n', text: num(u.rounds) }),
        h('td', { class: 'n', text: num(u.notes) }),
        h('td', { class: 'n', text: num(u.facts) }),
        h('td', { class: 'n', text: num(u.superseded) }),
        h('td', {}, h('div', {}, u.agents.length
          ? u.agents.map((a) => h('a', { class: 'chip', href: userHref(u.user, 'timeline', a.agent), text: `${a.agent} · ${num(a.rounds + a.notes)}` }))
          : h('span', { class: 'muted', text: 'none' })))));
    fill(out,
      rows.length
        ? table('Users', ['User', 'Latest activity', 'Rounds', 'Notes', 'Facts', 'Superseded', 'Agents (private records)'], rows)
        : status('info', users.length ? 'No user matches.' : 'This store has no users yet.'),
      pages > 1 ? pager(page > 0 ? () => { page -= 1; show(); } : null, page < pages - 1 ? () => { page += 1; show(); } : null, `page ${page + 1} of ${pages}`) : null);
  };
  find.addEventListener('input', () => { page = 0; show(); });
  fill(main, h('h1', { text: 'Users' }), field('Find a user', find), count, out);
  show();
}

/** Runs `load`, showing its error in `body` instead of losing it. */
function safely(body, load) {
  return () => load().catch((e) => fill(body, status('error', e.describe ? e.describe() : String(e))));
}

/** Previous / next buttons around a label. */
function pager(previous, next, label) {
  return h('nav', { class: 'pager', attrs: { 'aria-label': 'Pages' } },
    h('button', { type: 'button', text: '← Previous', disabled: !previous, onclick: previous }),
    h('span', { text: label }),
    h('button', { type: 'button', text: 'Next →', disabled: !next, onclick: next }));
}

const TABS = [
  ['profile', 'Profile'],
  ['timeline', 'Timeline'],
  ['notes', 'Notes'],
  ['ask', 'What would the agent see?'],
  ['decisions', 'Decision log'],
  ['activity', 'Activity'],
  ['export', 'Export'],
];

/** A user's page: their agents, the tabs, and the tab's view. */
export async function userView(main, view) {
  const body = h('section', { id: 'tab-body', attrs: { 'aria-live': 'polite' } });
  const agents = h('span', { class: 'agents' });
  fill(main,
    h('p', { class: 'crumbs' }, h('a', { href: '#/', text: 'Users' }), ' / '),
    h('h1', {}, view.user, view.agent ? h('span', { class: 'muted', text: ` as agent ${view.agent}` }) : null),
    agents,
    h('nav', { class: 'tabs', attrs: { 'aria-label': 'Views' } },
      TABS.map(([tab, label]) => h('a', {
        href: userHref(view.user, tab, view.agent), text: label,
        class: tab === view.tab ? 'tab current' : 'tab', attrs: { 'aria-current': tab === view.tab ? 'page' : null },
      }))),
    body);
  // The user's agents, from the store's list (a bound token sees only its own).
  api('GET', `/v1/users${qs({ store: state.store })}`).then((users) => {
    const me = users.find((u) => u.user === view.user);
    if (!me || !me.agents.length) return;
    fill(agents, 'Agent: ',
      h('a', { href: userHref(view.user, view.tab), class: view.agent ? 'chip' : 'chip current', text: 'all (shared memory)' }),
      me.agents.map((a) => h('a', { href: userHref(view.user, view.tab, a.agent), class: a.agent === view.agent ? 'chip current' : 'chip', text: a.agent })));
  }).catch(() => {});
  const views = { profile: profileView, timeline: timelineView, notes: notesView, ask: askView, decisions: decisionsView, activity: activityView, export: exportView };
  await (views[view.tab] || timelineView)(body, view);
}

/** Pages of rounds, oldest first, each with its facts. */
async function timelineView(body, view) {
  const cursors = [null];
  const load = async (at) => {
    const page = await api('POST', '/v1/timeline', { ...target(view), limit: PAGE, cursor: cursors[at] || undefined });
    if (page.next) cursors[at + 1] = page.next;
    const first = page.total ? page.offset + 1 : 0;
    const label = `rounds ${num(first)}–${num(page.offset + page.rounds.length)} of ${num(page.total)}`;
    const nav = () => pager(at > 0 ? safely(body, () => load(at - 1)) : null, page.next ? safely(body, () => load(at + 1)) : null, label);
    let session = null;
    const items = [];
    for (const r of page.rounds) {
      if (r.session !== session) {
        session = r.session;
        items.push(h('h3', { class: 'session', text: `Session ${session}` }));
      }
      items.push(roundCard(r, view));
    }
    fill(body, h('h2', { text: 'Timeline' }), nav(),
      page.rounds.length ? items : status('info', 'No conversation rounds in this scope.'), page.rounds.length > 5 ? nav() : null);
  };
  await load(0);
}

function roundCard(r, view) {
  return h('article', { class: 'round', attrs: { 'data-key': r.key } },
    h('header', {}, h('time', { text: r.ts }), r.agent ? h('span', { class: 'chip', text: `agent ${r.agent}` }) : null,
      h('code', { class: 'key', text: r.key })),
    r.turns.map((t) => h('p', { class: `turn ${t.role}` }, h('strong', { text: `${t.speaker || t.role}: ` }), t.content)),
    r.facts.length ? h('ul', { class: 'facts', attrs: { 'aria-label': 'Facts' } }, r.facts.map((f) => factItem(f, view))) : null);
}

function factItem(f, view) {
  const when = f.mention
    ? h('span', { class: 'when', attrs: { title: 'The time mentioned, resolved against the round\u2019s date' } },
      `“${f.mention}”`, f.valid_time ? ` → ${f.valid_time}` : '')
    : null;
  if (!f.superseded_by) {
    return h('li', { class: 'fact', attrs: { 'data-key': f.key } }, f.content, ' ', when,
      f.supersedes && f.supersedes.length ? h('span', { class: 'muted', text: ` (replaces ${f.supersedes.length} earlier fact${f.supersedes.length > 1 ? 's' : ''})` }) : null);
  }
  const s = f.supersession || {};
  const shown = h('span', { class: 'replacement' });
  const follow = async () => {
    try {
      const record = await api('GET', `/v1/memories/${encodeURIComponent(f.superseded_by)}${qs(target(view))}`);
      fill(shown, ' → ', h('q', { text: record.content }), h('span', { class: 'muted', text: ` (from the round of ${record.key.split('/')[0].split('#')[0]})` }));
    } catch (e) {
      fill(shown, status('error', e.describe ? e.describe() : String(e)));
    }
  };
  return h('li', { class: 'fact superseded', attrs: { 'data-key': f.key } },
    h('s', { text: f.content }), ' ', when,
    h('div', { class: 'why' },
      h('span', { class: 'rule', text: `superseded by rule ${s.rule || 'unrecorded'}` }),
      s.old !== undefined || s.new !== undefined ? h('span', { text: `: ${s.old ?? '—'} → ${s.new ?? '—'}` }) : null,
      s.at ? h('span', { class: 'muted', text: ` at ${s.at}` }) : null, ' ',
      h('button', { type: 'button', class: 'link', text: `what replaced it (${f.superseded_by})`, onclick: follow }),
      shown));
}

/** The exact block a question would get, and why each record is in it or was cut. */
async function askView(body, view) {
  const question = h('input', { type: 'text', id: 'ask-query', required: true, placeholder: 'What is my dog called?' });
  const angles = h('textarea', { id: 'ask-angles', rows: 2, placeholder: 'one per line' });
  const budget = h('input', { type: 'number', id: 'ask-budget', min: 200, step: 100, placeholder: 'server default' });
  const topK = h('input', { type: 'number', id: 'ask-topk', min: 1, max: 1000, placeholder: '10' });
  const asOf = h('input', { type: 'date', id: 'ask-asof' });
  const out = h('div', { id: 'ask-out' });
  const go = async () => {
    const request = {
      ...target(view), query: question.value, explain: true,
      angles: angles.value.split('\n').map((a) => a.trim()).filter(Boolean),
      budget: budget.value ? Number(budget.value) : undefined,
      top_k: topK.value ? Number(topK.value) : undefined,
      as_of: asOf.value ? `${asOf.value}T23:59:59` : undefined,
    };
    fill(out, status('info', 'Asking…'));
    try {
      const r = await api('POST', '/v1/recall', request);
      const phrasing = (i) => (i === 0 ? 'the question' : `angle ${i}: ${request.angles[i - 1]}`);
      const rows = (r.records || []).map((x, i) => h('tr', { class: x.kept ? 'kept' : 'cut' },
        h('td', { class: 'n', text: i + 1 }),
        h('td', {}, h('code', { text: x.key })),
        h('td', { text: x.kind }),
        h('td', { class: 'n', text: x.score.toFixed(4) }),
        h('td', { class: 'n', text: x.cosine.toFixed(3) }),
        h('td', {}, h('span', { class: `label ${x.relevance}`, text: x.relevance })),
        h('td', { text: [x.dense ? `dense #${x.dense}` : null, x.words ? `words #${x.words}` : null, x.window ? `time window #${x.window}` : null].filter(Boolean).join(', ') || '—' }),
        h('td', { text: phrasing(x.angle) }),
        h('td', { text: x.kept ? 'in the block' : 'cut by the budget' })));
      const limit = r.budget ? `${num(r.budget)} budget` : 'no budget';
      fill(out,
        h('p', { class: 'meter' },
          h('meter', { min: 0, max: r.budget || r.tokens || 1, value: r.tokens, attrs: { 'aria-label': 'tokens used' } }),
          ` ${num(r.tokens)} tokens of ${limit}`, r.truncated ? ' · some records were cut' : '', r.cut ? ' · the top record was shortened' : ''),
        h('h3', { text: 'The block the agent gets' }),
        h('pre', { class: 'block', id: 'ask-block', tabIndex: 0, text: r.context }),
        h('h3', { text: 'Every record ranked, best first' }),
        rows.length ? table('Records ranked', ['#', 'Key', 'Kind', 'Score', 'Cosine', 'Relevance', 'Why', 'Phrasing', 'Outcome'], rows) : status('info', 'Nothing in this scope matched.'));
    } catch (e) {
      fill(out, status('error', e.describe ? e.describe() : String(e)));
    }
  };
  const ask = h('button', { type: 'button', id: 'ask-go', text: 'Show what the agent sees', onclick: go });
  question.addEventListener('keydown', (e) => { if (e.key === 'Enter') go(); });
  fill(body, h('h2', { text: 'What would the agent see?' }),
    h('div', { class: 'form' },
      field('Question', question), field('Angles', angles, 'other phrasings, ranked too and merged'),
      h('div', { class: 'row' }, field('Budget (tokens)', budget), field('Records per phrasing', topK),
        field('Memory as it stood on', asOf, 'empty: now')),
      ask),
    out);
}

/** The decision log a page at a time, filtered by kind. */
async function decisionsView(body, view) {
  const kind = h('select', { id: 'decision-kind' }, h('option', { value: '', text: 'every kind' }));
  const out = h('div');
  let cursors = [null];
  const load = async (at) => {
    const page = await api('POST', '/v1/decisions', { ...target(view), kinds: kind.value ? [kind.value] : [], limit: PAGE, cursor: cursors[at] || undefined });
    if (page.next) cursors[at + 1] = page.next;
    if (kind.options.length === 1) {
      for (const [k, n] of Object.entries(page.kinds)) kind.append(h('option', { value: k, text: `${k} (${num(n)})` }));
    }
    const rows = page.decisions.map((d) => h('tr', { attrs: { 'data-kind': d.kind } },
      h('td', { text: d.at }), h('td', {}, h('code', { text: d.kind })), h('td', {}, h('code', { text: d.record })),
      h('td', {}, d.other ? h('code', { text: d.other }) : '—'), h('td', { class: 'detail', text: d.detail })));
    fill(out, rows.length ? table('Decisions', ['At', 'Kind', 'Record', 'Other', 'Detail'], rows) : status('info', 'No decision of this kind.'),
      pager(at > 0 ? safely(out, () => load(at - 1)) : null, page.next ? safely(out, () => load(at + 1)) : null, `page ${at + 1}`));
  };
  kind.addEventListener('change', () => { cursors = [null]; safely(out, () => load(0))(); });
  fill(body, h('h2', { text: 'Decision log' }), field('Kind', kind), out);
  await load(0);
}

/** What the user holds true now: the current facts by relation. */
async function profileView(body, view) {
  const p = await api('GET', `/v1/profile${qs(target(view))}`);
  if (!p.relations.length) {
    fill(body, h('h2', { text: 'Profile' }), status('info', 'No current fact yet: facts come from rounds an extractor read.'));
    return;
  }
  const rows = p.relations.flatMap((r) => r.facts.map((f, i) => h('tr', {},
    h('th', { attrs: { scope: 'row' }, text: i === 0 ? r.relation : '' }),
    h('td', { text: f.content }),
    h('td', { text: f.value || '' }),
    h('td', { text: f.since }),
    h('td', { class: 'n', text: num(f.changes) }))));
  fill(body, h('h2', { text: 'Profile' }),
    h('p', { text: 'What the user holds true now: every current fact the user stated, by relation. Superseded facts are left out; "changes" counts the earlier facts each one replaced.' }),
    table('Profile', ['Relation', 'Fact', 'Value', 'Since', 'Changes'], rows));
}

/** Records, facts and supersessions per month, as charts and as a table. */
async function activityView(body, view) {
  const a = await api('GET', `/v1/activity${qs(target(view))}`);
  if (!a.months.length) {
    fill(body, h('h2', { text: 'Activity' }), status('info', 'Nothing stored yet.'));
    return;
  }
  const months = a.months.map((m) => m.month);
  fill(body, h('h2', { text: 'Activity' }),
    barChart('Records per month (rounds and notes) and facts extracted', months, [
      { name: 'rounds', cls: 's1', values: a.months.map((m) => m.rounds) },
      { name: 'notes', cls: 's2', values: a.months.map((m) => m.notes) },
      { name: 'facts', cls: 's3', values: a.months.map((m) => m.facts) },
    ]),
    barChart('Supersessions per month', months, [{ name: 'supersessions', cls: 's4', values: a.months.map((m) => m.supersessions) }]),
    h('details', {}, h('summary', { text: 'The numbers' }),
      table('Activity per month', ['Month', 'Rounds', 'Notes', 'Facts', 'Supersessions'],
        a.months.map((m) => h('tr', {}, h('th', { attrs: { scope: 'row' }, text: m.month }),
          [m.rounds, m.notes, m.facts, m.supersessions].map((n) => h('td', { class: 'n', text: num(n) })))))));
}

/** Downloads of the scope's exports. */
async function exportView(body, view) {
  const asOf = h('input', { type: 'date', id: 'export-asof' });
  const note = h('div');
  const download = (format, ext, kind) => async () => {
    try {
      const t = await text(`/v1/export${qs({ ...target(view), format, as_of: asOf.value && format !== 'jsonl' ? `${asOf.value}T23:59:59` : undefined })}`);
      const url = URL.createObjectURL(new Blob([t], { type: kind }));
      const a = h('a', { href: url, download: `${view.user}${view.agent ? `.${view.agent}` : ''}.${ext}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      fill(note, status('ok', `Downloaded ${num(t.length)} characters as ${format}.`));
    } catch (e) {
      fill(note, status('error', e.describe ? e.describe() : String(e)));
    }
  };
  fill(body, h('h2', { text: 'Export' }),
    h('p', { text: 'Everything this scope holds: notes, rounds with their facts; the text form adds every fact record and the decision log; the dump loads back with an import.' }),
    field('As it stood on (Markdown and text)', asOf, 'empty: now'),
    h('div', { class: 'row' },
      h('button', { type: 'button', id: 'export-markdown', text: 'Markdown', onclick: download('markdown', 'md', 'text/markdown') }),
      h('button', { type: 'button', id: 'export-text', text: 'Text', onclick: download('text', 'txt', 'text/plain') }),
      h('button', { type: 'button', id: 'export-jsonl', text: 'Dump (JSONL)', onclick: download('jsonl', 'jsonl', 'application/jsonl') })),
    note);
}
