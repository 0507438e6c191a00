/**
 * The hub's own HTML pages (sign-in forms, OAuth callback answers, the demo): one escaper, one
 * page shell, one stylesheet and the headers every such page gets. A leaf module: providers use it
 * for their sign-in pages without reaching into the HTTP layer above them.
 */
import type { FastifyReply } from 'fastify';

const CSP = "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text or an attribute value, escaped for HTML. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/**
 * The sign-in pages' stylesheet, served as its own file (the CSP's style-src 'self' refuses inline
 * styles). The dark palette is the picker's theme="auto", so the popup matches the page that opened it.
 */
export const SIGNIN_CSS = 'body{font:15px/1.5 system-ui,sans-serif;background:#f3f5f8;color:#1d2330;display:flex;justify-content:center;padding:3rem 1rem;margin:0}'
  + 'main{background:#fff;border:1px solid #d5d9e0;border-radius:10px;padding:2rem;max-width:24rem;width:100%}'
  + 'h1{font-size:1.3rem;margin:0 0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}'
  + '.row{display:flex;gap:.5rem;margin-top:1.2rem}button{flex:1;padding:.55rem;font:inherit;cursor:pointer;border-radius:6px;border:1px solid #8a93a3;background:#fff;color:#1d2330}'
  // The step forward (Sign in, Continue) is filled with the picker's accent; Cancel stays outlined.
  + 'button.primary{background:#1f5fcc;border-color:#1f5fcc;color:#fff;font-weight:600}button:focus-visible{outline:3px solid #6a3fd1;outline-offset:2px}'
  + '.error{color:#b00020}.hint{background:#eef4ff;padding:.6rem;border-radius:6px;font-size:.9rem}'
  + 'h2{font-size:1rem;margin:0 0 .5rem}.statement{border:1px solid #d5d9e0;border-radius:8px;padding:.8rem;margin:0 0 1rem}'
  + 'dl{display:grid;grid-template-columns:auto 1fr;gap:.2rem .8rem;margin:0 0 .6rem}dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}'
  + '.warning{font-weight:600}.statement p{margin:.4rem 0}'
  + ':root{color-scheme:light dark}'
  + '@media (prefers-color-scheme:dark){body{background:#161a21;color:#e8ebf1}main{background:#20252e;border-color:#3a4150}.statement{border-color:#3a4150}.error{color:#ff8a80}.hint{background:#27406b}a{color:#7fb0ff}'
  + 'button{background:#20252e;border-color:#7a8396;color:#e8ebf1}button.primary{background:#7fb0ff;border-color:#7fb0ff;color:#0b1220}button:focus-visible{outline-color:#c9b8ff}}';

/** A whole page: `body` is trusted HTML (escape what goes into it), `stylesheet` a same-origin URL, `lang` the language it is written in. */
export function htmlPage(title: string, body: string, stylesheet?: string, lang = 'en'): string {
  const css = stylesheet ? `<link rel="stylesheet" href="${esc(stylesheet)}">` : '';
  return `<!doctype html><html lang="${esc(lang)}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(title)}</title>${css}</head><body><main>${body}</main></body></html>`;
}

/**
 * An HTML page of the hub's own: own scripts and styles only, no framing, not cached.
 * `formTargets`: origins a form of the page may end at besides the hub (browsers check form-action
 * on the redirects a submission follows: the OAuth confirm page's Continue ends at the vendor).
 */
export function sendHtml(reply: FastifyReply, status: number, html: string | Buffer, formTargets: string[] = []): FastifyReply {
  const csp = formTargets.length ? CSP.replace("form-action 'self'", `form-action 'self' ${formTargets.join(' ')}`) : CSP;
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .headers({ 'content-security-policy': csp, 'x-frame-options': 'DENY', 'cache-control': 'no-store' })
    .send(html);
}
