/**
 * The picker's styles, adopted as a constructed stylesheet: a page whose CSP forbids inline
 * styles (`style-src 'self'`, like the hub's own pages) still styles the shadow tree. Every colour
 * and size is a custom property so a partner can theme it from outside; `theme="dark"` and
 * `theme="auto"` (the default) switch the defaults. Narrow pickers (a container query on the
 * picker's own width, not the viewport, since partners embed it in columns) stack filters and
 * details as sheets over the grid.
 */
/** The dark defaults, for `theme="dark"` and for `theme="auto"` under a dark system preference. */
const DARK = `
  --_bg: var(--damhub-bg, #161a21);
  --_fg: var(--damhub-fg, #e8ebf1);
  --_muted: var(--damhub-muted, #aab2c0);
  --_surface: var(--damhub-surface, #20252e);
  --_border: var(--damhub-border, #3a4150);
  --_accent: var(--damhub-accent, #7fb0ff);
  --_accent-fg: var(--damhub-accent-fg, #0b1220);
  --_selected: var(--damhub-selected, #27406b);
  --_focus: var(--damhub-focus, #c9b8ff);
  --_danger: var(--damhub-danger, #ff8a80);
  color-scheme: dark;
`;

export const CSS = `
:host {
  --_bg: var(--damhub-bg, #ffffff);
  --_fg: var(--damhub-fg, #1d2330);
  --_muted: var(--damhub-muted, #555d6e);
  --_surface: var(--damhub-surface, #f3f5f8);
  --_border: var(--damhub-border, #c9ced8);
  --_accent: var(--damhub-accent, #1f5fcc);
  --_accent-fg: var(--damhub-accent-fg, #ffffff);
  --_selected: var(--damhub-selected, #dce8fc);
  --_focus: var(--damhub-focus, #6a3fd1);
  --_danger: var(--damhub-danger, #b3261e);
  --_radius: var(--damhub-radius, 8px);
  --_thumb: var(--damhub-thumb-size, 132px);
  --_height: var(--damhub-height, 34rem);
  display: block;
  font: var(--damhub-font, 14px/1.45 system-ui, sans-serif);
  color: var(--_fg);
  background: var(--_bg);
  border: 1px solid var(--_border);
  border-radius: var(--_radius);
  overflow: hidden;
  /* Native controls (checkboxes, scrollbars, the search box's clear button) follow the theme too. */
  color-scheme: light;
}
:host([theme="dark"]) {${DARK}}
@media (prefers-color-scheme: dark) {
  :host(:not([theme="light"])) {${DARK}}
}
.wrap { container-type: inline-size; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
button, input { font: inherit; color: inherit; }
button { background: var(--_surface); border: 1px solid var(--_border); border-radius: calc(var(--_radius) / 2); padding: .3rem .7rem; cursor: pointer; }
button:disabled { opacity: .55; cursor: default; }
button.primary { background: var(--_accent); color: var(--_accent-fg); border-color: var(--_accent); }
:focus-visible { outline: 3px solid var(--_focus); outline-offset: 2px; }
a { color: var(--_accent); }
.bar { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; padding: .6rem .8rem; border-bottom: 1px solid var(--_border); background: var(--_surface); }
.bar .who { display: flex; align-items: center; gap: .4rem; font-weight: 600; margin-right: auto; }
.bar .who img { width: 22px; height: 22px; }
.search { display: flex; gap: .3rem; flex: 1 1 16rem; min-width: 0; max-width: 28rem; }
.search input { background: var(--_bg); border: 1px solid var(--_border); border-radius: calc(var(--_radius) / 2); padding: .3rem .5rem; min-width: 0; flex: 1; }
.filters-toggle { display: none; }
.crumbs ol { display: flex; flex-wrap: wrap; list-style: none; margin: 0; padding: .4rem .8rem; gap: .2rem; }
.crumbs li + li::before { content: "/"; color: var(--_muted); margin-right: .2rem; }
.crumbs button { border: 0; background: none; padding: .1rem .3rem; color: var(--_accent); text-decoration: underline; }
.crumbs [aria-current] { color: var(--_fg); text-decoration: none; font-weight: 600; }
.status { padding: 0 .8rem; min-height: 1.4em; color: var(--_muted); }
.error { color: var(--_danger); padding: .3rem .8rem; display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; }
.error:empty { padding: 0; }
.error button { color: var(--_fg); }
.body { display: flex; height: var(--_height); border-top: 1px solid var(--_border); position: relative; }
.facets { width: 12rem; flex: none; overflow: auto; padding: .5rem .8rem; border-right: 1px solid var(--_border); }
.facets fieldset { border: 0; margin: 0 0 .8rem; padding: 0; }
.facets legend { font-weight: 600; padding: 0; margin-bottom: .2rem; }
.facets label { display: flex; gap: .35rem; align-items: baseline; }
.facets .count { color: var(--_muted); margin-left: auto; }
.main { flex: 1; overflow: auto; padding: .6rem .8rem; position: relative; }
.main.dragging { outline: 3px dashed var(--_accent); outline-offset: -6px; }
.folders { list-style: none; margin: 0 0 .6rem; padding: 0; display: flex; flex-wrap: wrap; gap: .4rem; }
.folders button::before { content: ""; display: inline-block; width: 1em; height: .75em; margin-right: .4rem; vertical-align: -1px; border-radius: 2px; background: var(--_accent); }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(var(--_thumb), 1fr)); gap: .6rem; }
.item { position: relative; border: 2px solid transparent; border-radius: var(--_radius); padding: .3rem; cursor: pointer; background: var(--_surface); min-width: 0; }
.item[aria-selected="true"] { border-color: var(--_accent); background: var(--_selected); }
.item[aria-disabled="true"] { cursor: not-allowed; }
.item[aria-disabled="true"] .thumb { opacity: .4; }
.item .thumb { display: block; width: 100%; aspect-ratio: 1; object-fit: contain; background: var(--_bg); border-radius: calc(var(--_radius) / 2); }
.item .name { display: block; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: .9em; margin-top: .2rem; }
/* The tick is drawn over the thumbnail's corner, out of the flow, so selecting never moves the thumbnail. */
.item .check { position: absolute; top: .45rem; right: .45rem; width: 1.5rem; height: 1.5rem; border-radius: 50%; display: none; }
.item[aria-selected="true"] .check { display: block; background: var(--_accent); border: 2px solid var(--_bg); }
.item[aria-selected="true"] .check::after { content: ""; position: absolute; left: .42rem; top: .18rem; width: .35rem; height: .7rem; border: solid var(--_accent-fg); border-width: 0 .16rem .16rem 0; transform: rotate(45deg); }
.skeleton .item { cursor: default; }
.skeleton .thumb { background: var(--_border); opacity: .5; animation: pulse 1.2s ease-in-out infinite alternate; }
.skeleton .name { height: 1.3em; width: 70%; background: var(--_border); opacity: .4; border-radius: 3px; }
@keyframes pulse { to { opacity: .25; } }
@media (prefers-reduced-motion: reduce) { .skeleton .thumb { animation: none; } }
.sentinel { padding: .8rem 0; text-align: center; color: var(--_muted); }
.empty { color: var(--_muted); padding: 2rem 0; text-align: center; }
.detail { width: 18rem; flex: none; overflow: auto; padding: .6rem .8rem; border-left: 1px solid var(--_border); }
.detail h2, .chooser h2 { font-size: 1.05em; margin: 0 0 .5rem; overflow-wrap: anywhere; }
.detail h3 { font-size: .95em; margin: .9rem 0 .3rem; }
.detail img { width: 100%; max-height: 12rem; object-fit: contain; background: var(--_surface); border-radius: calc(var(--_radius) / 2); }
.detail dl { display: grid; grid-template-columns: auto 1fr; gap: .15rem .6rem; margin: .4rem 0; }
.detail dt { color: var(--_muted); }
.detail dd { margin: 0; overflow-wrap: anywhere; }
.detail ul { margin: 0; padding-left: 1.1rem; }
.detail .close { float: right; }
.chooser { padding: 1.2rem; }
.providers { list-style: none; margin: 0; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: .8rem; }
.providers button { width: 100%; display: flex; gap: .7rem; align-items: center; padding: .8rem; text-align: left; }
.providers img { width: 40px; height: 40px; flex: none; }
.providers .pname { font-weight: 600; display: block; }
.providers .hint { color: var(--_muted); font-size: .9em; }
footer { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; justify-content: flex-end; padding: .6rem .8rem; border-top: 1px solid var(--_border); background: var(--_surface); }
footer .actions { display: flex; gap: .5rem; margin-left: auto; }
footer .count { margin-right: auto; color: var(--_muted); min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
footer button { white-space: nowrap; flex: none; }
.detail ol { margin: .3rem 0; padding-left: 1.3rem; }
.detail li + li { margin-top: .25rem; }
.detail q { display: block; color: var(--_muted); }
.uploads { list-style: none; margin: 0; padding: .3rem .8rem .5rem; display: grid; gap: .35rem; max-height: 11rem; overflow: auto; }
.uploads > li { display: grid; grid-template-columns: minmax(6rem, 14rem) minmax(5rem, 1fr) auto; grid-template-areas: "name bar actions" "state state actions"; gap: .1rem .6rem; align-items: center; padding: .35rem .5rem; border: 1px solid var(--_border); border-radius: calc(var(--_radius) / 2); background: var(--_surface); }
.uploads > li .uname { grid-area: name; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-weight: 600; }
.uploads > li progress { grid-area: bar; width: 100%; height: .6rem; accent-color: var(--_accent); }
.uploads > li .ustate { grid-area: state; color: var(--_muted); font-size: .9em; overflow-wrap: anywhere; }
.uploads > li .ufail { color: var(--_danger); }
.uploads > li .uactions { grid-area: actions; display: flex; flex-wrap: wrap; gap: .3rem; justify-content: flex-end; }
.destination { display: flex; flex-wrap: wrap; gap: .5rem .8rem; align-items: center; padding: .6rem .8rem; border-top: 1px solid var(--_border); background: var(--_surface); }
.destination .where { margin-right: auto; color: var(--_muted); min-width: 0; overflow-wrap: anywhere; }
.destination .field { display: flex; gap: .4rem; align-items: center; }
.destination input { background: var(--_bg); border: 1px solid var(--_border); border-radius: calc(var(--_radius) / 2); padding: .3rem .5rem; width: 16rem; max-width: 100%; }
@container (max-width: 40rem) {
  .bar { padding: .5rem; }
  .search { flex-basis: 100%; max-width: none; order: 1; }
  .filters-toggle { display: inline-block; }
  .filters-toggle[hidden] { display: none; }
  .facets, .detail { display: none; position: absolute; inset: 0; width: auto; z-index: 2; background: var(--_bg); border: 0; padding: .8rem; }
  .facets.open { display: block; }
  .detail { display: block; z-index: 3; }
  .main { padding: .5rem; }
  .grid { --_thumb: 96px; gap: .4rem; }
  footer { padding: .5rem; gap: .35rem; }
  .crumbs ol { padding: .3rem .5rem; }
  .uploads > li { grid-template-columns: 1fr auto; grid-template-areas: "name actions" "bar bar" "state state"; }
  .destination .field, .destination input { flex: 1 1 100%; width: auto; }
}
`;
