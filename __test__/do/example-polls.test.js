'use strict';
// examples/polls, served as its README says: a poll made, votes counted and
// changed, a live view over a hibernating WebSocket, bad input refused, the
// closing alarm, and every acknowledged vote back after a SIGKILL; the same
// steps on local workerd, the reference.
const test = require('ava');
const path = require('node:path');
const WebSocket = require('ws');
const { tmpDir } = require('../helpers/tmp');
const { startServe } = require('../helpers/serve-cli');
const { buildRawWorkerd } = require('../../js/cloudflare/raw');
const { startWorkerd, freePort } = require('../../js/cloudflare/process');

const EXAMPLE = path.join(__dirname, '..', '..', 'examples', 'polls');

async function serveExample(t, dir) {
  const s = await startServe([path.join(EXAMPLE, 'src', 'index.mjs'), '--config', path.join(EXAMPLE, 'wrangler.jsonc'), '--dir', dir, '--port', '0'], { t, cwd: EXAMPLE });
  if (s.url === null) throw new Error(`serve exited: ${s.stderr()}`);
  return s;
}

async function post(url, body) {
  const res = await fetch(url, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/** The next message of `ws` that `ok(message)` accepts. */
function nextMessage(ws, ok = () => true) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no such message within 5 s')), 5000);
    const on = (data) => {
      const m = JSON.parse(String(data));
      if (!ok(m)) return;
      clearTimeout(timer);
      ws.off('message', on);
      resolve(m);
    };
    ws.on('message', on);
  });
}

/** The README's steps against a served copy of the example at `url`. */
async function flow(t, url) {
  const poll = `${url}/polls/lunch`;
  t.deepEqual(await post(poll, { options: ['soup', 'salad'] }), { status: 200, body: { options: ['soup', 'salad'], tally: { soup: 0, salad: 0 }, closed: false } });
  t.is((await post(poll, 'not json')).status, 400);
  t.is((await post(`${url}/polls/other`, { options: ['one'] })).status, 400);

  // The object sends the tally as it accepts the socket, before its 101.
  const ws = new WebSocket(`${poll.replace('http', 'ws')}/live`);
  t.teardown(() => ws.terminate());
  const first = nextMessage(ws);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  t.deepEqual((await first).tally, { soup: 0, salad: 0 });

  const seen = nextMessage(ws, (m) => m.tally.soup === 1);
  t.deepEqual((await post(`${poll}/vote`, { voter: 'ana', option: 'soup' })).body.tally, { soup: 1, salad: 0 });
  await seen;
  t.deepEqual((await post(`${poll}/vote`, { voter: 'ana', option: 'salad' })).body.tally, { soup: 0, salad: 1 }, "a voter's last vote counts");
  t.deepEqual((await post(`${poll}/vote`, { voter: 'bo', option: 'soup' })).body.tally, { soup: 1, salad: 1 });
  t.deepEqual(await post(`${poll}/vote`, { voter: 'cy', option: 'pizza' }), { status: 409, body: { error: 'no option "pizza"' } });

  const closed = nextMessage(ws, (m) => m.closed);
  t.is((await post(`${poll}/close-in`, { seconds: 0.3 })).status, 200);
  t.deepEqual((await closed).tally, { soup: 1, salad: 1 });
  t.deepEqual(await post(`${poll}/vote`, { voter: 'di', option: 'soup' }), { status: 409, body: { error: 'the poll is closed' } });
}

test("examples/polls on durable-workers serve: the README's steps, and every acknowledged vote after a SIGKILL", async (t) => {
  const dir = tmpDir(t);
  const s = await serveExample(t, dir);
  await flow(t, s.url);
  s.child.kill('SIGKILL');
  await s.exited;
  const again = await serveExample(t, dir);
  const res = await fetch(`${again.url}/polls/lunch`);
  t.deepEqual(await res.json(), { options: ['soup', 'salad'], tally: { soup: 1, salad: 1 }, closed: true });
});

test('examples/polls on local workerd: the same steps give the same answers (the reference)', async (t) => {
  const dir = tmpDir(t);
  const port = await freePort();
  const { config } = await buildRawWorkerd({
    entry: path.join(EXAMPLE, 'src', 'index.mjs'),
    objects: [{ binding: 'POLLS', className: 'Poll', sql: true }],
    name: 'polls',
    vars: { MAX_OPTIONS: 8 },
    outDir: path.join(dir, 'build'),
    dataDir: path.join(dir, 'data'),
    port,
  });
  const w = await startWorkerd({ config, port });
  t.teardown(() => w.stop());
  await flow(t, `http://127.0.0.1:${port}`);
});
