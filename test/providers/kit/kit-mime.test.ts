/**
 * The hub's one lookup of media types by file name (src/providers/kit/mime.ts, over mime-db), and
 * the rule for a type an upstream declares. The connectors' own tests show it through the hub;
 * these are the edges of the names themselves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { declaredMimeType, mimeTypeOf, mimeTypeOfExtension, mimeTypeOfName } from '../../../src/providers/kit/mime.js';

test('a name: its last extension, in any case; none, a dotfile or an unknown one is application/octet-stream', () => {
  for (const [name, type] of [
    ['photo.JPG', 'image/jpeg'], ['notes.md', 'text/markdown'], ['a.b/c.tar.gz', 'application/gzip'], ['dir.d/README', 'application/octet-stream'],
    ['.png', 'application/octet-stream'], ['x.', 'application/octet-stream'], ['x.constructor', 'application/octet-stream'], ['C:\\shots\\still.heic', 'image/heic'],
    ['frame.cr2', 'application/octet-stream'], ['drawing.svg', 'image/svg+xml'], ['clip.mp4', 'video/mp4'], ['app.js', 'text/javascript'],
  ] as const) assert.equal(mimeTypeOfName(name), type, name);
});

test('the few types beside mime-db: InDesign, XMP sidecars, YAML as RFC 9512 registers it', () => {
  assert.equal(mimeTypeOfExtension('indd'), 'application/x-indesign');
  assert.equal(mimeTypeOfExtension('.XMP'), 'application/rdf+xml');
  assert.equal(mimeTypeOfExtension('yml'), 'application/yaml');
  assert.equal(mimeTypeOfExtension('heif'), 'image/heif', "sharp's format names are extensions too");
  assert.equal(mimeTypeOfExtension(''), undefined);
  assert.equal(mimeTypeOfExtension('nosuchext'), undefined);
});

test('a declared type wins when it says something: lower-cased, without parameters; generic or malformed ones give way to the name', () => {
  assert.equal(declaredMimeType('Text/Plain; charset=UTF-8'), 'text/plain');
  for (const nothing of [undefined, null, 42, '', 'application/octet-stream', 'binary/octet-stream', 'BINARY/OCTET-STREAM; x=y', 'image', 'image/', 'image/jpeg extra', '<b>/x']) {
    assert.equal(declaredMimeType(nothing), undefined, String(nothing));
  }
  assert.equal(mimeTypeOf('brief.md', 'binary/octet-stream'), 'text/markdown');
  assert.equal(mimeTypeOf('brief.md', 'text/x-markdown'), 'text/x-markdown', "the server's own answer stays");
  assert.equal(mimeTypeOf('scan.dng'), 'image/x-adobe-dng');
});
