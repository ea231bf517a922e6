// Building the page without HTML strings: every piece of stored text becomes a text node.

/** An element: `props` sets properties (`class`, `text`, `on<event>` handlers, `attrs`), the rest are children. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'attrs') for (const [a, av] of Object.entries(v)) { if (av !== undefined && av !== null && av !== false) el.setAttribute(a, String(av)); }
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el[k] = v;
  }
  append(el, children);
  return el;
}

/** Appends children: strings and numbers as text, arrays flattened, empty values skipped. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A labelled control. */
export function field(label, control, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'field-name', text: label }), control, hint ? h('small', { text: hint }) : null);
}

/** A table: it scrolls sideways when wide, and on narrow screens each row stacks as a card whose
 * cells carry their column's name. */
export function table(caption, headers, rows) {
  const t = h('table', { class: 'stack' },
    h('caption', { class: 'sr', text: caption }),
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { attrs: { scope: 'col' }, text: x })))),
    h('tbody', {}, rows));
  t.headers = headers;
  labelCells(t);
  return h('div', { class: 'scroll', attrs: { role: 'region', 'aria-label': caption, tabindex: 0 } }, t);
}

/** Names each body cell by its column (for the stacked layout); call again after adding rows. */
export function labelCells(t) {
  for (const row of t.tBodies[0].rows) {
    [...row.cells].forEach((cell, i) => {
      if (!cell.hasAttribute('colspan') && t.headers[i]) cell.dataset.label = t.headers[i];
    });
  }
}

/** A message that screen readers announce. */
export function status(kind, text) {
  return h('p', { class: `status ${kind}`, attrs: { role: kind === 'error' ? 'alert' : 'status' }, text });
}

/** A number with thousands separators. */
export function num(n) {
  return Number(n).toLocaleString('en-US');
}
