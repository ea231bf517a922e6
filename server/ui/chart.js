// Bar charts drawn as SVG elements (no library, no inline style): one group of bars per month.

const SVG = 'http://www.w3.org/2000/svg';

function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

/** A grouped bar chart of `series` (`{name, cls, values}`) over `labels`, with a legend. */
export function barChart(title, labels, series) {
  const max = Math.max(1, ...series.flatMap((x) => x.values));
  const group = series.length;
  const barW = 10;
  const gap = 6;
  const slot = group * barW + gap;
  const left = 40;
  const height = 160;
  const width = left + labels.length * slot + 10;
  const svg = s('svg', { viewBox: `0 0 ${width} ${height + 40}`, width, height: height + 40, role: 'img', 'aria-label': title, class: 'chart' });
  svg.append(s('title', {}, title));
  for (const frac of [0, 0.5, 1]) {
    const y = 10 + height - frac * height;
    svg.append(s('line', { x1: left - 4, x2: width, y1: y, y2: y, class: 'grid' }));
    svg.append(s('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'axis' }, Math.round(max * frac)));
  }
  const every = Math.max(1, Math.ceil(labels.length / 12));
  labels.forEach((label, i) => {
    const x0 = left + i * slot;
    series.forEach((ser, j) => {
      const v = ser.values[i];
      const bh = (v / max) * height;
      const bar = s('rect', { x: x0 + j * barW, y: 10 + height - bh, width: barW - 1, height: Math.max(bh, v ? 1 : 0), class: `bar ${ser.cls}` });
      bar.append(s('title', {}, `${label}: ${v} ${ser.name}`));
      svg.append(bar);
    });
    if (i % every === 0) svg.append(s('text', { x: x0, y: height + 26, class: 'axis' }, label));
  });
  const legend = document.createElement('p');
  legend.className = 'legend';
  for (const ser of series) {
    const key = document.createElement('span');
    key.className = `key ${ser.cls}`;
    key.textContent = ser.name;
    legend.append(key);
  }
  const figure = document.createElement('figure');
  const caption = document.createElement('figcaption');
  caption.textContent = title;
  const scroll = document.createElement('div');
  scroll.className = 'scroll';
  scroll.append(svg);
  figure.append(caption, scroll, legend);
  return figure;
}
