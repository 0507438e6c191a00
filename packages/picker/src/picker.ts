/**
 * `<damhub-picker>`: the asset picker a partner drops into a page. All hub traffic goes through
 * @damhub/client (token manager, DAM login popup, paging iterators that follow `more`); this file
 * is only the UI: provider chooser, breadcrumb, facets, an infinitely scrolling listbox of
 * thumbnails, search by keyword and by image, a detail panel, and the `select` event.
 */
import {
  capabilitiesOf, DamhubClient, DamhubError, memoryStorage, webStorage,
  type Asset, type Filter, type Folder, type FolderResult, type ProviderListItem, type SearchResult, type StateStorage,
} from '@damhub/client';
import { formatBytes, formatDate, h, replace } from './dom.js';
import { CSS } from './styles.js';

type View =
  | { kind: 'folder'; id: string; path: Folder[] }
  | { kind: 'search'; query: string; path: Folder[] }
  | { kind: 'image'; name: string; image: Blob; path: Folder[] };

type Page = FolderResult | SearchResult;

/** What `select` events carry in `event.detail`. */
export interface PickerSelectDetail {
  provider: string;
  assets: Asset[];
}

const ROOT: Folder = { id: 'root', name: 'Home' };

let sheet: CSSStyleSheet | null = null;

export class DamhubPicker extends HTMLElement {
  /** Set a ready client instead of the `hub` / `token-url` attributes (e.g. to share its session). */
  client: DamhubClient | null = null;
  /** Mints a partner JWT; overrides `token-url`. */
  getPartnerJwt: (() => Promise<string>) | null = null;

  private readonly root: ShadowRoot;
  private providers: ProviderListItem[] = [];
  private provider: ProviderListItem | null = null;
  private view: View = { kind: 'folder', id: 'root', path: [ROOT] };
  private activeFilters: string[] = [];
  private facets: Filter[] = [];
  private assets: Asset[] = [];
  private total = 0;
  private pages: AsyncGenerator<Page> | null = null;
  private loading = false;
  private done = true;
  private generation = 0;
  private focusIndex = 0;
  private readonly selected = new Map<string, Asset>();
  private detailId: string | null = null;
  private observer: IntersectionObserver | null = null;
  private started = false;
  private built = false;

  private readonly els = {
    who: h('span', { class: 'who' }),
    search: h('form', { class: 'search', role: 'search', hidden: true }),
    query: h('input', { type: 'search', name: 'q', placeholder: 'Search assets', 'aria-label': 'Search assets', autocomplete: 'off' }),
    imageButton: h('button', { type: 'button', class: 'image-search', hidden: true }, 'Search by image'),
    file: h('input', { type: 'file', accept: 'image/*', hidden: true, tabindex: -1, 'aria-hidden': 'true' }),
    switchButton: h('button', { type: 'button', hidden: true }, 'Switch library'),
    crumbs: h('nav', { class: 'crumbs', 'aria-label': 'Folder path', hidden: true }),
    status: h('div', { class: 'status', role: 'status', 'aria-live': 'polite' }),
    error: h('div', { class: 'error', role: 'alert' }),
    content: h('div', { class: 'content' }),
    facets: h('aside', { class: 'facets', 'aria-label': 'Filters' }),
    main: h('section', { class: 'main', 'aria-label': 'Assets' }),
    folders: h('ul', { class: 'folders', 'aria-label': 'Subfolders' }),
    grid: h('div', { class: 'grid', role: 'listbox', 'aria-label': 'Assets', tabindex: -1 }),
    sentinel: h('div', { class: 'sentinel' }),
    detail: h('aside', { class: 'detail', 'aria-label': 'Asset details', hidden: true }),
    footer: h('footer', { hidden: true }),
    count: h('span', { class: 'count', 'aria-live': 'polite' }),
    clear: h('button', { type: 'button', disabled: true }, 'Clear selection'),
    insert: h('button', { type: 'button', class: 'primary', disabled: true }, 'Select'),
  };

  constructor() {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    sheet ??= new CSSStyleSheet();
    if (!sheet.cssRules.length) sheet.replaceSync(CSS);
    this.root.adoptedStyleSheets = [sheet];
  }

  get multiple(): boolean {
    return this.hasAttribute('multiple');
  }

  private get pageSize(): number | undefined {
    const n = Number(this.getAttribute('page-size'));
    return Number.isInteger(n) && n > 0 ? n : undefined;
  }

