'use strict';
// durable-workers/otel (js/observe/otel.js) with the OpenTelemetry SDK's own
// pieces: a BasicTracerProvider exporting to an InMemorySpanExporter, the
// AsyncLocalStorage context manager, and a real HTTP server whose handler
// makes the calls inside its request span. The exported spans must nest as
// the calls did: request → call → nested call → commit, in one trace, in
// process and on a shard.
const test = require('ava');
const http = require('node:http');
const path = require('node:path');
const dc = require('node:diagnostics_channel');
const { spawnSync } = require('node:child_process');
const { context, trace, SpanKind, SpanStatusCode } = require('@opentelemetry/api');
const { BasicTracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require('@opentelemetry/sdk-trace-base');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { instrument } = require('durable-workers/otel');
const { open } = require('../..');
const { Inner, Outer, Ringer } = require('../fixtures/observe-workers');
const { sayInRoom } = require('../helpers/room');
const { tmpDir } = require('../helpers/tmp');
const { until } = require('../helpers/poll');

const MODULE = path.join(__dirname, '..', 'fixtures', 'observe-workers.js');

// The context manager and the channels' subscribers are per process: serial.
const serial = test.serial;

/**
 * A provider exporting to memory, the AsyncLocalStorage context manager
 * registered globally, and the adapter instrumenting with the provider; all
 * undone when the test ends (after the hosts opened later close).
 */
function tracing(t) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  t.true(context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable()), 'the context manager is registered');
  const otel = instrument({ tracerProvider: provider });
  t.teardown(async () => {
    otel.disable();
    context.disable();
    await provider.shutdown();
  });
  const spans = async () => {
    await provider.forceFlush();
    return exporter.getFinishedSpans();
  };
  return { tracer: provider.getTracer('test-http'), spans, exporter };
}

async function openHost(t, options = {}) {
  const host = await open({ dir: tmpDir(t), ...options });
  t.teardown(() => host.close());
  return host;
}

/**
 * An HTTP server on 127.0.0.1 whose handler runs `route(path)` inside an
 * active span `GET <path>` (kind SERVER), as an HTTP instrumentation would,
 * and answers its result as JSON (500 with the error's code if it threw).
 */
