/**
 * Holds the replay fixtures (test/fixtures/<vendor>/*.json) to the vendor's own published types:
 * each fixture body is written into a small in-memory .ts file that assigns it, as an object
 * literal, to the SDK's type (`const body: files.ListFolderResult = {...}`), and the TypeScript
 * compiler checks them all in one program. An object literal gets excess-property checks, so a
 * renamed or invented field fails; a missing required field fails; a wrong type fails. Nothing is
 * written to disk: the files are virtual, placed under the repository so `dropbox` and
 * `@googleapis/drive` resolve from its node_modules.
 *
 * Every top-level body of every fixture file must be either bound to a type or listed as
 * unchecked with a reason (a new fixture cannot slip past). Where the SDK type disagrees with the
 * published page, the page wins: the binding names the field and why, and the check then demands
 * that exact disagreement (an exception that no longer applies fails too).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const FIXTURES = path.join(ROOT, 'test/fixtures');

export interface Binding {
  /** `list_folder.json#response`: the file and its top-level key. */
  body: string;
  /** A type expression over the vendor's imports, e.g. `files.ListFolderResult`. */
  type: string;
  /**
   * Where the SDK type disagrees with the published page (the page wins): a field path
   * (`entries[0].name`, `metadata[".tag"]`, or `` for the body itself) → why. The checker requires a diagnostic there.
   */
  pageWins?: Record<string, string>;
}

export interface ContractSpec {
  /** The fixtures' folder under test/fixtures (dropbox, gdrive, microsoft365, ...). */
  vendor: string;
  /** The import lines and local type aliases every generated file starts with. */
  prelude: string;
  bindings: Binding[];
  /** Bodies with no published type to check against: body → why. */
  unchecked: Record<string, string>;
}

export interface Problem {
  body: string;
  /** The field the compiler complained about, as a path into the body (`entries[0].name`). */
  path: string;
  message: string;
}

export interface ContractResult {
  /** Diagnostics not excused by a pageWins entry: each is a fixture drifting from the type. */
  problems: Problem[];
  /** pageWins entries that matched no diagnostic: the exception is stale. */
  stale: { body: string; path: string }[];
  /** Fixture bodies neither bound nor listed as unchecked. */
  unbound: string[];
  /** Bindings naming a body that does not exist. */
  missing: string[];
}

/** All `file.json#key` bodies of a vendor's fixtures (`source` is the citation, not a body). */
export function fixtureBodies(vendor: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const dir = path.join(FIXTURES, vendor);
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
    const doc = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Record<string, unknown>;
    for (const [k, v] of Object.entries(doc)) if (k !== 'source') out.set(`${f}#${k}`, v);
  }
  return out;
}

/** The path of the literal property or element a diagnostic sits on, from the variable down. */
function fieldPath(sf: ts.SourceFile, pos: number): string {
  let node: ts.Node = sf;
  for (;;) {
    const inner: ts.Node | undefined = node.forEachChild((c) => (c.getStart(sf) <= pos && pos < c.getEnd() ? c : undefined));
    if (!inner) break;
    node = inner;
  }
  const parts: string[] = [];
  for (let n: ts.Node = node; n.parent && !ts.isVariableDeclaration(n); n = n.parent) {
    const p = n.parent;
    if (ts.isPropertyAssignment(p)) {
      const name = p.name;
      const text = ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name) ? name.text : name.getText(sf);
      const seg = /^[A-Za-z_$][\w$]*$/.test(text) ? `.${text}` : `[${JSON.stringify(text)}]`;
      // The name and the initializer of one property both lead here: count it once.
      if (parts[0] !== seg) parts.unshift(seg);
    } else if (ts.isArrayLiteralExpression(p)) parts.unshift(`[${p.elements.indexOf(n as ts.Expression)}]`);
  }
  return parts.join('').replace(/^\./, '');
}

/**
 * Checks the bodies against their bindings. `bodies` defaults to the fixtures on disk; a test
 * passes altered ones to prove a drift fails.
 */
export function checkContract(spec: ContractSpec, bodies: Map<string, unknown> = fixtureBodies(spec.vendor)): ContractResult {
  const missing = spec.bindings.filter((b) => !bodies.has(b.body)).map((b) => b.body);
  const covered = new Set([...spec.bindings.map((b) => b.body), ...Object.keys(spec.unchecked)]);
  const unbound = [...bodies.keys()].filter((k) => !covered.has(k));

  const files = new Map<string, { text: string; binding: Binding }>();
  for (const b of spec.bindings) {
    if (!bodies.has(b.body)) continue;
    const name = path.join(ROOT, 'test', '.fixture-contract', spec.vendor, `${b.body.replace(/[^A-Za-z0-9_]/g, '_')}.ts`);
    // The body is JSON, which is a valid object literal: its fields get excess-property checks.
    files.set(name, { text: `${spec.prelude}\nexport const body: ${b.type} = ${JSON.stringify(bodies.get(b.body), null, 2)};\n`, binding: b });
  }
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true, noEmit: true, skipLibCheck: true, types: [],
  };
  const host = ts.createCompilerHost(options, true);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) => {
    const v = files.get(path.resolve(name));
    return v ? ts.createSourceFile(name, v.text, lang, true) : getSourceFile.call(host, name, lang, ...rest);
  };
  host.fileExists = (name) => files.has(path.resolve(name)) || fileExists.call(host, name);
  host.readFile = (name) => files.get(path.resolve(name))?.text ?? readFile.call(host, name);
  const program = ts.createProgram([...files.keys()], options, host);

  const found: Problem[] = [];
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const v = d.file ? files.get(path.resolve(d.file.fileName)) : undefined;
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    if (!v || !d.file) {
      // A diagnostic outside the generated files (a type name that does not resolve, say).
      found.push({ body: d.file?.fileName ?? '(program)', path: '', message });
      continue;
    }
    found.push({ body: v.binding.body, path: fieldPath(d.file, d.start ?? 0), message });
  }
  const excused = (p: Problem) => spec.bindings.some((b) => b.body === p.body && b.pageWins && p.path in b.pageWins);
  const stale = spec.bindings.flatMap((b) => Object.keys(b.pageWins ?? {})
    .filter((at) => bodies.has(b.body) && !found.some((p) => p.body === b.body && p.path === at))
    .map((at) => ({ body: b.body, path: at })));
  return { problems: found.filter((p) => !excused(p)), stale, unbound, missing };
}

/** One line per problem, naming the fixture and the field: what an assertion failure shows. */
export function describeProblems(r: ContractResult): string {
  return [
    ...r.problems.map((p) => `${p.body} at ${p.path || '(body)'}: ${p.message}`),
    ...r.stale.map((s) => `${s.body} at ${s.path}: listed as a disagreement with the SDK type, but the type accepts it now; remove the exception`),
    ...r.unbound.map((b) => `${b}: no type checks this body; bind it or list it as unchecked with a reason`),
    ...r.missing.map((b) => `${b}: bound, but no such fixture body`),
  ].join('\n');
}
