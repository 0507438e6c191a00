/**
 * `<damhub-picker>`: the asset picker a partner drops into a page. All hub traffic goes through
 * @damhub/client (token manager, DAM login popup, paging iterators that follow `more`); this file
 * is only the UI: provider chooser, breadcrumb, facets, an infinitely scrolling listbox of
 * thumbnails, search by keyword and by image, a detail panel, and the `select` event.
 */
import {
  capabilitiesOf, DamhubClient, DamhubError, memoryStorage, webStorage,
  type Asset, type ConflictMode, type Filter, type Folder, type FolderResult, type ProviderListItem, type SearchResult, type StateStorage,
} from '@damhub/client';
import { formatBytes, formatDate, h, replace } from './dom.js';
import { pickLocale, translator, type Locale, type Translate } from './i18n.js';
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

/** What `select` events carry in `event.detail`. */
export interface PickerSelectDetail {
  provider: string;
  assets: Asset[];
  /** One entry per asset, in the same order: the file the partner asked for with `rendition`. */
  renditions: PickerRendition[];
}

/** What `damhub-destination` events carry (`mode="destination"`): where the user chose to save, and the name. */
export interface PickerDestinationDetail {
  provider: string;
  folderId: string;
  /** The folder's own name ("Home" for the root, in the picker's language). */
  folderName: string;
  /** The folders from the root down, by name: "/Photos/2026" ("/" for the root). */
  folderPath: string;
  /** The file name the user confirmed. */
  name: string;
}

/** What `damhub-upload` events carry: one per file the picker uploaded (`upload` attribute). */
export interface PickerUploadDetail {
  provider: string;
  folderId: string;
  asset: Asset;
  /** `version` when the user chose "New version" on a name that was taken, `rename` for "Keep both". */
  onConflict: ConflictMode;
}

/** One file of the upload list. */
interface UploadJob {
  file: File;
  provider: string;
  folder: Folder;
  row: HTMLLIElement;
  progress: HTMLProgressElement;
  state: HTMLElement;
  actions: HTMLElement;
  abort: AbortController | null;
}

/** How many files upload at once; the rest wait in the list. */
const UPLOADS_AT_ONCE = 2;

/** `rendition` is `original` or the name of the conversion delivered (the original when the asset lacks it). */
export interface PickerRendition {
  id: string;
  rendition: string;
  url: string | undefined;
}

/** Where focus goes once the next view's first page is in: into the content, or back onto a filter checkbox. */
type FocusAfter = 'content' | { filter: string } | null;

let sheet: CSSStyleSheet | null = null;

export class DamhubPicker extends HTMLElement {
  static observedAttributes = ['locale', 'types', 'upload', 'mode'];

  /** Set a ready client instead of the `hub` / `token-url` attributes (e.g. to share its session). */
  client: DamhubClient | null = null;
  /** Mints a partner JWT; overrides `token-url`. */
  getPartnerJwt: (() => Promise<string>) | null = null;

  private readonly root: ShadowRoot;
  private locale: Locale = 'en';
  private t: Translate = translator('en');
  private providers: ProviderListItem[] = [];
  private provider: ProviderListItem | null = null;
  private view: View = { kind: 'folder', id: 'root', path: [{ id: 'root', name: 'Home' }] };
  private activeFilters: string[] = [];
  private facets: Filter[] = [];
  private assets: Asset[] = [];
  private total = 0;
  private pages: AsyncGenerator<Page> | null = null;
  private loading = false;
  private done = true;
  private generation = 0;
  private focusIndex = 0;
  private focusAfter: FocusAfter = null;
  private readonly selected = new Map<string, Asset>();
  private detailId: string | null = null;
  /** The asset the panel shows now: the list's summary, then the full answer. */
  private detailAsset: Asset | null = null;
  /**
   * The panel renders twice (the summary, then the full asset) and each render replaces its
   * content: the versions box and its button belong to the asset id and are carried into the
   * second render, so a "Show versions" pressed in between loads into the panel on screen.
   */
  private versionsUi: { id: string; box: HTMLElement; button: HTMLButtonElement } | null = null;
  private observer: IntersectionObserver | null = null;
  private started = false;
  private built = false;
  /** The capabilities of the folder on screen (its first page's); null outside a folder view. */
  private folderCaps: FolderResult['capabilities'] | null = null;
  private readonly uploadQueue: { job: UploadJob; onConflict: ConflictMode }[] = [];
  private uploadsRunning = 0;
  /** An upload of the current batch succeeded: the folder's counts changed. */
  private uploadedSinceRefresh = false;

