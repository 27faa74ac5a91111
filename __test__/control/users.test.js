'use strict';
// Another user is refused by file modes, since Node cannot read a peer's
// credentials: the control socket of a directory served as root, reached by
// a node process running as uid 65534 (nobody), is refused by the directory's
// 0700, and, with the directory opened up, by the socket's own 0600. A
// positive control shows the refusal is the modes: with the socket opened to
// all, the same client is answered.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { NOBODY, cannotSwitchUser, readableInstall, superviseFrom } = require('../helpers/nobody');
const { tmpDir } = require('../helpers/tmp');
const { startOwner } = require('../helpers/control');

// Decided when the file loads, so the skip is visible in the report.
const why = cannotSwitchUser();
if (why) console.log(`control/users: skipping the uid ${NOBODY} test: ${why}`);

/** Runs the package's control client as uid 65534 against `dir`: what it got, or the error's code, cause and message. */
function asNobody(install, dir) {
  const body = `const c = await require(root + '/js/control/client.js').connect(args[0]).catch((e) => e);
    if (c instanceof Error) return { code: c.code, cause: c.cause && c.cause.code, message: c.message };
    const s = await c.request('stats');
    c.close();
    return { answered: true, live: s.live };`;
  return superviseFrom(install, body, [dir], { asNobody: true });
}

(why ? test.skip : test)(
  `a uid ${NOBODY} client is refused (EACCES, "another user owns it") by the 0700 directory, then by the 0600 socket alone; opened to all, the same client is answered`,
  async (t) => {
    const install = readableInstall();
    const base = tmpDir(t);
    fs.chmodSync(base, 0o755); // only the directory's and the socket's own modes stand in the way
    const dir = path.join(base, 'data');
    await startOwner(t, dir);
    const sock = path.join(dir, '.control.sock');
    t.is(fs.statSync(dir).mode & 0o777, 0o700);
    t.is(fs.lstatSync(sock).mode & 0o777, 0o600);

    const byDir = await asNobody(install, dir);
    t.like(byDir, { code: 'ERR_DURABLE_CONTROL', cause: 'EACCES' });
    t.regex(byDir.message, /permission denied reaching the process serving .*data .*another user owns it/);

    fs.chmodSync(dir, 0o755);
    const bySocket = await asNobody(install, dir);
    t.like(bySocket, { code: 'ERR_DURABLE_CONTROL', cause: 'EACCES' });
    t.regex(bySocket.message, /another user owns it/);

    fs.chmodSync(sock, 0o666);
    const answered = await asNobody(install, dir);
    t.like(answered, { answered: true }, `the probe works: with the socket opened to all, uid ${NOBODY} is answered (${JSON.stringify(answered)})`);
    t.true(answered.live >= 1);
  },
);