  connectedCallback(): void {
    if (this.started) return;
    this.started = true;
    if (!this.built) this.build();
    this.built = true;
    void this.start();
  }

  disconnectedCallback(): void {
    this.observer?.disconnect();
    this.observer = null;
    this.started = false;
    this.generation++;
  }

  /** The assets currently selected. */
  get selectedAssets(): Asset[] {
    return [...this.selected.values()];
  }

  // ── set-up ──────────────────────────────────────────────────────────────────────────────────
  private build(): void {
    const e = this.els;
    e.search.append(e.query, h('button', { type: 'submit' }, 'Search'));
    e.search.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const query = e.query.value.trim();
      if (query) this.open({ kind: 'search', query, path: [ROOT] });
      else this.open({ kind: 'folder', id: this.currentFolder().id, path: this.view.path });
    });
    e.imageButton.setAttribute('aria-label', 'Search by image: choose a file, or drop or paste an image');
    e.imageButton.addEventListener('click', () => e.file.click());
    e.file.addEventListener('change', () => {
      const f = e.file.files?.[0];
      if (f) this.searchByImage(f, f.name);
      e.file.value = '';
    });
    e.switchButton.addEventListener('click', () => this.showChooser());
    e.clear.addEventListener('click', () => this.clearSelection());
    e.insert.addEventListener('click', () => this.emitSelect());
    e.footer.append(e.count, e.clear, e.insert);
    e.grid.addEventListener('keydown', (ev) => this.onKey(ev));
    e.grid.addEventListener('focusin', (ev) => {
      const i = this.indexOf(ev.target);
      if (i >= 0) this.focusIndex = i;
    });
    e.grid.addEventListener('click', (ev) => {
      const i = this.indexOf(ev.target);
      if (i >= 0) this.activate(i, ev.shiftKey || ev.ctrlKey || ev.metaKey);
    });
    e.main.append(e.folders, e.grid, e.sentinel);
    this.wireDrop();
    this.root.append(
      h('div', { class: 'bar' }, e.who, e.search, e.imageButton, e.file, e.switchButton),
      e.crumbs, e.error, e.status, e.content, e.footer,
    );
    this.addEventListener('paste', (ev) => {
      const file = [...(ev.clipboardData?.files ?? [])].find((f) => f.type.startsWith('image/'));
      if (file && this.canSearchByImage()) {
        ev.preventDefault();
        this.searchByImage(file, file.name || 'pasted image');
      }
    });
  }

  private makeClient(): DamhubClient {
    if (this.client) return this.client;
    const tokenUrl = this.getAttribute('token-url');
    const getJwt = this.getPartnerJwt;
    const persist = this.getAttribute('persist') ?? 'session';
    let storage: StateStorage = memoryStorage();
    try {
      if (persist === 'session') storage = webStorage(sessionStorage, 'damhub-picker');
      else if (persist === 'local') storage = webStorage(localStorage, 'damhub-picker');
    } catch {
      /* storage blocked (sandboxed frame): keep the session in memory */
    }
    this.client = new DamhubClient({
      baseUrl: this.getAttribute('hub') || location.origin,
      storage,
      getPartnerJwt: getJwt ? () => getJwt() : tokenUrl ? async ({ signal }) => {
        const res = await fetch(tokenUrl, { method: 'POST', credentials: 'same-origin', signal });
        if (!res.ok) throw new Error(`the partner token endpoint answered ${res.status}`);
        return ((await res.json()) as { jwt: string }).jwt;
      } : undefined,
    });
    return this.client;
  }

  private async start(): Promise<void> {
    const client = this.makeClient();
    this.say('Connecting…');
    try {
      await client.ready();
      this.providers = await client.providers();
    } catch (err) {
      this.fail(err, 'Could not reach the asset hub');
      return;
    }
    const wanted = this.getAttribute('provider') ?? client.provider;
    const connected = this.providers.find((p) => p.id === wanted && client.damConnection(p.id));
    if (connected) this.enter(connected);
    else this.showChooser();
  }

  // ── provider chooser and sign-in ────────────────────────────────────────────────────────────
  private showChooser(): void {
    this.generation++;
    this.provider = null;
    this.setChrome(false);
    replace(this.els.who, 'Choose a library');
    const hubOrigin = this.makeClient().baseUrl;
    const list = h('ul', { class: 'providers' }, this.providers.map((p) => {
      const connected = !!this.client?.damConnection(p.id);
      return h('li', {}, h('button', { type: 'button', onclick: () => this.connect(p) },
        h('img', { src: new URL(p.logo, hubOrigin).href, alt: '' }),
        h('span', {}, h('span', { class: 'pname' }, p.name), h('span', { class: 'hint' }, connected ? 'Connected: open' : 'Sign in to connect')),
      ));
    }));
    replace(this.els.content, h('section', { class: 'chooser', 'aria-labelledby': 'choose-heading' },
      h('h2', { id: 'choose-heading' }, this.providers.length ? 'Connect an asset library' : 'No asset library is configured on this hub'),
      list,
    ));
    this.say(this.providers.length ? `${this.providers.length} ${this.providers.length === 1 ? 'library' : 'libraries'} available` : '');
  }

  /** Called from the click itself: the client opens the sign-in popup before its first await, so blockers allow it. */
  private connect(p: ProviderListItem): void {
    const client = this.makeClient();
    this.clearError();
    if (client.damConnection(p.id)) {
      this.enter(p);
      return;
    }
    this.say(`Signing in to ${p.name} in a popup window…`);
    client.loginToDam(p.id).then(() => this.enter(p), (err) => {
      this.say('');
      this.fail(err, `Sign-in to ${p.name} did not complete`);
    });
  }

  private enter(p: ProviderListItem): void {
    this.provider = p;
    this.makeClient().provider = p.id;
    this.selected.clear();
    replace(this.els.who, h('img', { src: new URL(p.logo, this.makeClient().baseUrl).href, alt: '' }), p.name);
    this.setChrome(true);
    replace(this.els.content, h('div', { class: 'body' }, this.els.facets, this.els.main, this.els.detail));
    this.els.imageButton.hidden = !this.canSearchByImage();
    this.updateSelection();
    this.observe();
    this.open({ kind: 'folder', id: 'root', path: [ROOT] });
  }

  private setChrome(on: boolean): void {
    const e = this.els;
    e.search.hidden = !on || !capabilitiesOf(this.provider).search;
    e.switchButton.hidden = !on || this.providers.length < 2;
    e.crumbs.hidden = !on;
    e.footer.hidden = !on;
    e.imageButton.hidden = !on || !this.canSearchByImage();
  }

  private canSearchByImage(): boolean {
    return !!this.provider && capabilitiesOf(this.provider).similarSearch;
  }

  // ── views: folder, keyword search, image search ────────────────────────────────────────────
  private currentFolder(): Folder {
    return this.view.path[this.view.path.length - 1] ?? ROOT;
  }

  private open(view: View, filters: string[] = []): void {
    this.activeFilters = filters;
    this.view = view;
    this.generation++;
    this.assets = [];
    this.total = 0;
    this.focusIndex = 0;
    this.done = false;
    this.closeDetail();
    this.clearError();
    replace(this.els.grid);
    replace(this.els.folders);
    this.els.main.scrollTop = 0;
    this.renderCrumbs();
    if (view.kind !== 'search') this.els.query.value = '';
    const client = this.makeClient();
    const common = { size: this.pageSize, filters: this.activeFilters.length ? this.activeFilters : undefined };
    this.pages = view.kind === 'folder' ? client.folderPages(view.id, common)
      : view.kind === 'search' ? client.searchPages({ ...common, query: view.query })
        : client.imageSearchPages(view.image, common);
    this.els.grid.setAttribute('aria-label', this.viewLabel());
    void this.loadMore(true);
  }

  private viewLabel(): string {
    const v = this.view;
    return v.kind === 'folder' ? `Assets in ${this.currentFolder().name}` : v.kind === 'search' ? `Search results for ${v.query}` : `Assets similar to ${v.name}`;
  }

  private searchByImage(image: Blob, name: string): void {
    if (!this.canSearchByImage()) return;
    this.open({ kind: 'image', image, name, path: [ROOT] });
  }

  private async loadMore(first = false): Promise<void> {
    if (this.loading || this.done || !this.pages) return;
    const gen = this.generation;
    const pages = this.pages;
    this.loading = true;
    replace(this.els.sentinel, 'Loading…');
    try {
      const r = await pages.next();
      if (gen !== this.generation) return;
      if (r.done) {
        this.done = true;
      } else {
        const page = r.value;
        if (first) {
          this.facets = page.filters ?? [];
          this.total = page.totalAssetsCount;
          this.renderFacets();
        }
        this.renderFolders(page.folders);
        this.appendAssets(page.assets);
        this.done = page.more === undefined || page.more === null || page.more === '';
      }
    } catch (err) {
      if (gen !== this.generation) return;
      this.done = true;
      this.fail(err, 'Could not load assets');
    } finally {
      if (gen === this.generation) {
        this.loading = false;
        this.renderSentinel();
      }
    }
    // A first page shorter than the viewport never scrolls the sentinel into view again: keep going.
    if (gen === this.generation && !this.done && this.sentinelVisible()) void this.loadMore();
  }

  private observe(): void {
    this.observer?.disconnect();
    this.observer = new IntersectionObserver((entries) => {
      if (entries.some((x) => x.isIntersecting)) void this.loadMore();
    }, { root: this.els.main, rootMargin: '0px 0px 120px 0px' });
    this.observer.observe(this.els.sentinel);
  }

  private sentinelVisible(): boolean {
    const m = this.els.main.getBoundingClientRect();
    const s = this.els.sentinel.getBoundingClientRect();
    return m.height > 0 && s.top < m.bottom + 120;
  }

  // ── rendering ───────────────────────────────────────────────────────────────────────────────
  private renderCrumbs(): void {
    const path = this.view.path;
    const items = path.map((f, i) => {
      const last = i === path.length - 1 && this.view.kind === 'folder';
      return h('li', {}, h('button', { type: 'button', 'aria-current': last ? 'page' : null, onclick: () => this.open({ kind: 'folder', id: f.id, path: path.slice(0, i + 1) }) }, f.name));
    });
    if (this.view.kind === 'search') items.push(h('li', {}, h('span', { 'aria-current': 'page' }, `Search: “${this.view.query}”`)));
    if (this.view.kind === 'image') items.push(h('li', {}, h('span', { 'aria-current': 'page' }, `Similar to ${this.view.name}`)));
    replace(this.els.crumbs, h('ol', {}, items));
  }

  private renderFolders(folders: Folder[]): void {
    if (this.view.kind !== 'folder') return;
    const path = this.view.path;
    for (const f of folders) {
      this.els.folders.append(h('li', {}, h('button', { type: 'button', onclick: () => this.open({ kind: 'folder', id: f.id, path: [...path, f] }) }, f.name)));
    }
  }

  private renderFacets(): void {
    const fs = this.facets.filter((f) => f.options.length);
    this.els.facets.hidden = !fs.length;
    replace(this.els.facets, fs.map((f) => h('fieldset', {},
      h('legend', {}, f.name),
      f.options.map((o) => {
        const box = h('input', { type: 'checkbox', value: o.id, checked: o.isActive || this.activeFilters.includes(o.id) });
        box.addEventListener('change', () => this.toggleFilter(o.id, box.checked));
        return h('label', {}, box, h('span', {}, o.name), h('span', { class: 'count', 'aria-label': `${o.count} assets` }, o.count));
      }),
    )));
  }

  private toggleFilter(id: string, on: boolean): void {
    const set = new Set(this.activeFilters);
    if (on) set.add(id);
    else set.delete(id);
    this.open(this.view, [...set]);
  }

  private appendAssets(assets: Asset[]): void {
    const start = this.assets.length;
    this.assets.push(...assets);
    this.els.grid.append(...assets.map((a, k) => this.itemFor(a, start + k)));
    if (start === 0 && assets.length) this.setTabStop(0);
    this.say(this.loadedText());
  }

  private loadedText(): string {
    const n = this.assets.length;
    if (!n) return this.view.kind === 'folder' ? '' : 'No assets found';
    return `${n} of ${this.total} ${this.total === 1 ? 'asset' : 'assets'} shown`;
  }

  private itemFor(a: Asset, i: number): HTMLElement {
    const label = a.title && a.title !== a.name ? `${a.name}, ${a.title}` : a.name;
    return h('div', {
      class: 'item', role: 'option', id: `item-${i}`, tabindex: -1, 'aria-selected': String(this.selected.has(a.id)),
      'aria-posinset': i + 1, 'aria-setsize': Math.max(this.total, this.assets.length), 'aria-label': label, 'data-id': a.id, title: a.name,
    },
    h('span', { class: 'check', 'aria-hidden': 'true' }, this.selected.has(a.id) ? '✓' : ''),
    a.thumbnailUrl ? h('img', { class: 'thumb', src: a.thumbnailUrl, alt: '', loading: 'lazy', draggable: 'false' }) : h('span', { class: 'thumb' }),
    h('span', { class: 'name', 'aria-hidden': 'true' }, a.name));
  }

  private renderSentinel(): void {
    if (!this.done) {
      replace(this.els.sentinel, h('button', { type: 'button', onclick: () => void this.loadMore() }, 'Load more'));
    } else if (!this.assets.length && !this.els.folders.childElementCount) {
      replace(this.els.sentinel, h('p', { class: 'empty' }, this.view.kind === 'folder' ? 'This folder is empty' : 'No assets found'));
    } else {
      replace(this.els.sentinel);
    }
  }

  // ── selection and keyboard ─────────────────────────────────────────────────────────────────
  private items(): HTMLElement[] {
    return [...this.els.grid.children] as HTMLElement[];
  }

  private indexOf(target: EventTarget | null): number {
    const el = (target as Element | null)?.closest?.('.item');
    return el ? this.items().indexOf(el as HTMLElement) : -1;
  }

  private setTabStop(i: number, focus = false): void {
    const items = this.items();
    if (!items.length) return;
    const k = Math.max(0, Math.min(i, items.length - 1));
    items[this.focusIndex]?.setAttribute('tabindex', '-1');
    this.focusIndex = k;
    items[k]!.setAttribute('tabindex', '0');
    if (focus) items[k]!.focus();
  }

  /** Click or Space: select (toggle in multi-select mode) and show the asset's details. */
  private activate(i: number, additive: boolean): void {
    const a = this.assets[i];
    if (!a) return;
    this.setTabStop(i, true);
    if (this.selected.has(a.id) && (this.multiple || !additive)) {
      if (this.multiple || this.selected.size === 1) this.selected.delete(a.id);
    } else {
      if (!this.multiple) this.selected.clear();
      this.selected.set(a.id, a);
    }
    this.updateSelection();
    void this.showDetail(a);
  }

  private columns(): number {
    const items = this.items();
    const top = items[0]?.offsetTop;
    let n = 0;
    while (n < items.length && items[n]!.offsetTop === top) n++;
    return Math.max(1, n);
  }

  private onKey(ev: KeyboardEvent): void {
    const i = this.focusIndex;
    const cols = this.columns();
    const move: Record<string, number> = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: cols, ArrowUp: -cols };
    if (ev.key in move) {
      ev.preventDefault();
      const next = i + move[ev.key]!;
      if (next >= this.assets.length && !this.done) void this.loadMore();
      this.setTabStop(next, true);
    } else if (ev.key === 'Home' || ev.key === 'End') {
      ev.preventDefault();
      this.setTabStop(ev.key === 'Home' ? 0 : this.assets.length - 1, true);
    } else if (ev.key === ' ') {
      ev.preventDefault();
      this.activate(i, true);
    } else if (ev.key === 'Enter') {
      ev.preventDefault();
      if (this.selected.size) this.emitSelect();
      else this.activate(i, true);
    } else if (ev.key === 'a' && (ev.ctrlKey || ev.metaKey) && this.multiple) {
      ev.preventDefault();
      for (const a of this.assets) this.selected.set(a.id, a);
      this.updateSelection();
    } else if (ev.key === 'Escape') {
      this.closeDetail();
    }
  }

  private updateSelection(): void {
    for (const el of this.items()) {
      const on = this.selected.has(el.dataset.id!);
      el.setAttribute('aria-selected', String(on));
      el.querySelector('.check')!.textContent = on ? '✓' : '';
    }
    const n = this.selected.size;
    this.els.grid.setAttribute('aria-multiselectable', String(this.multiple));
    this.els.count.textContent = n ? `${n} selected` : 'Nothing selected';
    this.els.clear.disabled = !n;
    this.els.insert.disabled = !n;
    this.els.insert.textContent = n > 1 ? `Select ${n} assets` : 'Select';
  }

  private clearSelection(): void {
    this.selected.clear();
    this.updateSelection();
  }

  private emitSelect(): void {
    if (!this.selected.size || !this.provider) return;
    const detail: PickerSelectDetail = { provider: this.provider.id, assets: this.selectedAssets };
    this.dispatchEvent(new CustomEvent<PickerSelectDetail>('select', { detail, bubbles: true, composed: true }));
  }

  // ── detail panel ───────────────────────────────────────────────────────────────────────────
  private closeDetail(): void {
    this.detailId = null;
    this.els.detail.hidden = true;
  }

  private async showDetail(summary: Asset): Promise<void> {
    const d = this.els.detail;
    this.detailId = summary.id;
    d.hidden = false;
    this.renderDetail(summary, true);
    try {
      const full = await this.makeClient().asset(summary.id);
      if (this.detailId === summary.id) this.renderDetail(full, false);
    } catch (err) {
      if (this.detailId === summary.id) this.fail(err, 'Could not load the asset details');
    }
  }

  private renderDetail(a: Asset, partial: boolean): void {
    const rows: [string, string | undefined][] = [
      ['Title', a.title], ['Caption', a.caption], ['Type', a.mimeType], ['Size', formatBytes(a.fileSize)],
      ['Dimensions', a.xSizePx && a.ySizePx ? `${a.xSizePx} × ${a.ySizePx} px` : undefined],
      ['Modified', formatDate(a.modified)], ['Version', a.displayVersion !== undefined ? String(a.displayVersion) : undefined],
      ['Keywords', a.keywords?.join(', ')], ['Copyright', a.copyright], ['Folder', a.parentPath],
    ];
    const canVersions = capabilitiesOf(this.provider).versions;
    const versions = h('div', { class: 'versions' });
    const versionsButton = h('button', { type: 'button', 'aria-expanded': 'false' }, 'Show versions');
    versionsButton.addEventListener('click', () => void this.loadVersions(a, versions, versionsButton));
    replace(this.els.detail,
      h('button', { type: 'button', class: 'close', 'aria-label': 'Close details', onclick: () => this.closeDetail() }, '×'),
      h('h2', { id: 'detail-heading' }, a.name),
      a.thumbnailUrl ? h('img', { src: a.thumbnailUrl, alt: `Preview of ${a.name}` }) : null,
      h('dl', { 'aria-busy': String(partial) }, rows.filter(([, v]) => v).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      a.conversions?.length ? [h('h3', {}, 'Renditions'), h('ul', { class: 'renditions' }, a.conversions.filter((c) => !c.disabled).map((c) =>
        h('li', {}, h('a', { href: c.url, target: '_blank', rel: 'noopener' }, c.name), c.extension ? ` (${c.extension})` : '')))] : null,
      canVersions ? [h('h3', {}, 'Versions'), versionsButton, versions] : null,
    );
  }

  private async loadVersions(a: Asset, box: HTMLElement, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    replace(box, 'Loading versions…');
    try {
      const r = await this.makeClient().versions(a.id, { withMaster: true });
      if (this.detailId !== a.id) return;
      button.setAttribute('aria-expanded', 'true');
      button.hidden = true;
      replace(box, h('ol', { class: 'version-list', 'aria-label': `Versions of ${a.name}` }, r.versions.map((v) => h('li', {},
        h('a', { href: v.downloadUrl ?? '#', target: '_blank', rel: 'noopener' }, `Version ${v.displayVersion ?? v.version ?? '?'}`),
        ` · ${formatDate(v.modified)} · ${formatBytes(v.fileSize)}`, v.versionComment ? ` · ${v.versionComment}` : ''))));
    } catch (err) {
      button.disabled = false;
      replace(box);
      this.fail(err, 'Could not load the versions');
    }
  }

  // ── image drop ─────────────────────────────────────────────────────────────────────────────
  private wireDrop(): void {
    const main = this.els.main;
    const hasImage = (ev: DragEvent) => [...(ev.dataTransfer?.items ?? [])].some((it) => it.kind === 'file' && (!it.type || it.type.startsWith('image/')));
    main.addEventListener('dragover', (ev) => {
      if (!this.canSearchByImage() || !hasImage(ev)) return;
      ev.preventDefault();
      main.classList.add('dragging');
    });
    main.addEventListener('dragleave', () => main.classList.remove('dragging'));
    main.addEventListener('drop', (ev) => {
      main.classList.remove('dragging');
      const file = [...(ev.dataTransfer?.files ?? [])].find((f) => f.type.startsWith('image/'));
      if (!file || !this.canSearchByImage()) return;
      ev.preventDefault();
      this.searchByImage(file, file.name || 'dropped image');
    });
  }

  // ── status and errors ──────────────────────────────────────────────────────────────────────
  private say(text: string): void {
    this.els.status.textContent = text;
  }

  private clearError(): void {
    this.els.error.textContent = '';
  }

  private fail(err: unknown, context: string): void {
    const msg = err instanceof DamhubError ? err.message : err instanceof Error ? err.message : String(err);
    this.els.error.textContent = `${context}: ${msg}`;
    this.dispatchEvent(new CustomEvent('error', { detail: { error: err, context }, bubbles: true, composed: true }));
  }
}

if (!customElements.get('damhub-picker')) customElements.define('damhub-picker', DamhubPicker);

declare global {
  interface HTMLElementTagNameMap {
    'damhub-picker': DamhubPicker;
  }
}
