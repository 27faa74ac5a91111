'use strict';
// The HTTP client bench/do.js drives both hosts with: node:http on one
// keep-alive agent (no connection set-up per request, as a real front's
// upstream pool would do), at most `width` sockets, the answer a number.
const http = require('node:http');

/**
 * @param {string} url the host's base URL
 * @param {number} width sockets at most (one per request in flight)
 * @returns {{ incr(name: string): Promise<number>, read(name: string): Promise<number>, close(): void }}
 */
function client(url, width) {
  const { hostname, port } = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: width, maxFreeSockets: width });
  const call = (method, path) =>
    new Promise((resolve, reject) => {
      const req = http.request({ agent, hostname, port, method, path }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${body.slice(0, 300)}`));
          else resolve(Number(body));
        });
        res.on('error', reject);
      });
      req.on('error', (err) => reject(new Error(`${method} ${path}: ${err.code ?? ''} ${err.message}`)));
      req.end();
    });
  return {
    incr: (name) => call('POST', `/incr/${encodeURIComponent(name)}`),
    read: (name) => call('GET', `/read/${encodeURIComponent(name)}`),
    close: () => agent.destroy(),
  };
}

module.exports = { client };
