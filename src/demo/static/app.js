// The demo partner's front end: plain fetch against the hub's contract.
const api = '/api/v1';
const $ = (id) => document.getElementById(id);
const log = (label, value) => { $('log').textContent = `${label}\n${JSON.stringify(value, null, 2)}\n\n` + $('log').textContent; };
let tokens = null;
let dam = null;
let providers = [];

async function call(path, { method = 'GET', headers = {}, body } = {}) {
  const res = await fetch(api + path, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  let data; try { data = JSON.parse(text); } catch { data = text; }
  if (!res.ok) { log(`${method} ${path} → ${res.status}`, data); throw new Error(data?.error?.code ?? res.status); }
  return data;
}
const auth = () => ({ authorization: `Bearer ${tokens.access_token}` });
const enable = (...ids) => ids.forEach((id) => { $(id).disabled = false; });

$('exchange').onclick = async () => {
  const { jwt } = await (await fetch('/demo/partner-token', { method: 'POST' })).json();
  tokens = await call('/auth/exchangeToken', { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
  log('exchangeToken', { ...tokens, access_token: tokens.access_token.slice(0, 24) + '…', refresh_token: tokens.refresh_token.slice(0, 24) + '…' });
  enable('check', 'refresh', 'providers', 'logout');
};
$('check').onclick = async () => log('checkToken', await call('/auth/checkToken', { headers: auth() }));
$('refresh').onclick = async () => {
  tokens = await call('/auth/refreshToken', { headers: { ...auth(), 'provider-authorization': `Bearer ${tokens.refresh_token}` } });
  log('refreshToken', { expires_in: tokens.expires_in, rotated: true });
};
$('providers').onclick = async () => {
  providers = await call('/auth/providers', { headers: auth() });
  log('providers', providers);
  $('provider-list').textContent = providers.map((p) => p.name).join(', ') || '(none configured)';
  if (providers.length) enable('login');
};
$('login').onclick = async () => {
  const p = providers.find((x) => x.isDefault) ?? providers[0];
  const popup = window.open('about:blank', 'damhub-login', 'width=480,height=640');
  const start = await call(`/auth/login?provider=${encodeURIComponent(p.id)}&polling=true`, { method: 'POST', headers: auth() });
  if (popup) popup.location.href = start.redirect_uri; else log('open this URL to sign in', start.redirect_uri);
  for (let i = 0; i < 150; i++) {
    await new Promise((r) => setTimeout(r, 2000));
    const r = await call(`/auth/login?state=${encodeURIComponent(start.state)}&polling=true`);
    if (r.error) { log('login failed', r); return; }
    if (r.access_token) { dam = r; log('DAM login complete', { userHash: r.userHash }); enable('browse'); return; }
  }
};
$('browse').onclick = async () => log('folder root', await call('/assets/folder/root?size=20', { headers: { ...auth(), 'provider-authorization': `Bearer ${dam.access_token}` } }));
$('logout').onclick = async () => {
  await fetch(api + '/auth/logout', { headers: auth() });
  log('logout', 'OK: the session and its refresh tokens are revoked');
};
