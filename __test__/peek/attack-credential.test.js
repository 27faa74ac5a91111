'use strict';
// The credential never goes to a port a run could hold (issue 24, item 4).
// Without the sandbox, a run as another user (`uid`, `--run-as`) shares the
// host's loopback: a hostile one could listen on the store's port while the
// store is down, and be sent the next request's bearer token. The supervisor
// checks who listens there first. Here the "run" is a real process of uid
// 65534 listening on loopback, and the supervisor's adapter runs as root
// with `uid: 65534`, as `peek serve --run-as 65534 --sandbox off` does.
const test = require('ava');
const { spawn } = require('node:child_process');
const { nodeAdapter } = require('durable-workers/peek');
const { NOBODY, cannotSwitchUser, readableInstall } = require('../helpers/nobody');

const why = cannotSwitchUser();
if (why) console.log(`peek/attack-credential: skipped: ${why}`);

/** A listener on 127.0.0.1 as `uid` that records every request's authorization header; resolves { port, seen(), stop() }. */
async function listener(t, uid) {
  const node = uid === 0 ? process.execPath : readableInstall().node;
  const code = `
    const http = require('node:http');
    const s = http.createServer((req, res) => { process.stdout.write(JSON.stringify({ auth: req.headers.authorization ?? null }) + '\\n'); res.setHeader('content-type', 'application/json'); res.end('{"data":{"success":true}}'); });
    s.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: s.address().port }) + '\\n'));`;
  const proc = spawn(node, ['-e', code], { uid, gid: uid, cwd: '/', stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => proc.kill('SIGKILL'));
  const lines = [];
  let buf = '';
  proc.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  while (lines.length === 0) await new Promise((r) => setTimeout(r, 20));
  const seen = () => lines.slice(1).map((l) => l.auth);
  // What the listener printed arrives through a pipe: a moment after its answer.
  const settled = async () => {
    for (let i = 0; i < 50 && seen().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    return seen();
  };
  return { port: lines[0].port, seen, settled };
}

const manifest = { name: 'probe', capabilities: { datastore: { methods: ['describe'] } } };

(why ? test.skip : test.serial)('a store whose loopback port is held by the runs’ user is not sent the credential; one held by another user is', async (t) => {
  const hostile = await listener(t, NOBODY);
  const adapter = nodeAdapter({ uid: NOBODY, gid: NOBODY, sandbox: 'off', store: { remoteUrl: `http://127.0.0.1:${hostile.port}` }, log: () => {} });
  t.teardown(() => adapter.close());
  const store = await adapter.openStore(manifest, 'secret-credential');
  const err = await t.throwsAsync(store.describe());
  t.is(err.code, 'ERR_PEEK_STORE');
  t.regex(err.message, new RegExp(`port ${hostile.port} on loopback is held by uid ${NOBODY}, the user runs are started as: the credential is not sent`));
  t.deepEqual(await hostile.settled(), [], 'the runs’ listener received nothing');

  const honest = await listener(t, 0);
  const adapter2 = nodeAdapter({ uid: NOBODY, gid: NOBODY, sandbox: 'off', store: { remoteUrl: `http://127.0.0.1:${honest.port}` }, log: () => {} });
  t.teardown(() => adapter2.close());
  await (await adapter2.openStore(manifest, 'secret-credential')).describe();
  t.deepEqual(await honest.settled(), ['Bearer secret-credential'], 'a listener of another user is sent it (the control)');
});

(why ? test.skip : test.serial)('with the runs as the supervisor’s own user there is no check to make: the credential goes as before', async (t) => {
  const honest = await listener(t, 0);
  const adapter = nodeAdapter({ sandbox: 'off', store: { remoteUrl: `http://127.0.0.1:${honest.port}` }, log: () => {} });
  t.teardown(() => adapter.close());
  await (await adapter.openStore(manifest, 'c')).describe();
  t.deepEqual(await honest.settled(), ['Bearer c']);
});
