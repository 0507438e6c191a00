/**
 * The API reference as the hub serves it (/api/v1/openapi.json) passes both OpenAPI linters with
 * zero errors: Spectral's built-in `spectral:oas` ruleset and Redocly's `recommended` rules. The
 * warnings left are listed in docs/api.md ("The reference"), each with its reason; a new kind of
 * warning fails here until it is fixed or justified there. Both linters run offline: Spectral's
 * ruleset is built in, Redocly's telemetry and update check are turned off by environment.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { REPO_ROOT, startServer, type ServerProcess } from '../helpers/process.js';

const run = promisify(execFile);
const BIN = path.join(REPO_ROOT, 'node_modules', '.bin');

/** Warnings accepted, by rule, with the reason in docs/api.md. */
const ACCEPTED_WARNINGS: Record<string, Set<string>> = {
  spectral: new Set([]),
  redocly: new Set([]),
};

let server: ServerProcess;
let dir: string;
let docFile: string;
let doc: any;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-openapi-'));
  server = await startServer(['--demo', '--data', path.join(dir, 'data')]);
  const res = await fetch(`${server.url}/api/v1/openapi.json`);
  assert.equal(res.status, 200);
  doc = await res.json();
  docFile = path.join(dir, 'openapi.json');
  fs.writeFileSync(docFile, JSON.stringify(doc, null, 2));
});
after(async () => {
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A linter exits non-zero when it finds problems; its JSON report is what counts. */
async function lint(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  try {
    return (await run(path.join(BIN, cmd), args, { cwd: dir, env: { ...process.env, ...env }, maxBuffer: 32 * 1024 * 1024 })).stdout;
  } catch (e) {
    const out = (e as { stdout?: string }).stdout;
    if (out && out.trim().startsWith('{') || out?.trim().startsWith('[')) return out!;
    throw e;
  }
}

describe('the served OpenAPI document', () => {
  test('Spectral spectral:oas: zero errors, only the justified warnings', async () => {
    fs.writeFileSync(path.join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
    const out = await lint('spectral', ['lint', '--ruleset', path.join(dir, '.spectral.yaml'), '--format', 'json', '--quiet', docFile]);
    const problems = JSON.parse(out) as { code: string; severity: number; message: string; path: (string | number)[] }[];
    const show = (ps: typeof problems) => ps.map((p) => `${p.code} at ${p.path.join('.')}: ${p.message}`).join('\n');
    const errors = problems.filter((p) => p.severity === 0);
    assert.deepEqual(errors, [], show(errors));
    const unjustified = problems.filter((p) => p.severity === 1 && !ACCEPTED_WARNINGS.spectral!.has(p.code));
    assert.deepEqual(unjustified, [], show(unjustified));
  });

  test('Redocly recommended: zero errors, only the justified warnings', async () => {
    fs.writeFileSync(path.join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n');
    const out = await lint('redocly', ['lint', '--config', path.join(dir, 'redocly.yaml'), '--format', 'json', docFile], {
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
    });
    const problems = (JSON.parse(out) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] }).problems;
    const show = (ps: typeof problems) => ps.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`).join('\n');
    const errors = problems.filter((p) => p.severity === 'error');
    assert.deepEqual(errors, [], show(errors));
    const unjustified = problems.filter((p) => p.severity === 'warn' && !ACCEPTED_WARNINGS.redocly!.has(p.ruleId));
    assert.deepEqual(unjustified, [], show(unjustified));
  });

  test('real parameter names in paths, and an operationId, tag, summary and description for every operation', () => {
    for (const [p, ops] of Object.entries<any>(doc.paths)) {
      assert.doesNotMatch(p, /\{\*\}/, p);
      for (const [method, op] of Object.entries<any>(ops)) {
        const where = `${method.toUpperCase()} ${p}`;
        for (const k of ['operationId', 'summary', 'description']) assert.equal(typeof op[k], 'string', `${where}: ${k}`);
        assert.ok(op.tags?.length, `${where}: tags`);
        // An example of the success and of the main errors.
        for (const [status, res] of Object.entries<any>(op.responses)) {
          for (const [type, media] of Object.entries<any>(res.content ?? {})) {
            if (type === '*/*') continue; // bytes
            if (/^[45]/.test(status)) assert.ok(Object.keys(media.examples ?? {}).length, `${where} ${status}: error examples`);
            else assert.ok(media.example !== undefined || media.examples, `${where} ${status}: a success example`);
          }
        }
        assert.ok(Object.keys(op.responses).some((st) => /^4/.test(st)), `${where}: its 4xx answers`);
        for (const [status, res] of Object.entries<any>(op.responses)) assert.ok(res.headers?.['x-request-id'], `${where} ${status}: x-request-id`);
      }
    }
    assert.ok(doc.paths['/api/v1/assets/folder/{folderId}']);
    assert.ok(doc.paths['/api/v1/assets/asset/{assetId}']);
    assert.ok(doc.paths['/api/v1/assets/assetversions/{assetId}']);
    // The media routes' statuses, and the headers clients rely on.
    for (const p of ['/api/v1/assets/download/{provider}/{assetId}/{version}', '/api/v1/assets/thumbnail/{provider}/{assetId}/{version}/{rendition}', '/api/v1/connectors/{connectorId}/download/{name}']) {
      assert.deepEqual(Object.keys(doc.paths[p].get.responses).sort(), ['200', '206', '304', '403', '404', '416'], p);
    }
    const search = doc.paths['/api/v1/assets/search'].get.responses;
    for (const h of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) assert.ok(search['200'].headers[h], h);
    assert.ok(search['4XX'].headers['Retry-After']);
    assert.deepEqual(Object.keys(doc.paths['/api/v1/auth/logout'].get.responses['200'].content), ['text/plain']);
    assert.equal(doc.paths['/api/v1/auth/exchangeToken'].post.requestBody.required, false);
  });

  test('providerInfo and the provider capabilities are closed schemas: a generated client knows every field', () => {
    const resolve = (s: any): any => (s?.$ref ? resolve(s.$ref.split('/').slice(1).reduce((o: any, k: string) => o[k], doc)) : s);
    const info = resolve(doc.paths['/api/v1/system/providerInfo'].get.responses['200'].content['application/json'].schema);
    assert.equal(info.additionalProperties, false);
    assert.deepEqual(Object.keys(info.properties).sort(), ['dataLocales', 'filters', 'remoteSystemPrefix', 'renditions']);
    for (const k of ['dataLocales', 'filters']) assert.equal(resolve(info.properties[k].items).additionalProperties, false, k);
    const list = resolve(doc.paths['/api/v1/auth/providers'].get.responses['200'].content['application/json'].schema);
    const caps = resolve(resolve(list.items).properties.capabilities);
    assert.equal(caps.additionalProperties, false);
  });
});

describe('the reference page (/api/v1/docs)', () => {
  test('angle-bracket text in descriptions is set as code, so the page shows it', () => {
    const bare: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (Array.isArray(node)) node.forEach((n, i) => walk(n, `${at}.${i}`));
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if (k === 'example' || k === 'examples') continue;
          if (k === 'description' && typeof v === 'string' && /<[^<>\n]+>/.test(v.replace(/`[^`]*`/g, ''))) bare.push(`${at}: ${v}`);
          else walk(v, `${at}.${k}`);
        }
      }
    };
    walk(doc, '$');
    assert.deepEqual(bare, []);
    assert.match(doc.components.securitySchemes.ProviderAuth.description, /`<DAM connection token>`/);
  });

  test('in Chromium: damhub\'s name, the text with angle brackets shown, no CSP violation', async () => {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'damhub-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const violations: string[] = [];
      const consoleErrors: string[] = [];
      await context.addInitScript(() => {
        const g = globalThis as any;
        g.__csp = [];
        g.document.addEventListener('securitypolicyviolation', (e: any) => g.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
      });
      const page = await context.newPage();
      page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
      await page.goto(`${server.url}/api/v1/docs/`, { waitUntil: 'networkidle' });
      await page.waitForSelector('.opblock-tag', { timeout: 30_000 });
      assert.equal(await page.title(), 'damhub API reference');
      await page.click('#operations-auth-checkToken .opblock-summary');
      await page.waitForSelector('#operations-auth-checkToken .opblock-body', { timeout: 10_000 });
      const text = await page.textContent('#operations-auth-checkToken');
      assert.match(text ?? '', /Authorization: Bearer <access token>|Bearer <access token>/, 'the example details keep their angle brackets');
      // Swagger UI shows the security scheme descriptions in the Authorize dialog.
      await page.click('.btn.authorize');
      await page.waitForSelector('.modal-ux', { timeout: 10_000 });
      assert.match((await page.textContent('.modal-ux')) ?? '', /Bearer <DAM connection token>/);
      violations.push(...await page.evaluate(() => (globalThis as any).__csp as string[]));
      assert.deepEqual(violations, []);
      assert.deepEqual(consoleErrors.filter((e) => /Content Security Policy|Refused to/i.test(e)), []);
    } finally {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    }
  });
});
