'use strict';
// durable-workers/otel: the diagnostics channels (./channels.js) as
// OpenTelemetry spans. `instrument()` subscribes; `disable()` unsubscribes.
// @opentelemetry/api is an optional peer dependency, required only here, when
// instrument() is called: the rest of the package never loads it.
//
// The span model (docs/operating.md, "OpenTelemetry"):
//   Class.method       a call, from the stub call to the released result; its
//                      parent is the span of the call it was made from inside
//                      a worker (ctx.parent), else the context active where
//                      the call was made (an HTTP request's span, say)
//   commit Class       a commit, child of the call whose writes it carries
//                      (ctx.call), else of the active context
//   alarm Class.name   an alarm's handler, a root span (a trace of its own)
//   socket Class.event a hibernatable WebSocket event's handler, a root span
//   evict Class        a zero-length span, child of the active context (the
//                      call whose arrival made room or swept the idle)
//   shard start|lost   a zero-length root span
//
// A subscriber that throws would reach the package as an uncaught exception:
// every handler here catches and drops what it throws, and every span it
// starts it ends (at asyncEnd, at end when the work threw synchronously, or at
// disable() for what is still in flight).
const channels = require('./channels');

const SCOPE = 'durable-workers';
const ATTR = 'durable_workers';

/** The handle in effect, if instrument() was called and not disabled since. */
let current = null;

function loadApi() {
  try {
    return require('@opentelemetry/api');
  } catch (err) {
    if (err?.code !== 'MODULE_NOT_FOUND') throw err;
    throw new Error('durable-workers/otel needs @opentelemetry/api, an optional peer dependency: npm install @opentelemetry/api', { cause: err });
  }
}

function version() {
  try {
    return require('../../package.json').version;
  } catch {
    return undefined;
  }
}

/** What an error is called in `error.type`: its code, else its class name. */
function errorType(err) {
  if (err !== null && typeof err === 'object') return String(err.code ?? err.name ?? 'Error');
  return typeof err;
}

/**
 * Subscribes to the package's channels and turns them into spans.
 * @param {{ tracer?: import('@opentelemetry/api').Tracer, tracerProvider?: import('@opentelemetry/api').TracerProvider }} [options]
 * @returns {{ disable(): void }}
 */
