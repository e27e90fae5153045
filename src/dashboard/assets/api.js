// The JSON API next to the page (`<mount>/api/`), with the session's CSRF token on mutations.
import { state } from './state.js';

const api = new URL('../api/', import.meta.url);

export async function getJson(path, params) {
  const url = new URL(path, api);
  for (const [name, value] of params || []) url.searchParams.append(name, value);
  return reply(await fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store' }));
}

/**
 * A mutation with the session's CSRF token. Refused for its token (expired, or the app's
 * replicas changed their secret), the page fetches a new token and tries once more.
 */
export async function postJson(path, body) {
  const post = () => {
    const session = state.session;
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    if (session.csrfToken) headers[session.csrfHeader] = session.csrfToken;
    return fetch(new URL(path, api), { method: 'POST', headers, body: JSON.stringify(body) });
  };
  let response = await post();
  if (response.status === 403) {
    const refusal = await response.clone().json().catch(() => null);
    if (refusal && refusal.reason === 'csrf') {
      state.session = await getJson('session');
      response = await post();
    }
  }
  return reply(response);
}

async function reply(response) {
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error((body && body.message) || `HTTP ${response.status}`);
  return body;
}
