// The Node half of the probe: the fixture module served by this package's
// Durable Objects host in a child process (so a test can SIGKILL it), over
// node:http with the fixture's own default fetch. Prints the port when ready.
// argv: <dir> <fixture> <name> <objects as JSON>
import http from 'node:http';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { registerCloudflareModules } = require('../../js/do/register.js');
const { openObjects } = require('../../js/do/host.js');

const [dir, fixture, name, objectsJson] = process.argv.slice(2);
registerCloudflareModules();
const mod = await import(fixture);
const bindings = {};
for (const o of JSON.parse(objectsJson)) bindings[o.binding] = { class: mod[o.className], sql: o.sql };
const { env } = await openObjects({ dir, name, bindings });

const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks);
  const request = new Request(`http://127.0.0.1${req.url}`, { method: req.method, body: body.length ? body : undefined });
  try {
    const response = await mod.default.fetch(request, env);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  } catch (err) {
    res.writeHead(500);
    res.end(String(err?.stack ?? err));
  }
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