function instrument(options = {}) {
  if (current !== null) {
    throw new Error('durable-workers/otel: instrument() is already active; call disable() on the handle it returned before instrumenting again');
  }
  const api = loadApi();
  const { context, trace, SpanKind, SpanStatusCode, ROOT_CONTEXT } = api;
  const tracer = options.tracer ?? (options.tracerProvider ?? trace).getTracer(SCOPE, version());

  /** Channel context → { span, endSeen, syncError, done }. */
  const states = new WeakMap();
  /** The states not yet ended: what disable() ends. */
  const open = new Set();

  const spanOf = (ctx) => (ctx === undefined || ctx === null ? undefined : states.get(ctx)?.span);

  /** Starts a span for `ctx` under `parent` (an OpenTelemetry context). */
  function begin(ctx, name, attributes, parent, startTime) {
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, startTime }, parent);
    const state = { span, endSeen: false, syncError: false, done: false };
    states.set(ctx, state);
    open.add(state);
    return state;
  }

  function finish(state) {
    if (state === undefined || state.done) return;
    state.done = true;
    open.delete(state);
    state.span.end();
  }

  function failed(state, err) {
    if (state === undefined || state.done) return;
    // tracePromise publishes error before end when the work threw
    // synchronously, and then no asyncEnd follows: end() ends the span.
    if (!state.endSeen) state.syncError = true;
    const span = state.span;
    // An error from a shard, or from another realm, is not always an instance of this realm's Error.
    const object = err !== null && typeof err === 'object';
    span.setStatus({ code: SpanStatusCode.ERROR, message: object && typeof err.message === 'string' ? err.message : String(err) });
    span.setAttribute('error.type', errorType(err));
    span.recordException(object ? err : String(err));
  }

  /** A tracing channel's handlers, each catching what it throws. */
  function handlers(start, asyncEnd) {
    const guard = (fn) => (ctx) => {
      try {
        fn(ctx);
      } catch {}
    };
    return {
      start: guard(start),
      end: guard((ctx) => {
        const state = states.get(ctx);
        if (state === undefined) return;
        state.endSeen = true;
        if (state.syncError) finish(state);
      }),
      asyncStart: guard(() => {}),
      asyncEnd: guard((ctx) => {
        const state = states.get(ctx);
        if (state === undefined || state.done) return;
        try {
          asyncEnd?.(ctx, state);
        } finally {
          finish(state);
        }
      }),
      error: guard((ctx) => failed(states.get(ctx), ctx.error)),
    };
  }

  const callHandlers = handlers((ctx) => {
    const attributes = { [`${ATTR}.class`]: ctx.class, [`${ATTR}.id`]: ctx.id, [`${ATTR}.method`]: ctx.method };
    if (ctx.chain?.length > 0) attributes[`${ATTR}.chain`] = [...ctx.chain];
    const parent = spanOf(ctx.parent);
    begin(ctx, `${ctx.class}.${ctx.method}`, attributes, parent === undefined ? context.active() : trace.setSpan(context.active(), parent));
  });

  const commitHandlers = handlers(
    (ctx) => {
      const attributes = {
        [`${ATTR}.class`]: ctx.class,
        [`${ATTR}.id`]: ctx.id,
        [`${ATTR}.commit.keys`]: ctx.keys,
        [`${ATTR}.commit.documents`]: ctx.documents,
        [`${ATTR}.commit.alarms`]: ctx.alarms,
        [`${ATTR}.commit.bytes`]: ctx.bytes,
      };
      const call = spanOf(ctx.call);
      begin(ctx, `commit ${ctx.class}`, attributes, call === undefined ? context.active() : trace.setSpan(context.active(), call));
    },
    (ctx, state) => {
      if (ctx.error !== undefined) return;
      state.span.setAttributes({ [`${ATTR}.commit.queued_ms`]: ctx.queuedMs, [`${ATTR}.commit.sync_ms`]: ctx.syncMs, [`${ATTR}.commit.duration_ms`]: ctx.durationMs });
      if (typeof ctx.waitMs === 'number') state.span.setAttribute(`${ATTR}.commit.wait_ms`, ctx.waitMs);
    },
  );

  const alarmHandlers = handlers((ctx) => {
    const attributes = {
      [`${ATTR}.class`]: ctx.class,
      [`${ATTR}.id`]: ctx.id,
      [`${ATTR}.alarm.name`]: ctx.name,
      [`${ATTR}.alarm.scheduled_time`]: ctx.scheduledTime,
      [`${ATTR}.alarm.attempt`]: ctx.attempt,
      [`${ATTR}.alarm.late_ms`]: ctx.lateMs,
    };
    // A shard reports its alarm after the fact, with how long it ran.
    let startTime;
    if (ctx.onShard) {
      attributes[`${ATTR}.on_shard`] = true;
      if (Number.isFinite(ctx.durationMs)) startTime = Date.now() - ctx.durationMs;
    }
    begin(ctx, `alarm ${ctx.class}.${ctx.name}`, attributes, ROOT_CONTEXT, startTime);
  });

  const socketHandlers = handlers((ctx) => {
    const event = ctx.event ?? 'event';
    begin(ctx, `socket ${ctx.class}.${event}`, { [`${ATTR}.class`]: ctx.class, [`${ATTR}.id`]: ctx.id, [`${ATTR}.socket.event`]: event }, ROOT_CONTEXT);
  });

  /** A zero-length span: something that happened, not something that took time. */
  function instant(name, attributes, parent, err) {
    const at = Date.now();
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, startTime: at }, parent);
    try {
      if (err !== undefined) failed({ span, endSeen: true, syncError: false, done: false }, err);
    } finally {
      span.end(at);
    }
  }

  const onEvict = (msg) => {
    try {
      instant(`evict ${msg.class}`, { [`${ATTR}.class`]: msg.class, [`${ATTR}.id`]: msg.id, [`${ATTR}.evict.reason`]: msg.reason }, context.active());
    } catch {}
  };

  const onShard = (msg) => {
    try {
      const attributes = { [`${ATTR}.shard`]: msg.shard };
      if (msg.threadId !== undefined) attributes[`${ATTR}.shard.thread_id`] = msg.threadId;
      instant(`shard ${msg.event}`, attributes, ROOT_CONTEXT, msg.event === 'lost' ? (msg.error ?? new Error('shard lost')) : undefined);
    } catch {}
  };

  const tracing = [
    [channels.call, callHandlers],
    [channels.commit, commitHandlers],
    [channels.alarm, alarmHandlers],
    [channels.socket, socketHandlers],
  ];
  for (const [ch, h] of tracing) ch.subscribe(h);
  channels.evict.subscribe(onEvict);
  channels.shard.subscribe(onShard);

  let disabled = false;
  const handle = {
    disable() {
      if (disabled) return;
      disabled = true;
      for (const [ch, h] of tracing) ch.unsubscribe(h);
      channels.evict.unsubscribe(onEvict);
      channels.shard.unsubscribe(onShard);
      // What is still in flight would never see its asyncEnd now.
      for (const state of [...open]) {
        try {
          state.span.setAttribute(`${ATTR}.unfinished`, true);
        } catch {}
        try {
          finish(state);
        } catch {}
      }
      if (current === handle) current = null;
    },
  };
  current = handle;
  return handle;
}

module.exports = { instrument };
