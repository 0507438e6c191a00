/** The demo page of `npm start`: a tiny partner app showing the exchange and DAM login from a browser. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { DemoPartner } from '../demo/partner.js';
import { ephemeralDemo } from '../demo/leftovers.js';
import { sendHtml } from '../http/html.js';

const REPO = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const STATIC = path.join(REPO, 'src', 'demo', 'static');
/** The <damhub-picker> bundle, built by `npm run build` (packages/picker/build.mjs). */
const PICKER = path.join(REPO, 'packages', 'picker', 'dist', 'damhub-picker.js');

export async function demoRoutes(app: FastifyInstance): Promise<void> {
  const demo = await DemoPartner.setup(app.hub, ephemeralDemo(app.hub.config));
  const page = (file: string, type: string) => {
    const body = fs.readFileSync(path.join(STATIC, file));
    return async (_req: unknown, reply: import('fastify').FastifyReply) => (type.startsWith('text/html') ? sendHtml(reply, 200, body) : reply.type(type).send(body));
  };
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/demo'));
  app.get('/demo', { schema: { hide: true } }, page('index.html', 'text/html; charset=utf-8'));
  app.get('/demo/app.js', { schema: { hide: true } }, page('app.js', 'text/javascript; charset=utf-8'));
  app.get('/demo/style.css', { schema: { hide: true } }, page('style.css', 'text/css; charset=utf-8'));
  if (fs.existsSync(PICKER)) {
    // The module and the chunk it imports on the first large upload (tus-js-client), side by side.
    for (const file of fs.readdirSync(path.dirname(PICKER)).filter((f) => /^damhub-picker[\w-]*\.js$/.test(f))) {
      const bundle = fs.readFileSync(path.join(path.dirname(PICKER), file));
      app.get(`/demo/${file}`, { schema: { hide: true } }, async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(bundle));
    }
  } else {
    app.log.warn({ file: PICKER }, 'the picker bundle is missing (run npm run build): the demo page will not work');
  }
  // Plays the partner's backend: signs a JWT for the demo user.
  app.post('/demo/partner-token', { schema: { hide: true } }, async () => ({
    jwt: await demo.sign({ sub: 'demo-user', email: 'demo.user@example.com', name: 'Demo User' }),
  }));
}