  private readonly els = {
    wrap: h('div', { class: 'wrap' }),
    who: h('span', { class: 'who' }),
    search: h('form', { class: 'search', role: 'search', hidden: true }),
    query: h('input', { type: 'search', name: 'q', autocomplete: 'off' }),
    searchButton: h('button', { type: 'submit' }),
    imageButton: h('button', { type: 'button', class: 'image-search', hidden: true }),
    file: h('input', { type: 'file', accept: 'image/*', hidden: true, tabindex: -1, 'aria-hidden': 'true' }),
    filtersButton: h('button', { type: 'button', class: 'filters-toggle', 'aria-expanded': 'false', 'aria-controls': 'facets', hidden: true }),
    switchButton: h('button', { type: 'button', hidden: true }),
    crumbs: h('nav', { class: 'crumbs', hidden: true }),
    status: h('div', { class: 'status', role: 'status', 'aria-live': 'polite' }),
    error: h('div', { class: 'error', role: 'alert' }),
    content: h('div', { class: 'content' }),
    facets: h('aside', { class: 'facets', id: 'facets' }),
    main: h('section', { class: 'main' }),
    folders: h('ul', { class: 'folders' }),
    grid: h('div', { class: 'grid', role: 'listbox', tabindex: -1 }),
    sentinel: h('div', { class: 'sentinel' }),
    detail: h('aside', { class: 'detail', hidden: true }),
    footer: h('footer', { hidden: true }),
    count: h('span', { class: 'count', 'aria-live': 'polite' }),
    clear: h('button', { type: 'button', disabled: true }),
    insert: h('button', { type: 'button', class: 'primary', disabled: true }),
    uploadButton: h('button', { type: 'button', class: 'upload', hidden: true }),
    uploadFile: h('input', { type: 'file', multiple: true, hidden: true, tabindex: -1, 'aria-hidden': 'true' }),
    uploads: h('ul', { class: 'uploads', hidden: true }),
    destination: h('div', { class: 'destination', hidden: true }),
    destName: h('input', { type: 'text', id: 'dest-name', autocomplete: 'off', spellcheck: 'false' }),
    destLabel: h('label', { for: 'dest-name' }),
    destWhere: h('span', { class: 'where' }),
    destSave: h('button', { type: 'button', class: 'primary' }),
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

  /** `mode="destination"`: the user picks a folder (and a file name) to save into, instead of assets. */
  get destinationMode(): boolean {
    return this.getAttribute('mode') === 'destination';
  }

  /** `upload`: files dropped on the grid or chosen with "Upload files" go into the folder on screen. */
  private get uploadOn(): boolean {
    return this.hasAttribute('upload') && !this.destinationMode;
  }

  private get pageSize(): number | undefined {
    const n = Number(this.getAttribute('page-size'));
    return Number.isInteger(n) && n > 0 ? n : undefined;
  }

  /** `max`: how many assets a multi-select may hold (unlimited without it). */
  private get max(): number {
    const n = Number(this.getAttribute('max'));
    return Number.isInteger(n) && n > 0 ? n : Infinity;
  }

  connectedCallback(): void {
    if (this.started) return;
    this.started = true;
    if (!this.built) this.build();
    this.built = true;
    this.applyLocale();
    void this.start();
  }

  attributeChangedCallback(name: string): void {
    if (!this.built) return;
    if (name === 'upload' || name === 'mode') {
      this.applyMode();
      return;
    }
    if (name === 'types') {
      this.items().forEach((el, i) => (this.allowed(this.assets[i]!) ? el.removeAttribute('aria-disabled') : el.setAttribute('aria-disabled', 'true')));
      return;
    }
    this.applyLocale();
    // Views carry hub-made labels (facets, renditions) in the old uiLocale: fetch them again.
    if (this.provider) this.open({ ...this.view, path: [this.home(), ...this.view.path.slice(1)] }, this.activeFilters);
    else if (this.providers.length) this.showChooser();
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

  private home(): Folder {
    return { id: 'root', name: this.t('home') };
  }

  /** Every fixed text of the chrome, so a `locale` change re-labels it in place. */
  private applyLocale(): void {
    this.locale = pickLocale(this.getAttribute('locale'), navigator.languages ?? [navigator.language]);
    const t = (this.t = translator(this.locale));
    const e = this.els;
    e.wrap.lang = this.locale;
    e.query.placeholder = t('searchAssets');
    e.query.setAttribute('aria-label', t('searchAssets'));
    e.searchButton.textContent = t('search');
    e.imageButton.textContent = t('image');
    // The accessible name starts with the visible text (WCAG 2.5.3, label in name), then the hint.
    e.imageButton.setAttribute('aria-label', `${t('image')}: ${t('imageHint')}`);
    e.filtersButton.textContent = t('filters');
    e.switchButton.textContent = t('switch');
    e.crumbs.setAttribute('aria-label', t('path'));
    e.facets.setAttribute('aria-label', t('filters'));
    e.main.setAttribute('aria-label', t('assets'));
    e.folders.setAttribute('aria-label', t('subfolders'));
    e.detail.setAttribute('aria-label', t('details'));
    e.clear.textContent = t('clear');
    e.uploadButton.textContent = t('upload');
    e.uploads.setAttribute('aria-label', t('uploads'));
    e.destLabel.textContent = t('fileName');
    e.destSave.textContent = t('saveHere');
    e.destination.setAttribute('aria-label', t('destination'));
    this.updateSelection();
    this.applyMode();
  }

  /** Shows what the mode and the folder on screen allow: the upload button, the destination bar or the selection footer. */
  private applyMode(): void {
    const e = this.els;
    const inLibrary = !!this.provider;
    e.uploadButton.hidden = !inLibrary || !this.canUploadHere();
    e.destination.hidden = !inLibrary || !this.destinationMode;
    e.footer.hidden = !inLibrary || this.destinationMode;
    if (this.destinationMode) {
      const folder = this.view.kind === 'folder' ? this.currentFolder() : null;
      const can = !!folder && !!this.folderCaps?.canAddAsset;
      e.destSave.disabled = !can || !e.destName.value.trim();
      replace(e.destWhere, folder ? (can ? this.t('saveTo', { f: folder.name }) : this.folderCaps ? this.t('cannotSave', { f: folder.name }) : '') : this.t('chooseFolder'));
    }
  }

  /** Uploads are offered in a folder view whose folder says `canAddAsset` (the hub's answer for this account). */
  private canUploadHere(): boolean {
    return this.uploadOn && !!this.provider && this.view.kind === 'folder' && !!this.folderCaps?.canAddAsset;
  }

  // ── set-up ──────────────────────────────────────────────────────────────────────────────────
  private build(): void {
    const e = this.els;
    e.search.append(e.query, e.searchButton);
    e.search.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const query = e.query.value.trim();
      // Focus stays where the user submitted from (the search box or its button): nothing under it is replaced.
      if (query) this.open({ kind: 'search', query, path: [this.home()] });
      else this.open({ kind: 'folder', id: this.currentFolder().id, path: this.view.path });
    });
    e.imageButton.addEventListener('click', () => e.file.click());
    e.file.addEventListener('change', () => {
      const f = e.file.files?.[0];
      if (f) this.searchByFile(f, f.name);
      e.file.value = '';
    });
    e.filtersButton.addEventListener('click', () => this.toggleFacets());
    e.switchButton.addEventListener('click', () => this.showChooser(true));
    e.clear.addEventListener('click', () => this.clearSelection());
    e.insert.addEventListener('click', () => void this.emitSelect());
    // The buttons are one group: when the count and the buttons do not fit one line, the group
    // moves below the count as a whole, so neither a button nor the count is cut.
    e.footer.append(e.count, h('div', { class: 'actions' }, e.clear, e.insert));
    e.grid.addEventListener('keydown', (ev) => this.onKey(ev));
    e.grid.addEventListener('focusin', (ev) => {
      const i = this.indexOf(ev.target);
      if (i >= 0) this.focusIndex = i;
    });
    e.grid.addEventListener('click', (ev) => {
      const i = this.indexOf(ev.target);
      if (i >= 0) this.activate(i, ev.shiftKey || ev.ctrlKey || ev.metaKey);
    });
    e.detail.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') this.closeDetail(true);
    });
    e.facets.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && e.facets.classList.contains('open')) this.toggleFacets(false);
    });
    e.main.append(e.folders, e.grid, e.sentinel);
    this.wireDrop();
    e.uploadButton.addEventListener('click', () => e.uploadFile.click());
    e.uploadFile.addEventListener('change', () => {
      const files = [...(e.uploadFile.files ?? [])];
      e.uploadFile.value = '';
      if (files.length) this.uploadFiles(files);
    });
    e.destName.value = this.getAttribute('name') ?? '';
    e.destName.addEventListener('input', () => this.applyMode());
    e.destName.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !e.destSave.disabled) this.emitDestination();
    });
    e.destSave.addEventListener('click', () => this.emitDestination());
    e.destination.setAttribute('role', 'group');
    e.destination.append(e.destWhere, h('span', { class: 'field' }, e.destLabel, e.destName), e.destSave);
    e.wrap.append(
      h('div', { class: 'bar' }, e.who, e.search, e.imageButton, e.file, e.uploadButton, e.uploadFile, e.filtersButton, e.switchButton),
      e.crumbs, e.error, e.status, e.uploads, e.content, e.footer, e.destination,
    );
    this.root.append(e.wrap);
    this.addEventListener('paste', (ev) => {
      const file = ev.clipboardData?.files?.[0];
      if (file && this.canSearchByImage()) {
        ev.preventDefault();
        this.searchByFile(file, file.name || this.t('pasted'));
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
    this.say(this.t('connecting'));
    try {
      await client.ready();
      this.providers = await client.providers();
    } catch (err) {
      this.say('');
      this.fail(err, this.t('reachFail'), () => void this.start());
      return;
    }
    const wanted = this.getAttribute('provider') ?? client.provider;
    const connected = this.providers.find((p) => p.id === wanted && client.damConnection(p.id));
    if (connected) this.enter(connected, false);
    else this.showChooser(false);
  }

  // ── provider chooser and sign-in ────────────────────────────────────────────────────────────
  private showChooser(focus = false): void {
    const t = this.t;
    this.generation++;
    this.provider = null;
    this.setChrome(false);
    replace(this.els.who, t('choose'));
    const hubOrigin = this.makeClient().baseUrl;
    const list = h('ul', { class: 'providers' }, this.providers.map((p) => {
      const connected = !!this.client?.damConnection(p.id);
      const button = h('button', { type: 'button' },
        h('img', { src: new URL(p.logo, hubOrigin).href, alt: '' }),
        h('span', {}, h('span', { class: 'pname' }, p.name), h('span', { class: 'hint' }, connected ? t('open') : t('signIn'))),
      );
      button.addEventListener('click', () => this.connect(p, button));
      return h('li', {}, button);
    }));
    replace(this.els.content, h('section', { class: 'chooser', 'aria-labelledby': 'choose-heading' },
      h('h2', { id: 'choose-heading' }, this.providers.length ? t('connectHeading') : t('noLibs')),
      list,
    ));
    this.say(this.providers.length ? t('libs', { n: this.providers.length }) : '');
    // "Switch library" removed the control that had focus: land on the first library instead of <body>.
    if (focus) list.querySelector('button')?.focus();
  }

  /** Called from the click itself: the client opens the sign-in popup before its first await, so blockers allow it. */
  private connect(p: ProviderListItem, button: HTMLButtonElement): void {
    const client = this.makeClient();
    this.clearError();
    if (client.damConnection(p.id)) {
      this.enter(p, true);
      return;
    }
    this.say(this.t('signingIn', { p: p.name }));
    // The sign-in pages speak the picker's language (the hub keeps it with the login).
    client.loginToDam(p.id, { uiLocale: this.locale }).then(() => this.enter(p, true), (err) => {
      // Closing the popup is the user changing their mind, not a failure: say so quietly, no alert.
      if (err instanceof DamhubError && err.code === 'client-login-cancelled') this.say(this.t('cancelled', { p: p.name }));
      else {
        this.say('');
        this.fail(err, this.t('signInFail', { p: p.name }), () => this.connect(p, button));
      }
      if (button.isConnected) button.focus();
    });
  }

  private enter(p: ProviderListItem, focus: boolean): void {
    this.provider = p;
    this.makeClient().provider = p.id;
    this.selected.clear();
    replace(this.els.who, h('img', { src: new URL(p.logo, this.makeClient().baseUrl).href, alt: '' }), p.name);
    this.setChrome(true);
    replace(this.els.content, h('div', { class: 'body' }, this.els.facets, this.els.main, this.els.detail));
    this.updateSelection();
    this.observe();
    void this.preselect();
    this.open({ kind: 'folder', id: 'root', path: [this.home()] }, [], focus ? 'content' : null);
  }

  /** `selected="id1 id2"`: the assets the partner already holds, shown as selected (and emitted again with the rest). */
  private async preselect(): Promise<void> {
    const ids = (this.getAttribute('selected') ?? '').split(/[\s,]+/).filter(Boolean).slice(0, this.multiple ? this.max : 1);
    if (!ids.length) return;
    const provider = this.provider;
    const found = await Promise.all(ids.map((id) => this.makeClient().asset(id, { uiLocale: this.locale }).catch(() => null)));
    if (provider !== this.provider) return;
    for (const a of found) if (a) this.selected.set(a.id, a);
    this.updateSelection();
  }

  private setChrome(on: boolean): void {
    const e = this.els;
    e.search.hidden = !on || !capabilitiesOf(this.provider).search;
    e.switchButton.hidden = !on || this.providers.length < 2;
    e.crumbs.hidden = !on;
    e.footer.hidden = !on;
    e.imageButton.hidden = !on || !this.canSearchByImage();
    e.filtersButton.hidden = !on;
    this.applyMode();
  }

  private canSearchByImage(): boolean {
    return !!this.provider && capabilitiesOf(this.provider).similarSearch;
  }

  // ── views: folder, keyword search, image search ────────────────────────────────────────────
  private currentFolder(): Folder {
    return this.view.path[this.view.path.length - 1] ?? this.home();
  }

  private open(view: View, filters: string[] = [], focus: FocusAfter = null): void {
    // The grid, subfolders, crumbs and filters are about to be replaced: if focus is in them, it
    // would fall to <body>; bring it back into the new content instead.
    const active = this.root.activeElement;
    const e = this.els;
    if (!focus && active && [e.grid, e.folders, e.crumbs, e.facets, e.sentinel, e.detail, e.error].some((c) => c.contains(active))) focus = 'content';
    this.focusAfter = focus;
    this.activeFilters = filters;
    this.view = view;
    this.generation++;
    this.assets = [];
    this.total = 0;
    this.focusIndex = 0;
    this.done = false;
    this.loading = false;
    this.closeDetail(false);
    this.clearError();
    this.folderCaps = null;
    this.applyMode();
    replace(e.grid);
    replace(e.folders);
    e.main.scrollTop = 0;
    this.renderCrumbs();
    if (view.kind !== 'search') e.query.value = '';
    const client = this.makeClient();
    const common = { size: this.pageSize, uiLocale: this.locale, filters: filters.length ? filters : undefined };
    this.pages = view.kind === 'folder' ? client.folderPages(view.id, common)
      : view.kind === 'search' ? client.searchPages({ ...common, query: view.query })
        : client.imageSearchPages(view.image, common);
    e.grid.setAttribute('aria-label', this.viewLabel());
    void this.loadMore(true);
  }

  private reopen(): void {
    this.open(this.view, this.activeFilters, 'content');
  }

  private viewLabel(): string {
    const v = this.view;
    return v.kind === 'folder' ? this.t('inFolder', { f: this.currentFolder().name }) : v.kind === 'search' ? this.t('results', { q: v.query }) : this.t('similar', { f: v.name });
  }

  /** A file the user dropped, pasted or chose: only an image can be searched by; anything else gets a message. */
  private searchByFile(file: File, name: string): void {
    if (!this.canSearchByImage()) return;
    if (!file.type.startsWith('image/')) {
      this.clearError();
      replace(this.els.error, this.t('notImage', { f: name }));
      return;
    }
    this.open({ kind: 'image', image: file, name, path: [this.home()] });
  }

  private async loadMore(first = false): Promise<void> {
    if (this.loading || this.done || !this.pages) return;
    const gen = this.generation;
    const pages = this.pages;
    this.loading = true;
    // Focus on "Load more" (tabbing to it scrolls it into view, which starts the load): the button
    // is about to be replaced, so focus waits on the last asset and then moves to the first new one.
    const from = this.assets.length;
    const carry = !first && !!from && this.els.sentinel.contains(this.root.activeElement);
    if (carry) this.setTabStop(from - 1, true);
    this.els.grid.setAttribute('aria-busy', 'true');
    if (first) this.say(this.t('loading')); // not the previous view's "Shown: n of m" 
    // The first page loads behind skeleton tiles the size of real ones, so nothing jumps when it lands.
    replace(this.els.sentinel, first ? h('div', { class: 'grid skeleton', 'aria-hidden': 'true' }, Array.from({ length: 8 }, () => h('div', { class: 'item' }, h('span', { class: 'thumb' }), h('span', { class: 'name' })))) : this.t('loading'));
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
          if (this.view.kind === 'folder') {
            this.folderCaps = (page as FolderResult).capabilities ?? null;
            this.applyMode();
          }
        }
        this.renderFolders(page.folders);
        this.appendAssets(page.assets);
        if (carry && page.assets.length && this.root.activeElement === this.items()[from - 1]) this.setTabStop(from, true);
        this.done = page.more === undefined || page.more === null || page.more === '';
      }
    } catch (err) {
      if (gen !== this.generation) return;
      this.done = true;
      // Nothing of this view arrived: no "Loading…" under the error, and no filters of the
      // view before it (they would filter a folder they were not counted for).
      if (first) {
        this.say('');
        this.facets = [];
        this.renderFacets();
      }
      this.fail(err, this.t('loadFail'), () => this.reopen());
    } finally {
      if (gen === this.generation) {
        this.loading = false;
        this.els.grid.setAttribute('aria-busy', 'false');
        this.renderSentinel();
        if (first) this.landFocus();
      }
    }
    // A first page shorter than the viewport never scrolls the sentinel into view again: keep going.
    if (gen === this.generation && !this.done && this.sentinelVisible()) void this.loadMore();
  }

  /** After a sign-in, a folder change or a filter: focus the first thing of the new content a keyboard user would want. */
  private landFocus(): void {
    const f = this.focusAfter;
    this.focusAfter = null;
    if (!f) return;
    const e = this.els;
    const target = typeof f === 'object'
      ? e.facets.querySelector<HTMLInputElement>(`input[value="${CSS_escape(f.filter)}"]`) ?? e.filtersButton
      : e.error.querySelector('button') ?? e.folders.querySelector('button') ?? this.items()[this.focusIndex] ?? e.sentinel.querySelector<HTMLElement>('[tabindex]') ?? e.grid;
    target.focus();
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
      return h('li', {}, h('button', { type: 'button', 'aria-current': last ? 'page' : null, onclick: () => this.open({ kind: 'folder', id: f.id, path: path.slice(0, i + 1) }, [], 'content') }, f.name));
    });
    if (this.view.kind === 'search') items.push(h('li', {}, h('span', { 'aria-current': 'page' }, this.t('crumbSearch', { q: this.view.query }))));
    if (this.view.kind === 'image') items.push(h('li', {}, h('span', { 'aria-current': 'page' }, this.t('crumbSimilar', { f: this.view.name }))));
    replace(this.els.crumbs, h('ol', {}, items));
  }

  private renderFolders(folders: Folder[]): void {
    if (this.view.kind !== 'folder') return;
    const path = this.view.path;
    for (const f of folders) {
      this.els.folders.append(h('li', {}, h('button', { type: 'button', onclick: () => this.open({ kind: 'folder', id: f.id, path: [...path, f] }, [], 'content') }, f.name)));
    }
  }

  private renderFacets(): void {
    const fs = this.facets.filter((f) => f.options.length);
    this.els.facets.hidden = !fs.length;
    this.els.filtersButton.hidden = !fs.length;
    replace(this.els.facets, fs.map((f) => h('fieldset', {},
      h('legend', {}, f.name),
      f.options.map((o) => {
        const box = h('input', { type: 'checkbox', value: o.id, checked: o.isActive || this.activeFilters.includes(o.id) });
        box.addEventListener('change', () => this.toggleFilter(o.id, box.checked));
        return h('label', {}, box, h('span', {}, o.name), h('span', { class: 'count' }, o.count));
      }),
    )));
  }

  /** On a narrow picker the filters sit behind a button and open as a sheet over the grid. */
  private toggleFacets(open = !this.els.facets.classList.contains('open')): void {
    const e = this.els;
    e.facets.classList.toggle('open', open);
    e.filtersButton.setAttribute('aria-expanded', String(open));
    if (open) e.facets.querySelector('input')?.focus();
    else e.filtersButton.focus();
  }

  private toggleFilter(id: string, on: boolean): void {
    const set = new Set(this.activeFilters);
    if (on) set.add(id);
    else set.delete(id);
    // The checkboxes are rebuilt from the new answer: put focus back on the one just toggled.
    this.open(this.view, [...set], { filter: id });
  }

  private appendAssets(assets: Asset[]): void {
    const start = this.assets.length;
    this.assets.push(...assets);
    this.els.grid.append(...assets.map((a, k) => this.itemFor(a, start + k)));
    if (start === 0 && assets.length) this.setTabStop(0);
    this.say(this.loadedText());
  }

  private loadedText(): string {
    // An empty answer is said once, by the empty message itself (a status region in the grid's place).
    const n = this.assets.length;
    return n ? this.t('shown', { n, t: this.total }) : '';
  }

  /** `types="image/*,application/pdf"`: assets of other types are shown but cannot be selected. */
  private allowed(a: Asset): boolean {
    const types = this.getAttribute('types')?.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean);
    if (!types?.length) return true;
    const mime = (a.mimeType ?? '').toLowerCase();
    return types.some((t) => (t.endsWith('/*') ? mime.startsWith(t.slice(0, -1)) : mime === t));
  }

  private itemFor(a: Asset, i: number): HTMLElement {
    const label = a.title && a.title !== a.name ? `${a.name}, ${a.title}` : a.name;
    return h('div', {
      class: 'item', role: 'option', id: `item-${i}`, tabindex: -1, 'aria-selected': String(this.selected.has(a.id)),
      'aria-disabled': this.allowed(a) ? null : 'true',
      'aria-posinset': i + 1, 'aria-setsize': Math.max(this.total, this.assets.length), 'aria-label': label, 'data-id': a.id, title: a.name,
    },
    a.thumbnailUrl ? h('img', { class: 'thumb', src: a.thumbnailUrl, alt: '', loading: 'lazy', draggable: 'false' }) : h('span', { class: 'thumb' }),
    h('span', { class: 'name', 'aria-hidden': 'true' }, a.name),
    h('span', { class: 'check', 'aria-hidden': 'true' }));
  }

  private renderSentinel(): void {
    if (!this.done) {
      replace(this.els.sentinel, h('button', { type: 'button', onclick: () => void this.loadMore() }, this.t('more')));
    } else if (!this.assets.length && !this.els.folders.childElementCount && !this.els.error.childElementCount) {
      replace(this.els.sentinel, h('p', { class: 'empty', role: 'status', tabindex: -1 }, this.view.kind === 'folder' ? this.t('empty') : this.t('none')));
    } else if (!this.assets.length && !this.els.error.childElementCount) {
      // Folders only (Home of most libraries): say where the assets are rather than show a blank grid.
      replace(this.els.sentinel, h('p', { class: 'empty', role: 'status' }, this.t('onlyFolders')));
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
    if (this.destinationMode) {
      // Saving somewhere: an asset is not chosen, but its name can be taken as the file name (to save a new version of it, the partner uses update()).
      void this.showDetail(a);
      return;
    }
    if (this.selected.has(a.id) && (this.multiple || !additive)) {
      if (this.multiple || this.selected.size === 1) this.selected.delete(a.id);
    } else if (!this.allowed(a)) {
      this.say(this.t('type'));
    } else if (this.multiple && this.selected.size >= this.max) {
      this.say(this.t('max', { n: this.max }));
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
      if (this.selected.size) void this.emitSelect();
      else this.activate(i, true);
    } else if (ev.key === 'a' && (ev.ctrlKey || ev.metaKey) && this.multiple) {
      ev.preventDefault();
      for (const a of this.assets) if (this.selected.size < this.max && this.allowed(a)) this.selected.set(a.id, a);
      this.updateSelection();
    } else if (ev.key === 'Escape') {
      this.closeDetail(true);
    }
  }

  private updateSelection(): void {
    const t = this.t;
    for (const el of this.items()) el.setAttribute('aria-selected', String(this.selected.has(el.dataset.id!)));
    const n = this.selected.size;
    this.els.grid.setAttribute('aria-multiselectable', String(this.multiple));
    this.els.count.textContent = n ? t('count', { n }) : t('nothing');
    this.els.clear.disabled = !n;
    this.els.insert.disabled = !n;
    this.els.insert.textContent = n > 1 ? t('selectN', { n }) : t('select');
  }

  private clearSelection(): void {
    this.selected.clear();
    this.updateSelection();
  }

  /**
   * `rendition` names the file the partner wants: `original` (the default) or a conversion's
   * name. List answers may omit conversions, so assets without them are fetched first.
   */
  private async emitSelect(): Promise<void> {
    if (!this.selected.size || !this.provider) return;
    const provider = this.provider.id;
    const wanted = (this.getAttribute('rendition') ?? 'original').toLowerCase();
    let assets = this.selectedAssets;
    if (wanted !== 'original') {
      try {
        assets = await Promise.all(assets.map((a) => (a.conversions ? a : this.makeClient().asset(a.id, { uiLocale: this.locale }))));
      } catch (err) {
        this.fail(err, this.t('detailFail'), () => void this.emitSelect());
        return;
      }
    }
    const renditions = assets.map((a): PickerRendition => {
      const c = wanted === 'original' ? undefined : a.conversions?.find((x) => !x.disabled && x.name.toLowerCase() === wanted);
      return c ? { id: a.id, rendition: c.name, url: c.url } : { id: a.id, rendition: 'original', url: a.downloadUrl };
    });
    const detail: PickerSelectDetail = { provider, assets, renditions };
    this.dispatchEvent(new CustomEvent<PickerSelectDetail>('select', { detail, bubbles: true, composed: true }));
  }

  // ── detail panel ───────────────────────────────────────────────────────────────────────────
  /** `refocus`: the user closed it, so focus returns to the asset it described (never <body>). */
  private closeDetail(refocus: boolean): void {
    const wasOpen = !this.els.detail.hidden;
    this.detailId = null;
    this.detailAsset = null;
    this.versionsUi = null;
    this.els.detail.hidden = true;
    if (refocus && wasOpen) (this.items()[this.focusIndex] ?? this.els.grid).focus();
  }

  /** On a narrow picker the details cover the grid as a sheet: focus moves into it. */
  private isSheet(): boolean {
    return getComputedStyle(this.els.detail).position === 'absolute';
  }

  private async showDetail(summary: Asset): Promise<void> {
    const d = this.els.detail;
    this.detailId = summary.id;
    this.versionsUi = null; // a new opening of the panel starts with the button, even for the same asset
    d.hidden = false;
    this.renderDetail(summary, true);
    if (this.isSheet()) d.querySelector<HTMLElement>('.close')?.focus();
    try {
      const full = await this.makeClient().asset(summary.id, { uiLocale: this.locale });
      if (this.detailId !== summary.id) return;
      const active = this.root.activeElement as HTMLElement | null;
      const refocus = !!active && d.contains(active);
      this.renderDetail(full, false);
      // Moving the kept versions button or list out and back in blurred it: focus returns to it.
      if (refocus) (active.isConnected && d.contains(active) ? active : d.querySelector<HTMLElement>('.close'))?.focus();
    } catch (err) {
      if (this.detailId === summary.id) this.fail(err, this.t('detailFail'), () => void this.showDetail(summary));
    }
  }

  private renderDetail(a: Asset, partial: boolean): void {
    const t = this.t;
    const rows: [string, string | undefined][] = [
      [t('title'), a.title], [t('caption'), a.caption], [t('mime'), a.mimeType], [t('size'), formatBytes(a.fileSize)],
      [t('dims'), a.xSizePx && a.ySizePx ? `${a.xSizePx} × ${a.ySizePx} px` : undefined],
      [t('modified'), formatDate(a.modified, this.locale)], [t('version'), a.displayVersion !== undefined ? String(a.displayVersion) : undefined],
      [t('keywords'), a.keywords?.join(', ')], [t('copyright'), a.copyright], [t('folder'), a.parentPath],
    ];
    const canVersions = capabilitiesOf(this.provider).versions;
    this.detailAsset = a;
    let ui = this.versionsUi;
    if (!ui || ui.id !== a.id) {
      const box = h('div', { class: 'versions' });
      const button = h('button', { type: 'button', 'aria-expanded': 'false' }, t('showVersions'));
      button.addEventListener('click', () => void this.loadVersions(a.id, box, button));
      ui = this.versionsUi = { id: a.id, box, button };
    }
    const { box: versions, button: versionsButton } = ui;
    replace(this.els.detail,
      h('button', { type: 'button', class: 'close', 'aria-label': t('close'), onclick: () => this.closeDetail(true) }, '×'),
      h('h2', { id: 'detail-heading' }, a.name),
      a.thumbnailUrl ? h('img', { src: a.thumbnailUrl, alt: t('preview', { f: a.name }) }) : null,
      h('dl', { 'aria-busy': String(partial) }, rows.filter(([, v]) => v).flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      a.conversions?.length ? [h('h3', {}, t('renditions')), h('ul', { class: 'renditions' }, a.conversions.filter((c) => !c.disabled).map((c) =>
        h('li', {}, h('a', { href: c.url, target: '_blank', rel: 'noopener' }, c.name), c.extension ? ` (${c.extension})` : '')))] : null,
      canVersions ? [h('h3', {}, t('versions')), versionsButton, versions] : null,
    );
  }

  private async loadVersions(id: string, box: HTMLElement, button: HTMLButtonElement): Promise<void> {
    const t = this.t;
    button.disabled = true;
    replace(box, t('loadingVersions'));
    try {
      const r = await this.makeClient().versions(id, { withMaster: true, uiLocale: this.locale });
      if (this.detailId !== id || this.versionsUi?.box !== box) return;
      // The full asset may have replaced the summary meanwhile: its displayVersion marks the current one.
      const a: Asset = this.detailAsset?.id === id ? this.detailAsset : { id, name: r.name };
      button.setAttribute('aria-expanded', 'true');
      button.hidden = true;
      // "Version 2 (current): modified 25 Nov 2026, 14:30, 1.2 KB": a sentence, not a row of dots.
      const list = h('ol', { class: 'version-list', 'aria-label': t('versionsOf', { f: a.name }), tabindex: -1 }, r.versions.map((v) => {
        const n = v.displayVersion ?? v.version ?? '?';
        const current = a.displayVersion !== undefined && String(n) === String(a.displayVersion);
        return h('li', {},
          h('a', { href: v.downloadUrl ?? '#', target: '_blank', rel: 'noopener' }, t('versionN', { n })),
          current ? ` (${t('current')})` : '', ': ',
          t('versionLine', { d: formatDate(v.modified, this.locale), s: formatBytes(v.fileSize) }),
          v.versionComment ? h('q', {}, v.versionComment) : '');
      }));
      replace(box, list);
      // The button that had focus is gone: the list takes it.
      list.focus();
    } catch (err) {
      button.disabled = false;
      replace(box);
      this.fail(err, t('versionsFail'), () => void this.loadVersions(id, box, button));
    }
  }

  // ── image drop ─────────────────────────────────────────────────────────────────────────────
  private wireDrop(): void {
    const main = this.els.main;
    // Any file is accepted for the drop, so a file that is not an image gets a message instead of the browser opening it.
    const hasFile = (ev: DragEvent) => [...(ev.dataTransfer?.items ?? [])].some((it) => it.kind === 'file');
    main.addEventListener('dragover', (ev) => {
      if (!(this.canUploadHere() || this.canSearchByImage()) || !hasFile(ev)) return;
      ev.preventDefault();
      main.classList.add('dragging');
    });
    main.addEventListener('dragleave', () => main.classList.remove('dragging'));
    main.addEventListener('drop', (ev) => {
      main.classList.remove('dragging');
      const files = [...(ev.dataTransfer?.files ?? [])];
      // With `upload` on, a drop on a folder that takes files uploads them; search by image stays on its button and paste.
      if (files.length && this.canUploadHere()) {
        ev.preventDefault();
        this.uploadFiles(files);
        return;
      }
      if (!files.length || !this.canSearchByImage()) return;
      ev.preventDefault();
      const file = files.find((f) => f.type.startsWith('image/')) ?? files[0]!;
      this.searchByFile(file, file.name || this.t('dropped'));
    });
  }

  // ── upload (the `upload` attribute) ─────────────────────────────────────────────────────────
  /** Files into the folder on screen: one row each in the upload list, at most UPLOADS_AT_ONCE running. */
  private uploadFiles(files: File[]): void {
    if (!this.canUploadHere() || !this.provider) return;
    const folder = this.currentFolder();
    for (const file of files) {
      const progress = h('progress', { max: Math.max(1, file.size), value: 0, 'aria-label': this.t('uploading', { f: file.name }) });
      const state = h('span', { class: 'ustate' }, this.t('waiting'));
      const actions = h('span', { class: 'uactions' });
      const row = h('li', { class: 'upload' }, h('span', { class: 'uname', title: file.name }, file.name), progress, state, actions);
      const job: UploadJob = { file, provider: this.provider.id, folder, row, progress, state, actions, abort: null };
      this.els.uploads.append(row);
      this.uploadQueue.push({ job, onConflict: 'fail' });
      this.setUploadActions(job, 'running');
    }
    this.els.uploads.hidden = false;
    this.pumpUploads();
  }

  private pumpUploads(): void {
    while (this.uploadsRunning < UPLOADS_AT_ONCE && this.uploadQueue.length) {
      const next = this.uploadQueue.shift()!;
      this.uploadsRunning++;
      void this.runUpload(next.job, next.onConflict).finally(() => {
        this.uploadsRunning--;
        this.pumpUploads();
        if (!this.uploadsRunning && !this.uploadQueue.length && this.uploadedSinceRefresh) {
          this.uploadedSinceRefresh = false;
          void this.refreshFacets(next.job.folder.id);
        }
      });
    }
  }

  /** The buttons of a row: Cancel while it waits or runs; the conflict choice; Dismiss once it ended. */
  private setUploadActions(job: UploadJob, what: 'running' | 'conflict' | 'ended'): void {
    const t = this.t;
    const f = job.file.name;
    if (what === 'running') {
      replace(job.actions, h('button', { type: 'button', 'aria-label': t('cancelUpload', { f }), onclick: () => this.cancelUpload(job) }, t('cancel')));
    } else if (what === 'conflict') {
      const retry = (mode: ConflictMode) => () => {
        job.progress.value = 0;
        job.progress.hidden = false;
        replace(job.state, t('waiting'));
        this.setUploadActions(job, 'running');
        job.actions.querySelector('button')?.focus();
        this.uploadQueue.push({ job, onConflict: mode });
        this.pumpUploads();
      };
      replace(job.actions,
        h('button', { type: 'button', class: 'primary', onclick: retry('version') }, t('newVersion')),
        h('button', { type: 'button', onclick: retry('rename') }, t('keepBoth')),
        h('button', { type: 'button', 'aria-label': t('cancelUpload', { f }), onclick: () => this.cancelUpload(job) }, t('cancel')));
    } else {
      replace(job.actions, h('button', { type: 'button', class: 'dismiss', 'aria-label': t('dismiss', { f }), onclick: () => this.dismissUpload(job) }, '×'));
    }
  }

  private async runUpload(job: UploadJob, onConflict: ConflictMode): Promise<void> {
    if (!job.row.isConnected || job.abort?.signal.aborted) return; // cancelled while waiting
    const t = this.t;
    const f = job.file.name;
    job.abort = new AbortController();
    replace(job.state, t('uploadingShort'));
    try {
      const asset = await this.makeClient().upload(job.folder.id, job.file, {
        name: f, onConflict, signal: job.abort.signal, provider: job.provider,
        onProgress: (sent, total) => {
          job.progress.max = Math.max(1, total);
          job.progress.value = sent;
          replace(job.state, `${Math.floor((sent / Math.max(1, total)) * 100)} %`);
        },
      });
      job.progress.value = job.progress.max;
      replace(job.state, onConflict === 'version' ? t('uploadedVersion') : t('uploaded'));
      this.setUploadActions(job, 'ended');
      this.uploadedSinceRefresh = true;
      this.say(t('uploadedInto', { f: asset.name, d: job.folder.name }));
      this.showUploaded(job, asset);
      const detail: PickerUploadDetail = { provider: job.provider, folderId: job.folder.id, asset, onConflict };
      this.dispatchEvent(new CustomEvent<PickerUploadDetail>('damhub-upload', { detail, bubbles: true, composed: true }));
    } catch (err) {
      if (job.abort.signal.aborted) return; // cancelUpload said so already
      job.progress.hidden = true;
      if (err instanceof DamhubError && err.code === 'asset-exists') {
        replace(job.state, t('exists', { f }));
        this.setUploadActions(job, 'conflict');
        this.say(t('exists', { f }));
        return;
      }
      const offline = err instanceof DamhubError && err.kind === 'network';
      replace(job.state, h('span', { class: 'ufail' }, offline ? t('offline') : `${t('uploadFail')}: ${err instanceof Error ? err.message : String(err)}`));
      this.setUploadActions(job, 'ended');
      this.dispatchEvent(new CustomEvent('error', { detail: { error: err, context: t('uploadFail') }, bubbles: true, composed: true }));
    } finally {
      job.abort = null;
    }
  }

  /** Cancel: a running upload is aborted (tus removes what the hub holds of it); the row goes. */
  private cancelUpload(job: UploadJob): void {
    job.abort?.abort();
    const i = this.uploadQueue.findIndex((q) => q.job === job);
    if (i >= 0) this.uploadQueue.splice(i, 1);
    this.say(this.t('uploadCancelled', { f: job.file.name }));
    this.dismissUpload(job);
  }

  private dismissUpload(job: UploadJob): void {
    const hadFocus = job.row.contains(this.root.activeElement);
    const neighbour = (job.row.nextElementSibling ?? job.row.previousElementSibling)?.querySelector('button') ?? null;
    job.row.remove();
    this.els.uploads.hidden = !this.els.uploads.childElementCount;
    // The row with focus is gone: the next row's button takes it, else "Upload files", else the grid.
    if (hadFocus) (neighbour ?? (this.els.uploadButton.hidden ? this.els.grid : this.els.uploadButton)).focus();
  }

  /** The uploaded asset in the grid, if its folder is still on screen: a new tile, or the tile of the asset it versioned. */
  private showUploaded(job: UploadJob, asset: Asset): void {
    if (this.view.kind !== 'folder' || this.view.id !== job.folder.id || this.provider?.id !== job.provider) return;
    const i = this.assets.findIndex((a) => a.id === asset.id);
    if (i >= 0) {
      this.assets[i] = asset;
      const old = this.items()[i];
      const fresh = this.itemFor(asset, i);
      if (old) {
        fresh.setAttribute('tabindex', old.getAttribute('tabindex') ?? '-1');
        old.replaceWith(fresh);
      }
      return;
    }
    this.total++;
    this.appendAssets([asset]);
    this.renderSentinel();
  }

  /**
   * Once a batch of uploads ended: the folder's filter counts and total again (one small page),
   * since the new assets changed them. The grid keeps what it shows.
   */
  private async refreshFacets(folderId: string): Promise<void> {
    if (this.view.kind !== 'folder' || this.view.id !== folderId) return;
    const gen = this.generation;
    try {
      const page = await this.makeClient().folder(folderId, { size: 1, uiLocale: this.locale, filters: this.activeFilters.length ? this.activeFilters : undefined });
      if (gen !== this.generation) return;
      // A rebuilt checkbox would lose focus: leave the filters as they are while one has it.
      if (this.els.facets.contains(this.root.activeElement)) return;
      this.facets = page.filters ?? [];
      this.total = Math.max(page.totalAssetsCount, this.assets.length);
      this.renderFacets();
      // The status line keeps the last upload's message; the grid's set size follows the new total.
      for (const el of this.items()) el.setAttribute('aria-setsize', String(Math.max(this.total, this.assets.length)));
    } catch {
      /* the counts stay as they were; the uploads themselves succeeded */
    }
  }

  // ── destination (mode="destination") ───────────────────────────────────────────────────────
  private emitDestination(): void {
    if (!this.provider || this.view.kind !== 'folder' || !this.folderCaps?.canAddAsset) return;
    const name = this.els.destName.value.trim();
    if (!name) return;
    const folder = this.currentFolder();
    const detail: PickerDestinationDetail = {
      provider: this.provider.id, folderId: folder.id, folderName: folder.name,
      folderPath: `/${this.view.path.slice(1).map((f) => f.name).join('/')}`, name,
    };
    this.dispatchEvent(new CustomEvent<PickerDestinationDetail>('damhub-destination', { detail, bubbles: true, composed: true }));
  }

  // ── status and errors ──────────────────────────────────────────────────────────────────────
  private say(text: string): void {
    this.els.status.textContent = text;
  }

  private clearError(): void {
    replace(this.els.error);
  }

  /**
   * The hub's own message (the error envelope's `message`), with a Retry when the step can be
   * repeated. No answer at all (offline, DNS, a refused connection) says so in the picker's
   * language instead of the browser's "Failed to fetch".
   */
  private fail(err: unknown, context: string, retry?: () => void): void {
    const offline = err instanceof DamhubError && err.kind === 'network';
    const text = offline ? this.t('offline') : `${context}: ${err instanceof Error ? err.message : String(err)}`;
    replace(this.els.error, h('span', {}, text), retry ? h('button', { type: 'button', onclick: () => { this.clearError(); retry(); } }, this.t('retry')) : null);
    this.dispatchEvent(new CustomEvent('error', { detail: { error: err, context }, bubbles: true, composed: true }));
  }
}

/** CSS.escape, named apart from the stylesheet import. */
function CSS_escape(s: string): string {
  return globalThis.CSS?.escape ? globalThis.CSS.escape(s) : s.replace(/["\\]/g, '\\$&');
}

if (!customElements.get('damhub-picker')) customElements.define('damhub-picker', DamhubPicker);

declare global {
  interface HTMLElementTagNameMap {
    'damhub-picker': DamhubPicker;
  }
}
