// Notes: the filters of `list` and `search`, and edit, delete, copy and move through the API.

import { api, qs } from './api.js';
import { field, fill, h, labelCells, status, table } from './dom.js';
import { state, target } from './state.js';

const KINDS = ['semantic', 'episodic', 'procedural'];
const LABELS = { any: undefined, low: 0.5, medium: 0.75, high: 0.9 };

function tagsOf(text) {
  return text.split(',').map((t) => t.trim()).filter(Boolean);
}

/** The notes of a scope: a filter form, a table a page at a time, and a form to add one. */
export async function notesView(body, view) {
  const q = h('input', { type: 'search', id: 'notes-query', placeholder: 'search by meaning and words (empty: list newest first)' });
  const tags = h('input', { type: 'text', id: 'notes-tags', placeholder: 'comma-separated, any of' });
  const kinds = KINDS.map((k) => h('input', { type: 'checkbox', value: k, id: `notes-kind-${k}` }));
  const after = h('input', { type: 'date', id: 'notes-after' });
  const before = h('input', { type: 'date', id: 'notes-before' });
  const label = h('select', { id: 'notes-label' }, Object.keys(LABELS).map((l) => h('option', { value: l, text: l === 'any' ? 'any relevance' : `${l} and above` })));
  const message = h('div', { id: 'notes-message' });
  const out = h('div', { id: 'notes-out' });
  let cursor = null;

  const filter = () => ({
    tags_any: tagsOf(tags.value),
    kinds: kinds.filter((k) => k.checked).map((k) => k.value),
    after: after.value ? `${after.value}T00:00:00` : undefined,
    before: before.value ? `${before.value}T23:59:59` : undefined,
  });
  const say = (kind, text) => fill(message, status(kind, text));
  const fail = (e) => say('error', e.describe ? e.describe() : String(e));

  const run = async (more) => {
    try {
      let notes;
      let scores = null;
      if (q.value.trim()) {
        const found = await api('POST', '/v1/memories/search', { ...target(view), query: q.value, filter: filter(), limit: 50, min_score: LABELS[label.value] });
        notes = found.hits.map((x) => x.note);
        scores = found.hits.map((x) => x);
        cursor = null;
      } else {
        const page = await api('POST', '/v1/memories/list', { ...target(view), filter: filter(), limit: 50, cursor: more ? cursor : undefined });
        notes = page.notes;
        cursor = page.next;
      }
      const rows = notes.map((n, i) => noteRow(n, scores && scores[i], view, say, fail));
      if (more) {
        out.querySelector('tbody').append(...rows);
        labelCells(out.querySelector('table'));
      } else {
        fill(out, rows.length
          ? table('Notes', ['Note', 'Tags', 'Kind', 'Importance', 'Stated', scores ? 'Relevance' : 'Updated', 'Actions'], rows)
          : status('info', 'No note matches.'));
      }
      const moreButton = h('button', { type: 'button', id: 'notes-more', text: 'More', onclick: () => run(true) });
      out.querySelector('#notes-more')?.remove();
      if (cursor) out.append(moreButton);
    } catch (e) {
      fail(e);
    }
  };

  const content = h('textarea', { id: 'new-content', rows: 2 });
  const newTags = h('input', { type: 'text', id: 'new-tags', placeholder: 'comma-separated' });
  const newKind = h('select', { id: 'new-kind' }, KINDS.map((k) => h('option', { value: k, text: k })));
  const save = async () => {
    try {
      const saved = await api('POST', '/v1/memories', { ...target(view), memories: [{ content: content.value, tags: tagsOf(newTags.value), kind: newKind.value }] });
      const m = saved.memories[0];
      say('ok', m.stored ? `Saved as ${m.key}.` : `Already stored as ${m.key}.`);
      content.value = '';
      run(false);
    } catch (e) {
      fail(e);
    }
  };

  q.addEventListener('keydown', (e) => { if (e.key === 'Enter') run(false); });
  fill(body, h('h2', { text: 'Notes' }),
    h('div', { class: 'form' },
      field('Search', q),
      h('div', { class: 'row' }, field('Tags', tags),
        h('fieldset', {}, h('legend', { text: 'Kinds' }), kinds.map((k) => h('label', { class: 'check' }, k, ` ${k.value}`))),
        field('After', after), field('Before', before), field('Relevance (search)', label)),
      h('div', { class: 'row' }, h('button', { type: 'button', id: 'notes-go', text: 'Show notes', onclick: () => run(false) }))),
    message, out,
    h('details', { class: 'add' }, h('summary', { text: 'Add a note' }),
      h('div', { class: 'form' }, field('Content', content), h('div', { class: 'row' }, field('Tags', newTags), field('Kind', newKind)),
        h('button', { type: 'button', id: 'new-save', text: 'Save note', onclick: save }))));
  await run(false);
}

