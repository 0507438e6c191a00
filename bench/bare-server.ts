/**
 * Baseline: bare node:http answering fixed bytes. Args: port, body file, content type, and
 * optionally a JSON file of further response headers, so that the baseline sends the same bytes
 * as the hub (its security headers, Vary, request id) and not a shorter answer.
 */
import fs from 'node:fs';
import http from 'node:http';

const [port, bodyFile, type, headersFile] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile!);
const extra = headersFile ? (JSON.parse(fs.readFileSync(headersFile, 'utf8')) as Record<string, string>) : {};
const headers = { ...extra, 'content-type': type!, 'content-length': body.length };
http
  .createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(body);
  })
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('bare listening\n'));
