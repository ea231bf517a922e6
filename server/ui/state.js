// What every view reads: the store chosen (empty: the server's), and the addresses of views.

export const state = {
  store: sessionStorage.getItem('mnemon.store') || '',
};

/** The address of a user's tab. */
export function userHref(user, tab, agent) {
  const q = agent ? `?agent=${encodeURIComponent(agent)}` : '';
  return `#/user/${encodeURIComponent(user)}/${tab || 'timeline'}${q}`;
}

/** Whose memory and which store, as requests name them. */
export function target(view) {
  return { user_id: view.user, agent_id: view.agent || undefined, store: state.store || undefined };
}
