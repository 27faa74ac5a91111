'use strict';
// Many `ws` clients at once, for the socket benchmarks (sockets.js,
// broadcast.js), which run them in a child process: each side of a
// connection needs its own file descriptor.
const { WebSocket } = require('ws');

/**
 * Opens `n` clients, 200 at a time (a burst of thousands overruns the
 * server's accept backlog), the i-th to `urlOf(i)`.
 * @param {(i: number) => string} urlOf
 * @param {number} n
 * @param {(ws: WebSocket) => void} [each] called on each as it is made
 * @returns {Promise<WebSocket[]>} once every one is open
 */
async function connectClients(urlOf, n, each = () => {}) {
  const clients = [];
  for (let i = 0; i < n; i += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, n - i) }, (_, j) => {
        const ws = new WebSocket(urlOf(i + j));
        each(ws);
        clients.push(ws);
        return new Promise((resolve, reject) => {
          ws.once('open', resolve);
          ws.once('error', reject);
        });
      }),
    );
  }
  return clients;
}

module.exports = { connectClients };
