/** Baseline: bare node:http answering fixed bytes with the given content type. Args: port, body file, content type. */
import fs from 'node:fs';
import http from 'node:http';

const [port, bodyFile, type] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile!);
http
  .createServer((_req, res) => {
    res.writeHead(200, { 'content-type': type!, 'content-length': body.length });
    res.end(body);
  })
  .listen(Number(port), '127.0.0.1', () => process.stdout.write('bare listening\n'));