function noteRow(n, hit, view, say, fail) {
  const row = h('tr', { attrs: { 'data-key': n.key } });
  const cells = () => [
    h('td', { class: 'note' }, h('div', {}, n.title ? h('strong', { text: n.title }) : null, n.title ? h('br') : null,
      h('span', { class: 'content', text: n.content }), h('br'), h('code', { class: 'key', text: n.key }))),
    h('td', {}, h('div', {}, n.tags.map((t) => h('span', { class: 'chip', text: t })))),
    h('td', { text: n.kind }),
    h('td', { class: 'n', text: n.importance.toFixed(2) }),
    h('td', { text: n.ts }),
    h('td', {}, hit ? h('span', { class: `label ${hit.relevance}`, text: `${hit.relevance} ${hit.score.toFixed(2)}` }) : n.updated || '—'),
    h('td', { class: 'actions' }, h('div', {},
      h('button', { type: 'button', class: 'edit', text: 'Edit', onclick: edit }),
      h('button', { type: 'button', class: 'delete', text: 'Delete', onclick: remove }),
      h('button', { type: 'button', class: 'transfer', text: 'Copy or move', onclick: transfer }))),
  ];
  const show = () => {
    fill(row, cells());
    const t = row.closest('table');
    if (t) labelCells(t);
  };
  async function remove() {
    if (!window.confirm(`Delete this note? Nothing of it is left in the store.\n\n${n.content}`)) return;
    try {
      await api('DELETE', `/v1/memories/${encodeURIComponent(n.key)}${qs(target(view))}`);
      row.remove();
      say('ok', `Deleted ${n.key}.`);
    } catch (e) {
      fail(e);
    }
  }
  function edit() {
    const content = h('textarea', { class: 'edit-content', rows: 3, value: n.content });
    const title = h('input', { type: 'text', class: 'edit-title', value: n.title || '' });
    const tags = h('input', { type: 'text', class: 'edit-tags', value: n.tags.join(', ') });
    const kind = h('select', { class: 'edit-kind' }, KINDS.map((k) => h('option', { value: k, text: k, selected: k === n.kind })));
    const importance = h('input', { type: 'number', class: 'edit-importance', step: '0.05', value: String(n.importance) });
    const save = async () => {
      const change = {
        ...target(view), content: content.value, title: title.value.trim() ? title.value : null,
        tags: tagsOf(tags.value), kind: kind.value, importance: Number(importance.value),
      };
      try {
        n = await api('PATCH', `/v1/memories/${encodeURIComponent(n.key)}`, change);
        say('ok', `Saved ${n.key}.`);
        show();
      } catch (e) {
        fail(e);
      }
    };
    fill(row, h('td', { attrs: { colspan: 7 } },
      h('div', { class: 'form' }, field('Content', content), h('div', { class: 'row' }, field('Title', title), field('Tags', tags), field('Kind', kind), field('Importance (0 to 1)', importance)),
        h('div', { class: 'row' }, h('button', { type: 'button', class: 'save', text: 'Save', onclick: save }), h('button', { type: 'button', text: 'Cancel', onclick: show })))));
    content.focus();
  }
  function transfer() {
    const to = h('input', { type: 'text', class: 'transfer-to', placeholder: 'global, a .db file or a project', attrs: { list: 'known-stores' } });
    const go = (move) => async () => {
      try {
        const report = await api('POST', `/v1/memories/${move ? 'move' : 'copy'}`, { ...target(view), keys: [n.key], to: to.value });
        say('ok', `${move ? 'Moved' : 'Copied'} to ${to.value}: ${JSON.stringify(report)}`);
        if (move) row.remove();
        else show();
      } catch (e) {
        fail(e);
      }
    };
    const known = h('datalist', { id: 'known-stores' });
    api('GET', '/v1/stores').then((l) => fill(known, l.stores.filter((s) => s !== (state.store || l.default)).map((s) => h('option', { value: s })))).catch(() => {});
    fill(row, h('td', { attrs: { colspan: 7 } },
      h('div', { class: 'form' }, h('p', { text: n.content }), field('To store', to), known,
        h('div', { class: 'row' }, h('button', { type: 'button', class: 'copy', text: 'Copy', onclick: go(false) }),
          h('button', { type: 'button', class: 'move', text: 'Move', onclick: go(true) }), h('button', { type: 'button', text: 'Cancel', onclick: show })))));
    to.focus();
  }
  show();
  return row;
}

