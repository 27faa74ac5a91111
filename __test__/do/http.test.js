'use strict';
// The web Request serve builds from a node request (js/do/http.js toRequest):
// its URL from the Host header and the request target, its headers as sent.
const test = require('ava');
const { toRequest } = require('../../js/do/http');

const ORIGIN = 'http://127.0.0.1:8787';

/** A node request as far as toRequest reads it. */
function nodeRequest(target, host, extra = []) {
  const rawHeaders = [...(host === undefined ? [] : ['Host', host]), ...extra];
  const headers = {};
  for (let i = 0; i < rawHeaders.length; i += 2) headers[rawHeaders[i].toLowerCase()] ??= rawHeaders[i + 1];
  return { url: target, method: 'GET', headers, rawHeaders };
}

const urlOf = (target, host) => toRequest(nodeRequest(target, host), { origin: ORIGIN }).url;

test('a path follows the Host as it is: a target starting with // stays a path on this host', (t) => {
  t.is(urlOf('/a/b?x=1', 'example.com:8080'), 'http://example.com:8080/a/b?x=1');
  t.is(urlOf('//evil.example/x', 'example.com'), 'http://example.com//evil.example/x');
  t.is(urlOf('/\\evil.example', 'example.com'), 'http://example.com//evil.example');
  t.is(urlOf('/a b', 'example.com'), 'http://example.com/a%20b');
  t.is(urlOf('/p', '[::1]:8787'), 'http://[::1]:8787/p');
});

test('without a Host the server origin is used; an unusual Host is parsed down to its origin; an absolute target is resolved', (t) => {
  t.is(urlOf('/p', undefined), `${ORIGIN}/p`);
  t.is(urlOf('http://other.example/y', 'example.com'), 'http://other.example/y');
  t.is(urlOf('/p', 'example.com/x?'), 'http://example.com/p');
  t.is(urlOf('/p', 'user@example.com'), 'http://example.com/p');
  t.is(urlOf('//evil.example/p', 'bücher.de'), 'http://xn--bcher-kva.de//evil.example/p', 'a Host parsed to its origin still keeps // a path');
  t.is(urlOf('*', 'example.com'), 'http://example.com/*');
});

test('headers arrive as sent: repeated ones joined in order, Host kept', (t) => {
  const r = toRequest(nodeRequest('/', 'example.com', ['X-A', '1', 'x-a', '2', 'Accept', 'text/plain']), { origin: ORIGIN });
  t.is(r.headers.get('x-a'), '1, 2');
  t.is(r.headers.get('host'), 'example.com');
  t.is(r.headers.get('accept'), 'text/plain');
  t.is(r.method, 'GET');
  t.is(r.body, null);
});