async function serve(t, tracer, route) {
  const server = http.createServer((req, res) => {
    const { pathname } = new URL(req.url, 'http://x');
    tracer.startActiveSpan(`${req.method} ${pathname}`, { kind: SpanKind.SERVER }, async (span) => {
      try {
        const out = await route(pathname);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
      } catch (err) {
        span.recordException(err);
        span.setStatus({ code: SpanStatusCode.ERROR });
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ code: err.code ?? err.name, message: err.message }));
      } finally {
        span.end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address();
  return async (p) => {
    const res = await fetch(`http://127.0.0.1:${port}${p}`);
    return { status: res.status, body: await res.json() };
  };
}

/** The one span named `name` (and matching `pred`); fails naming what was exported otherwise. */
function one(t, spans, name, pred = () => true) {
  const found = spans.filter((s) => s.name === name && pred(s));
  t.is(found.length, 1, `one span "${name}" among ${JSON.stringify(spans.map((s) => s.name))}`);
  return found[0];
}

const idOf = (span) => span.spanContext().spanId;
const parentOf = (span) => span.parentSpanContext?.spanId;

/** Request → Outer.relay → Inner.write → commit Inner, in one trace. */
function assertNesting(t, spans, ids) {
  const request = one(t, spans, 'GET /relay');
  const outer = one(t, spans, 'Outer.relay');
  const inner = one(t, spans, 'Inner.write');
  const commit = one(t, spans, 'commit Inner', (s) => s.attributes['durable_workers.id'] === ids.inner);
  t.is(parentOf(outer), idOf(request), 'the call made in the request handler is a child of the request span');
  t.is(parentOf(inner), idOf(outer), 'the call made inside Outer.relay is a child of Outer.relay');
  t.is(parentOf(commit), idOf(inner), "the commit carrying Inner.write's writes is a child of Inner.write");
  t.is(parentOf(request), undefined, 'the request span is the root');
  const traceId = request.spanContext().traceId;
  for (const s of [outer, inner, commit]) t.is(s.spanContext().traceId, traceId, `${s.name} is in the request's trace`);

  t.is(outer.kind, SpanKind.INTERNAL);
  t.deepEqual(outer.attributes, { 'durable_workers.class': 'Outer', 'durable_workers.id': ids.outer, 'durable_workers.method': 'relay' });
  t.deepEqual(inner.attributes, { 'durable_workers.class': 'Inner', 'durable_workers.id': ids.inner, 'durable_workers.method': 'write', 'durable_workers.chain': [`Outer "${ids.outer}"`] });
  t.like(commit.attributes, { 'durable_workers.class': 'Inner', 'durable_workers.commit.keys': 1, 'durable_workers.commit.documents': 1, 'durable_workers.commit.alarms': 0 });
  t.true(commit.attributes['durable_workers.commit.bytes'] > 10);
  for (const k of ['queued_ms', 'sync_ms', 'duration_ms']) {
    const v = commit.attributes[`durable_workers.commit.${k}`];
    t.true(Number.isFinite(v) && v >= 0, `commit.${k} ${v}`);
  }
  for (const s of [outer, inner, commit]) t.is(s.status.code, SpanStatusCode.UNSET, `${s.name} did not fail`);
  // The commit lands, and the inner call returns, before the outer call does
  // (to a millisecond: the SDK takes a span's start from Date.now()).
  const ms = ([s, ns]) => s * 1e3 + ns / 1e6;
  const inOrder = (...times) => times.every((x, i) => i === 0 || times[i - 1] <= x + 1);
  t.true(inOrder(ms(commit.endTime), ms(inner.endTime), ms(outer.endTime), ms(request.endTime)), 'ends: commit, inner, outer, request');
  t.true(inOrder(ms(request.startTime), ms(outer.startTime), ms(inner.startTime), ms(commit.startTime)), 'starts: request, outer, inner, commit');
}

/** The span of a call that threw `RangeError: inner failed`, child of the request span. */
function assertFailed(t, spans) {
  const request = one(t, spans, 'GET /fail');
  const failed = one(t, spans, 'Inner.fail');
  t.is(parentOf(failed), idOf(request));
  t.is(failed.spanContext().traceId, request.spanContext().traceId);
  t.deepEqual(failed.status, { code: SpanStatusCode.ERROR, message: 'inner failed' });
  t.is(failed.attributes['error.type'], 'RangeError');
  const ex = failed.events.find((e) => e.name === 'exception');
  t.truthy(ex, 'the exception is recorded as an event');
  t.like(ex.attributes, { 'exception.type': 'RangeError', 'exception.message': 'inner failed' });
  t.regex(String(ex.attributes['exception.stacktrace']), /inner failed/);
}

serial('one HTTP request: its span → the call span → the nested call → the commit, and a call that throws', async (t) => {
  const { tracer, spans } = tracing(t);
  const host = await openHost(t);
  const get = await serve(t, tracer, (p) => (p === '/relay' ? host.get(Outer, 'o').relay('i', 7) : host.get(Inner, 'i').fail()));
  const ok = await get('/relay');
  t.is(ok.status, 200);
  t.is(ok.body.inner.n, 7);
  const bad = await get('/fail');
  t.deepEqual(bad, { status: 500, body: { code: 'RangeError', message: 'inner failed' } });
  const all = await spans();
  assertNesting(t, all, { outer: 'o', inner: 'i' });
  assertFailed(t, all);
  t.false(
    all.some((s) => s.name.startsWith('shard ')),
    'no shard, no shard span',
  );
});

serial('on a shard: the same nesting, the nested call and the commit published on the host thread', async (t) => {
  const { tracer, spans } = tracing(t);
  const host = await openHost(t, { shards: { count: 1, module: MODULE } });
  // The classes the shard module exports are the ones routed to the shard.
  const { Outer: SOuter, Inner: SInner } = require(MODULE);
  const get = await serve(t, tracer, (p) => (p === '/relay' ? host.get(SOuter, 'so').relay('si', 5) : host.get(SInner, 'si').fail()));
  const ok = await get('/relay');
  t.is(ok.status, 200);
  t.is(ok.body.inner.n, 5);
  const bad = await get('/fail');
  t.is(bad.status, 500);
  t.is(bad.body.message, 'inner failed');
  const all = await spans();
  assertNesting(t, all, { outer: 'so', inner: 'si' });
  assertFailed(t, all);
  const started = one(t, all, 'shard start');
  t.is(started.attributes['durable_workers.shard'], 0);
  t.is(typeof started.attributes['durable_workers.shard.thread_id'], 'number');
  t.is(parentOf(started), undefined, 'a shard starting is a trace of its own');
});

serial('a call refused before it runs ends its span with the refusal', async (t) => {
  const { spans } = tracing(t);
  const host = await openHost(t);
  await t.throwsAsync(host.get(Inner, 'i').missing(), { code: 'ERR_DURABLE_METHOD' });
  const refused = one(t, await spans(), 'Inner.missing');
  t.is(refused.status.code, SpanStatusCode.ERROR);
  t.is(refused.attributes['error.type'], 'ERR_DURABLE_METHOD');
  t.is(parentOf(refused), undefined, 'made outside any span: a root');
});

serial('alarms are root spans with their name, attempt and lateness; one that throws is an error; evictions are zero-length spans', async (t) => {
  const { tracer, spans, exporter } = tracing(t);
  const host = await openHost(t, { maxLive: 1 });
  const alarms = await host.startAlarms({ classes: [Ringer] });
  t.teardown(() => alarms.stop());
  // Scheduled inside a span: the alarm still starts a trace of its own.
  await tracer.startActiveSpan('schedule', async (span) => {
    await host.get(Ringer, 'a').ring(20, 'good');
    await host.get(Ringer, 'a').ring(20, 'bad');
    span.end();
  });
  const named = (name) => exporter.getFinishedSpans().filter((s) => s.name === name);
  await until(() => named('alarm Ringer.bad').length >= 2, 20_000, 'the failing alarm and its retry');
  const all = await spans();
  const good = one(t, all, 'alarm Ringer.good');
  t.is(parentOf(good), undefined);
  t.like(good.attributes, { 'durable_workers.class': 'Ringer', 'durable_workers.id': 'a', 'durable_workers.alarm.name': 'good', 'durable_workers.alarm.attempt': 0 });
  t.true(good.attributes['durable_workers.alarm.late_ms'] >= 0);
  t.true(good.attributes['durable_workers.alarm.scheduled_time'] > 0);
  t.is(good.status.code, SpanStatusCode.UNSET);
  const first = one(t, all, 'alarm Ringer.bad', (s) => s.attributes['durable_workers.alarm.attempt'] === 0);
  t.deepEqual(first.status, { code: SpanStatusCode.ERROR, message: 'the alarm failed once' });
  t.is(one(t, all, 'alarm Ringer.bad', (s) => s.attributes['durable_workers.alarm.attempt'] === 1).status.code, SpanStatusCode.UNSET);
  // maxLive 1: a worker makes room by closing an idle one (Ringer "a", or
  // Inner "x" if Ringer was still finishing its alarm when "x" arrived).
  t.is(await host.get(Ringer, 'a').rang('bad'), 1);
  await tracer.startActiveSpan('make room', async (span) => {
    await host.get(Inner, 'x').write(1);
    await host.get(Inner, 'y').write(2);
    span.end();
  });
  const evictions = () => exporter.getFinishedSpans().filter((s) => s.name.startsWith('evict '));
  await until(() => evictions().length > 0, 10_000, 'an eviction span');
  const evict = evictions()[0];
  const victim = evict.attributes['durable_workers.class'];
  t.is(evict.name, `evict ${victim}`);
  t.like(evict.attributes, { 'durable_workers.id': victim === 'Ringer' ? 'a' : 'x', 'durable_workers.evict.reason': 'evicted' });
  t.deepEqual(evict.startTime, evict.endTime, 'zero-length');
  t.is(parentOf(evict), idOf(one(t, await spans(), 'make room')), 'a child of the span active where the call that made room was made');
});

serial('an alarm run on a shard is reported after the fact; a lost shard is an error span', async (t) => {
  const { spans, exporter } = tracing(t);
  const host = await openHost(t, { shards: { count: 1, module: MODULE } });
  const { Ringer: SRinger } = require(MODULE);
  const alarms = await host.startAlarms({ classes: [SRinger] });
  t.teardown(() => alarms.stop());
  await host.get(SRinger, 'sr').ring(10, 'good');
  await until(() => exporter.getFinishedSpans().some((s) => s.name === 'alarm Ringer.good'), 20_000, 'the shard alarm span');
  const span = one(t, await spans(), 'alarm Ringer.good');
  t.like(span.attributes, { 'durable_workers.on_shard': true, 'durable_workers.id': 'sr', 'durable_workers.alarm.attempt': 0 });
  t.is(parentOf(span), undefined);
  t.true(span.duration[0] >= 0 && span.duration[1] >= 0);
  // A lost shard: the call that ended its thread fails, and the loss is a span of its own.
  host.on('shardLost', () => {});
  const { Outer: SOuter } = require(MODULE);
  await t.throwsAsync(host.get(SOuter, 'so').exitThread(), { code: 'ERR_DURABLE_SHARD_LOST' });
  await until(() => exporter.getFinishedSpans().some((s) => s.name === 'shard lost'), 10_000, 'the shard lost span');
  const all = await spans();
  const lost = one(t, all, 'shard lost');
  t.is(lost.status.code, SpanStatusCode.ERROR);
  t.like(lost.attributes, { 'durable_workers.shard': 0, 'error.type': 'ERR_DURABLE_SHARD_LOST' });
  t.like(one(t, all, 'Outer.exitThread').attributes, { 'error.type': 'ERR_DURABLE_SHARD_LOST' });
});

serial('a hibernatable socket event is a root span with its worker and kind', async (t) => {
  const { exporter } = tracing(t);
  const host = await openHost(t);
  await sayInRoom(t, host);
  await until(() => exporter.getFinishedSpans().some((s) => s.name === 'socket Room.message'), 10_000, 'the message span');
  const span = exporter.getFinishedSpans().find((s) => s.name === 'socket Room.message');
  t.deepEqual(span.attributes, { 'durable_workers.class': 'Room', 'durable_workers.id': 'obs', 'durable_workers.socket.event': 'message' });
  t.is(parentOf(span), undefined);
  t.is(span.status.code, SpanStatusCode.UNSET);
});

serial('nothing the adapter does throws into the package, and disable() ends what is in flight', async (t) => {
  // A subscriber that throws surfaces as an uncaught exception (which fails
  // this file): none may.
  const host = await openHost(t, { maxLive: 1 });
  // A tracer that throws, then one whose spans throw from every method.
  const throwingSpan = new Proxy(
    {},
    {
      get: () => () => {
        throw new Error('broken span');
      },
    },
  );
  for (const tracer of [
    {
      startSpan: () => {
        throw new Error('broken tracer');
      },
    },
    { startSpan: () => throwingSpan },
  ]) {
    const otel = instrument({ tracer });
    const out = await host.get(Outer, 'o').relay('i', 2);
    t.is(out.inner.n, 2);
    await t.throwsAsync(host.get(Inner, 'i').fail(), { message: 'inner failed' });
    await t.throwsAsync(host.get(Inner, 'i').missing(), { code: 'ERR_DURABLE_METHOD' });
    await new Promise((resolve) => setImmediate(resolve));
    otel.disable();
  }

  // One at a time; disable() twice is harmless; after it, instrument() again.
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const otel = instrument({ tracer: provider.getTracer('t') });
  t.throws(() => instrument(), { message: /already active.*disable\(\)/ });
  const ctx = { class: 'Inner', id: 'z', method: 'write', chain: [], parent: undefined };
  dc.tracingChannel('durable-workers:call').start.publish(ctx);
  otel.disable();
  otel.disable();
  const [left] = exporter.getFinishedSpans();
  t.is(left.name, 'Inner.write');
  t.is(left.attributes['durable_workers.unfinished'], true, 'ended by disable(), marked');
  t.false(dc.tracingChannel('durable-workers:call').hasSubscribers, 'unsubscribed');
  instrument({ tracer: trace.getTracer('x') }).disable();
  await provider.shutdown();
});

serial('without @opentelemetry/api, loading durable-workers/otel works and instrument() says what to install', (t) => {
  const hide = `const M = require('node:module'); const load = M._load; M._load = function (r, ...a) { if (r === '@opentelemetry/api') { const e = new Error("Cannot find module '@opentelemetry/api'"); e.code = 'MODULE_NOT_FOUND'; throw e; } return load.call(this, r, ...a); };`;
  const run = `const { instrument } = require(${JSON.stringify(require.resolve('durable-workers/otel'))}); try { instrument(); console.log('no error'); } catch (e) { console.log(e.message); }`;
  const r = spawnSync(process.execPath, ['-e', `${hide}\n${run}`], { encoding: 'utf8' });
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, /npm install @opentelemetry\/api/);
});
