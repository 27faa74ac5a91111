'use strict';
// One WebSocket event for a test that watches what it causes: a Room worker
// (fixtures/socket-workers.js) behind a real ws server, a real ws client that
// joins it, waits for the welcome and sends one text frame.
const { WebSocket } = require('ws');
const { Room } = require('../fixtures/socket-workers');
const { serve } = require('../fixtures/socket-server');
const { until } = require('./poll');

/** Joins Room `room` of `host` as `user` and sends `text`; closed at teardown. */
async function sayInRoom(t, host, { room = 'obs', user = 'ann', text = 'hello' } = {}) {
  const server = await serve((ws, [r, u]) => host.get(Room, r).join(ws, u));
  t.teardown(() => server.close());
  const ws = new WebSocket(server.url(`/${room}/${user}`));
  t.teardown(() => ws.terminate());
  const replies = [];
  ws.on('message', (d) => replies.push(String(d)));
  await until(() => replies.length >= 1, 10_000, 'the welcome');
  ws.send(text);
  return { ws, replies };
}

module.exports = { sayInRoom };
