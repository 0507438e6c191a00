/**
 * Reference: a bare Fastify app answering fixed bytes (the framework's own ceiling). Args: port,
 * body file, content type, and optionally a JSON file of further response headers (see bare-server.ts).
 */
import Fastify from 'fastify';
import fs from 'node:fs';

const [port, bodyFile, type, headersFile] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile!, 'utf8');
const extra = headersFile ? (JSON.parse(fs.readFileSync(headersFile, 'utf8')) as Record<string, string>) : {};
const app = Fastify({ logger: false });
app.get('/*', async (_req, reply) => reply.headers(extra).type(type!).send(body));
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.stdout.write('fastify listening\n');
