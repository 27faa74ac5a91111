'use strict';
// The node:http front bench/do.js puts before local workerd, so that both
// hosts are measured as the issue that set the targets asks, "both behind
// the same node:http front": the Node host's front is `serve` itself (its
// objects in the same process); workerd's is this process, which forwards
// each request to workerd over one keep-alive pool and pipes the answer
// back, and hands a WebSocket upgrade's connection through as raw bytes. It
// does nothing else, so it is the cheapest front a Node app could put there.
//
//   node bench/do/front.js <workerd's port>   → prints "ready on http://127.0.0.1:<port>"

const http = require('node:http');
const net = require('node:net');

const upstream = Number(process.argv[2]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256 });

const server = http.createServer((req, res) => {
  const up = http.request({ agent, host: '127.0.0.1', port: upstream, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode, answer.statusMessage, answer.headers);
    answer.pipe(res);
  });
  up.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`front: ${err.message}\n`);
  });
  req.pipe(up);
});

server.on('upgrade', (req, socket, head) => {
  const up = net.connect(upstream, '127.0.0.1');
  const close = () => {
    up.destroy();
    socket.destroy();
  };
  up.on('error', close);
  socket.on('error', close);
  up.on('close', close);
  socket.on('close', close);
  up.setNoDelay(true);
  socket.setNoDelay(true);
  let lines = `${req.method} ${req.url} HTTP/1.1\r\n`;
  for (let i = 0; i < req.rawHeaders.length; i += 2) lines += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
  up.write(`${lines}\r\n`);
  if (head.length > 0) up.write(head);
  up.pipe(socket);
  socket.pipe(up);
});

server.listen(0, '127.0.0.1', () => console.log(`ready on http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => process.exit(0));
