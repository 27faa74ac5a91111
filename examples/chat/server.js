#!/usr/bin/env node
'use strict';
// The chat over WebSockets: a plain node:http server, `ws` without a server of
// its own (noServer), and the 'upgrade' event.
//
//   GET  /                            a small page to chat from in a browser
//   GET  /rooms/:room?name=:name      (upgrade) join a room as `name`
//
// The server holds no state and no sockets of its own: each connection is
// handed to the room's worker (`host.get(Room, room).join(ws, name)`), and the
// host keeps it for the room from then on, whether the room is in memory or
// not. A restart drops every connection (a TCP connection dies with its
// process); clients reconnect and get the history again.
const http = require('node:http');
const { parseArgs } = require('node:util');
const { WebSocketServer } = require('ws');
const { open } = require('durable-workers');
const { Room } = require('./room');

const MAX_ROOM = 100;
const MAX_NAME = 32;
/** The largest frame a client may send; the room refuses long messages itself. */
const MAX_PAYLOAD = 16 * 1024;

/**
 * Opens the durable host in `dir` and serves the chat on 127.0.0.1.
 * @param {{ port?: number } & import('durable-workers').OpenOptions} options
 *   `port` 0 (the default) takes a free one; anything else is passed to `open()`
 *   (`maxLive`, `durability`, ...).
 * @returns {Promise<{ url: string, host: import('durable-workers').Host, close(): Promise<void> }>}
 *   `url` is the page (http://127.0.0.1:port); sockets are at
 *   ws://127.0.0.1:port/rooms/<room>?name=<name>.
 */
async function startChat({ dir, port = 0, ...openOptions }) {
  const host = await open({ dir, ...openOptions });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD });
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && new URL(req.url ?? '/', 'http://chat').pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found. Open / in a browser, or connect a WebSocket to /rooms/<room>?name=<name>\n');
    }
  });

  server.on('upgrade', (req, socket, head) => {
    const where = route(req.url ?? '/');
    if (typeof where === 'string') {
      socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n${where}\n`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      // From here the room owns the connection. If it cannot take it (the
      // host is closing, the room's mailbox is full), say why and hang up.
      host
        .get(Room, where.room)
        .join(ws, where.name)
        .catch((err) => {
          const reason = err?.code === 'ERR_DURABLE_CLOSED' || err?.code === 'ERR_DURABLE_BUSY' ? 1013 : 1011;
          ws.close(reason, String(err?.code ?? 'cannot join').slice(0, 120));
        });
    });
  });

  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve(undefined));
    });
  } catch (err) {
    await host.close();
    throw err;
  }
  // Listening on a TCP port, so the address is an AddressInfo, not a pipe's name.
  const url = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`;

  let closing = null;
  /** Stops taking connections, closes every socket with 1001 (going away), then the host. */
  function close() {
    closing ??= (async () => {
      const stopped = new Promise((resolve) => server.close(resolve));
      server.closeIdleConnections();
      // host.close() closes every socket a room accepted, with 1001.
      await host.close();
      // Any connection no room took (one still joining) goes too.
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      await stopped;
    })();
    return closing;
  }
  return { url, host, close };
}

/**
 * `{ room, name }` from `/rooms/<room>?name=<name>`, or what is wrong with the URL.
 * @param {string} reqUrl
 * @returns {{ room: string, name: string } | string}
 */
function route(reqUrl) {
  const url = new URL(reqUrl, 'ws://chat');
  const m = /^\/rooms\/([^/]+)$/.exec(url.pathname);
  if (m === null) return 'connect to /rooms/<room>?name=<name>';
  let room;
  try {
    room = decodeURIComponent(m[1]);
  } catch {
    return 'the room name is not valid percent-encoding';
  }
  const name = (url.searchParams.get('name') ?? '').trim();
  if (room.length > MAX_ROOM) return `a room name is at most ${MAX_ROOM} characters`;
  if (name === '' || name.length > MAX_NAME) return `?name= must be 1 to ${MAX_NAME} characters`;
  return { room, name };
}

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>durable-workers chat</title>
<style>body{font:15px system-ui;max-width:40em;margin:2em auto}#log{height:24em;overflow:auto;border:1px solid #ccc;padding:.5em}#log p{margin:.2em 0}.sys{color:#777}</style>
<form id="join">Room <input id="room" value="lobby" required> Name <input id="name" required> <button>Join</button></form>
<div id="log"></div>
<form id="say" hidden><input id="text" size="50" maxlength="1000" autocomplete="off"> <button>Send</button></form>
<script>
const $ = (id) => document.getElementById(id);
const line = (text, cls) => { const p = document.createElement('p'); p.textContent = text; if (cls) p.className = cls; $('log').append(p); $('log').scrollTop = 1e9; };
const said = (m) => line(new Date(m.at).toLocaleTimeString() + '  ' + m.from + ': ' + m.text);
$('join').onsubmit = (e) => {
  e.preventDefault();
  const ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/rooms/' + encodeURIComponent($('room').value) + '?name=' + encodeURIComponent($('name').value));
  const ping = setInterval(() => ws.readyState === 1 && ws.send('ping'), 30000);
  ws.onmessage = ({ data }) => {
    if (data === 'pong') return;
    const ev = JSON.parse(data);
    if (ev.type === 'history') { line('joined ' + ev.room + ' (' + ev.messages.length + ' earlier messages)', 'sys'); ev.messages.forEach(said); }
    else if (ev.type === 'message') said(ev);
    else if (ev.type === 'joined' || ev.type === 'left') line(ev.name + ' ' + ev.type + '; here: ' + ev.present.join(', '), 'sys');
    else if (ev.type === 'error') line(ev.error, 'sys');
  };
  ws.onclose = (e) => { clearInterval(ping); line('disconnected (' + e.code + ')', 'sys'); $('say').hidden = true; $('join').hidden = false; };
  $('say').onsubmit = (e) => { e.preventDefault(); if ($('text').value) ws.send($('text').value); $('text').value = ''; };
  $('join').hidden = true; $('say').hidden = false; $('text').focus();
};
</script>
`;

const USAGE = `Usage: node examples/chat/server.js [--port N] [--dir DIR]

Serves the chat example on 127.0.0.1: a page at / and WebSockets at
/rooms/<room>?name=<name>, one durable Room worker per room name.

  --port N    port to listen on (default 8080; 0 takes a free one)
  --dir DIR   where the rooms are kept (default ./.data/chat)
  -h, --help  this text`;

/**
 * @param {string[]} argv
 * @returns {Promise<number>} the exit code
 */
async function main(argv) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        port: { type: 'string', default: '8080' },
        dir: { type: 'string', default: '.data/chat' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    console.error(`${/** @type {Error} */ (err).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`--port must be a whole number from 0 to 65535, got ${JSON.stringify(values.port)}\n\n${USAGE}`);
    return 2;
  }
  const chat = await startChat({ dir: values.dir, port });
  console.log(`Chat on ${chat.url} (rooms kept in ${values.dir}); Ctrl-C to stop.`);
  await new Promise((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await chat.close();
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}

module.exports = { startChat };
