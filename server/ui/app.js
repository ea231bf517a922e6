// The page: a store picker, the token, and a view per address (`#/`, `#/user/NAME/TAB?agent=A`).

import { api, setToken, token, whenUnauthorized } from './api.js';
import { fill, h, status } from './dom.js';
import { state } from './state.js';
import { usersView, userView } from './views.js';

const main = document.getElementById('main');
const select = document.getElementById('store');
const panel = document.getElementById('token-panel');
const input = document.getElementById('token-input');

function route() {
  const [path, query] = location.hash.slice(1).split('?');
  const parts = (path || '/').split('/').filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || '');
  if (parts[0] === 'user' && parts[1]) {
    return userView(main, { user: parts[1], tab: parts[2] || 'timeline', agent: params.get('agent') || '' });
  }
  return usersView(main);
}

async function render() {
  try {
    await route();
  } catch (e) {
    fill(main, status('error', e.describe ? e.describe() : String(e)));
  }
}

function openToken(why) {
  document.getElementById('token-why').textContent =
    why || "The server's bearer token. It is kept for this tab only and sent with every request.";
  panel.hidden = false;
  input.value = '';
  input.focus();
}

function closeToken() {
  panel.hidden = true;
  document.getElementById('token-button').focus();
}

async function loadStores() {
  const pick = document.getElementById('store-pick');
  const name = document.getElementById('store-name');
  try {
    const list = await api('GET', '/v1/stores');
    const names = list.stores.includes(list.default) ? list.stores : [list.default, ...list.stores];
    fill(select, names.map((n) => h('option', { value: n === list.default ? '' : n, text: n === list.default ? `${n} (default)` : n })));
    if (state.store && !names.includes(state.store)) select.append(h('option', { value: state.store, text: state.store }));
    select.value = state.store;
    pick.hidden = false;
    name.hidden = true;
  } catch (e) {
    // A token bound to one user may not list stores: it reaches the server's own.
    pick.hidden = true;
    name.hidden = false;
    name.textContent = e.status === 401 ? '' : "the server's store";
  }
}

whenUnauthorized(() => openToken(token() ? 'The server refused this token. Enter another.' : 'This server needs a token.'));

document.getElementById('token-button').addEventListener('click', () => (panel.hidden ? openToken() : closeToken()));
document.getElementById('token-close').addEventListener('click', closeToken);
document.getElementById('token-clear').addEventListener('click', () => {
  setToken('');
  closeToken();
  loadStores();
  render();
});
const useToken = () => {
  setToken(input.value.trim());
  closeToken();
  loadStores();
  render();
};
document.getElementById('token-save').addEventListener('click', useToken);
input.addEventListener('keydown', (e) => {
  // Handled here: the key must not go on to the button that takes the focus next.
  if (e.key === 'Enter' || e.key === 'Escape') e.preventDefault();
  if (e.key === 'Enter') useToken();
  if (e.key === 'Escape') closeToken();
});
select.addEventListener('change', () => {
  state.store = select.value;
  sessionStorage.setItem('mnemon.store', state.store);
  if (location.hash === '#/' || location.hash === '') render();
  else location.hash = '#/';
});
window.addEventListener('hashchange', () => {
  render();
  main.focus({ preventScroll: true });
});

loadStores();
render();
