/** Reference: a bare Fastify app answering fixed bytes (the framework's own ceiling). Args: port, body file, content type. */
import Fastify from 'fastify';
import fs from 'node:fs';

const [port, bodyFile, type] = process.argv.slice(2);
const body = fs.readFileSync(bodyFile!, 'utf8');
const app = Fastify({ logger: false });
app.get('/*', async (_req, reply) => reply.type(type!).send(body));
await app.listen({ port: Number(port), host: '127.0.0.1' });
process.stdout.write('fastify listening\n');
