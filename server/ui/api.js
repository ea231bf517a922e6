// The JSON API, with the token the user entered for this tab.

const KEY = 'mnemon.token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

/** An error answered by the API: its stable code, its message, and the field it names. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body.message || `HTTP ${status}`);
    this.status = status;
    this.code = body.code || `http_${status}`;
    this.field = body.field || null;
  }
  /** The message as the API gave it, with its field. */
  describe() {
    return this.field ? `${this.field}: ${this.message}` : this.message;
  }
}

let onUnauthorized = () => {};
export function whenUnauthorized(f) {
  onUnauthorized = f;
}

async function send(method, path, body) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    let error = {};
    try {
      error = (await response.json()).error || {};
    } catch (_) {
      error = { message: `HTTP ${response.status}` };
    }
    const e = new ApiError(response.status, error);
    if (response.status === 401) onUnauthorized(e);
    throw e;
  }
  return response;
}

/** A JSON request; the answer parsed. */
export async function api(method, path, body) {
  return (await send(method, path, body)).json();
}

/** A GET whose answer is text (an export). */
export async function text(path) {
  return (await send('GET', path)).text();
}

/** A query string of the non-empty values. */
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
