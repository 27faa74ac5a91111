'use strict';
// The frame transport between the supervisor and a run's process (Node
// adapter), and the check every message from a realm passes before any use.
//
// A run's process is untrusted: the worker runs in it and can write to the
// transport's descriptor itself. So nothing that arrives is believed: a frame
// is a 4-byte big-endian length and that many bytes of payload; a length over
// the cap ends the run before anything is buffered; the payload is decoded
// inside a try; the decoded value is checked against the protocol (each
// message type's fields and their types) and copied field by field, so what
// the host uses is what was checked. Budgets (frames and bytes per second, as
// token buckets with a burst) bound what a run can make the supervisor do.
//
// Payloads are V8's serialization (node:v8, the structured clone Node's
// 'advanced' IPC used): api arguments and replies keep Dates, Maps, typed
// arrays and the store's own value rules, where JSON would change them. The
// deserializer is V8's own, bounds-checked against the buffer it is given
// (which the cap bounds), and throws on anything it cannot read; what it
// returns is plain data (no getters, no prototypes of ours), checked below.
const v8 = require('node:v8');

/** The largest payload one frame may carry. */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** Per-run budgets for frames from the run (token buckets: rate per second, burst). */
const FRAME_BUDGET = Object.freeze({ framesPerSecond: 2000, framesBurst: 10000, bytesPerSecond: 32 * 1024 * 1024, bytesBurst: 64 * 1024 * 1024 });
/** Per-run budgets for the run's stdout and stderr. */
const OUTPUT_BUDGET = Object.freeze({ maxLineBytes: 256 * 1024, maxTotalBytes: 32 * 1024 * 1024 });
/**
 * What one message's values may expand to once decoded. The payload is small
 * where the graph is big: V8's format keeps shared and cyclic references (one
 * 100 KB object referenced 20,000 times is a 100 KB frame) and a sparse
 * array's length, and the host then walks the graph as a tree (a log line's
 * JSON, a result published): values are counted as that tree, shared ones
 * each time they are reached, against these limits.
 */
const EXPANSION_BUDGET = Object.freeze({ maxValues: 4 * 1024 * 1024, maxBytes: 2 * MAX_FRAME_BYTES });
/** An api path: at most this many names, each at most this long. */
const MAX_PATH = 8;
const MAX_NAME = 128;

const HEADER = 4;

/** A protocol violation: `message` says what was wrong. */
class ProtocolViolation extends Error {}

const fail = (message) => {
  throw new ProtocolViolation(message);
};

/** One frame for `message` (throws, as structured clone does, for a value that cannot cross). */
function encodeFrame(message) {
  const payload = v8.serialize(message);
  if (payload.length > MAX_FRAME_BYTES) {
    throw Object.assign(new RangeError(`a ${message?.t ?? ''} message of ${payload.length} bytes is over the frame cap (${MAX_FRAME_BYTES} bytes)`), { code: 'ERR_PEEK_PROTOCOL' });
  }
  const frame = Buffer.allocUnsafe(HEADER + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  payload.copy(frame, HEADER);
  return frame;
}

/** A token bucket: take(n) is false once more than the burst went in faster than the rate. */
function bucket(rate, burst, now) {
  if (rate === Infinity || burst === Infinity) return () => true;
  let tokens = burst;
  let at = now();
  return (n) => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - at) / 1000) * rate);
    at = t;
    tokens -= n;
    return tokens >= 0;
  };
}

/**
 * Reads frames from a stream of chunks. `push(chunk)` calls onMessage(value)
 * for each whole frame's decoded payload, in order; the first violation
 * (a length over the cap, bytes that do not decode, a budget spent) calls
 * onViolation(reason) once, and from then on everything is dropped.
 * @param {{ onMessage: (value: unknown) => void, onViolation: (reason: string) => void, maxFrameBytes?: number, budget?: typeof FRAME_BUDGET, now?: () => number }} options
 */
function frameReader({ onMessage, onViolation, maxFrameBytes = MAX_FRAME_BYTES, budget = FRAME_BUDGET, now = () => performance.now() }) {
  let chunks = [];
  let buffered = 0;
  let broken = false;
  const frames = bucket(budget.framesPerSecond, budget.framesBurst, now);
  const bytes = bucket(budget.bytesPerSecond, budget.bytesBurst, now);
  const violate = (reason) => {
    if (broken) return;
    broken = true;
    chunks = [];
    buffered = 0;
    onViolation(reason);
  };
  const take = (n) => {
    // Only called with n ≤ buffered.
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    while (off < n) {
      const c = chunks[0];
      const k = Math.min(c.length, n - off);
      c.copy(out, off, 0, k);
      off += k;
      if (k === c.length) chunks.shift();
      else chunks[0] = c.subarray(k);
    }
    buffered -= n;
    return out;
  };
  const peekLength = () => {
    if (chunks[0].length >= HEADER) return chunks[0].readUInt32BE(0);
    const h = Buffer.concat(chunks, Math.min(buffered, 64)).subarray(0, HEADER);
    return h.readUInt32BE(0);
  };
  return {
    push(chunk) {
      if (broken) return;
      if (!Buffer.isBuffer(chunk)) chunk = Buffer.from(chunk);
      if (!bytes(chunk.length)) return violate(`it sent more than ${budget.bytesBurst} bytes of frames faster than ${budget.bytesPerSecond} bytes/s`);
      chunks.push(chunk);
      buffered += chunk.length;
      while (!broken && buffered >= HEADER) {
        const length = peekLength();
        if (length > maxFrameBytes) return violate(`it sent a frame of ${length} bytes, over the cap of ${maxFrameBytes}`);
        if (buffered < HEADER + length) return;
        if (!frames(1)) return violate(`it sent more than ${budget.framesBurst} frames faster than ${budget.framesPerSecond}/s`);
        take(HEADER);
        const payload = take(length);
        let value;
        try {
          if (length === 0) throw new Error('an empty frame');
          value = v8.deserialize(payload);
        } catch (err) {
          return violate(`it sent a frame that does not decode (${err?.message ?? err})`);
        }
        try {
          onMessage(value);
        } catch (err) {
          // Whatever went wrong with this run's message ends this run, not the supervisor.
          return violate(err instanceof ProtocolViolation ? err.message : `its message could not be handled (${err?.message ?? err})`);
        }
      }
    },
    /** Whether a partial frame is left (at the stream's end: a frame cut short). */
    get pending() {
      return buffered;
    },
  };
}

// ---- the protocol's messages, checked ------------------------------------

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const finite = (v, what) => (typeof v === 'number' && Number.isFinite(v) ? v : fail(`${what} is not a finite number`));
const str = (v, what) => (typeof v === 'string' ? v : fail(`${what} is not a string`));
const bool = (v, what) => (typeof v === 'boolean' ? v : fail(`${what} is not a boolean`));
const short = (v, max, what) => (str(v, what).length <= max ? v : fail(`${what} is longer than ${max} characters`));
const optStr = (v, what) => (v === undefined || v === null ? undefined : str(v, what));

/** An error's strings are kept to this many characters (the rest is cut, marked). */
const MAX_ERROR_TEXT = 64 * 1024;
const cut = (s, max = MAX_ERROR_TEXT) => (s === undefined || s.length <= max ? s : `${s.slice(0, max)}… (cut)`);

function plainError(v, what) {
  if (!isObject(v)) fail(`${what} is not an error object`);
  return {
    name: cut(str(v.name ?? 'Error', `${what}.name`), 256),
    message: cut(str(v.message ?? '', `${what}.message`)),
    code: cut(optStr(v.code, `${what}.code`), 256),
    stack: cut(optStr(v.stack, `${what}.stack`)),
  };
}

function timing(v, what) {
  if (v === undefined) return undefined;
  if (!isObject(v)) fail(`${what} is not an object`);
  const out = {};
  for (const key of ['start', 'importStart', 'importEnd', 'runStart', 'runEnd']) if (v[key] !== undefined) out[key] = finite(v[key], `${what}.${key}`);
  return out;
}

function apiPath(v, what) {
  if (!Array.isArray(v)) fail(`${what} is not an array`);
  if (v.length < 1 || v.length > MAX_PATH) fail(`${what} has ${v.length} names (1 to ${MAX_PATH})`);
  return v.map((name, i) => (typeof name === 'string' && name.length > 0 && name.length <= MAX_NAME ? name : fail(`${what}[${i}] is not a name of 1 to ${MAX_NAME} characters`)));
}

const args = (v, what) => (Array.isArray(v) ? bounded(v, what) : fail(`${what} is not an array`));

/** `v`, if walking it as a tree stays within EXPANSION_BUDGET; else a violation. */
function bounded(v, what, { maxValues, maxBytes } = EXPANSION_BUDGET) {
  let values = 0;
  let bytes = 0;
  const over = () => fail(`${what} expands to more than ${maxValues} values or ${maxBytes} bytes once its shared, cyclic or sparse parts are counted as the host reads them`);
  const add = (n) => {
    bytes += n;
    if (bytes > maxBytes) over();
  };
  const stack = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    if (++values > maxValues) over();
    if (typeof x === 'string') add(x.length);
    else if (typeof x === 'bigint') add(8);
    else if (x === null || typeof x !== 'object') continue;
    else if (ArrayBuffer.isView(x)) add(x.byteLength);
    else if (x instanceof ArrayBuffer) add(x.byteLength);
    else if (Array.isArray(x)) {
      if (x.length > maxValues - values) over();
      // (named properties of an array are not walked: JSON, the host's tree walk, skips them)
      for (let i = 0; i < x.length; i++) stack.push(x[i]);
    } else if (x instanceof Map) {
      for (const [k, y] of x) stack.push(k, y);
    } else if (x instanceof Set) {
      for (const y of x) stack.push(y);
    } else if (x instanceof Date || x instanceof RegExp || x instanceof Boolean || x instanceof Number) {
      continue;
    } else if (x instanceof String) {
      add(x.length);
    } else {
      if (x instanceof Error) stack.push(x.message, x.stack);
      for (const k of Object.keys(x)) {
        add(k.length);
        stack.push(x[k]);
      }
    }
  }
  return v;
}

/** Each message a realm may send the host: its check, returning the copy the host uses. */
const REALM_MESSAGES = {
  ready: (m) => ({ t: 'ready', origin: finite(m.origin, 'ready.origin'), at: finite(m.at, 'ready.at') }),
  loaded: (m) => {
    const ok = bool(m.ok, 'loaded.ok');
    const t = timing(m.timing, 'loaded.timing');
    if (!ok) return { t: 'loaded', ok, error: plainError(m.error, 'loaded.error'), timing: t };
    if (!Array.isArray(m.exports) || m.exports.length > 10_000) fail('loaded.exports is not an array of [name, type]');
    const exports = bounded(m.exports, 'loaded.exports').map((e, i) =>
      Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && typeof e[1] === 'string' ? [e[0], e[1]] : fail(`loaded.exports[${i}] is not [name, type]`),
    );
    return { t: 'loaded', ok, exports, timing: t };
  },
  result: (m) => {
    const ok = bool(m.ok, 'result.ok');
    const pending = Number.isSafeInteger(m.pending) && m.pending >= 0 ? m.pending : fail('result.pending is not a count');
    const t = timing(m.timing, 'result.timing');
    return ok ? { t: 'result', ok, value: bounded(m.value, 'result.value'), pending, timing: t } : { t: 'result', ok, error: plainError(m.error, 'result.error'), pending, timing: t };
  },
  settled: (m) => {
    if (!Array.isArray(m.errors)) fail('settled.errors is not an array');
    return { t: 'settled', errors: bounded(m.errors, 'settled.errors').map((e, i) => plainError(e, `settled.errors[${i}]`)) };
  },
  call: (m) => ({
    t: 'call',
    id: Number.isSafeInteger(m.id) ? m.id : fail('call.id is not a safe integer'),
    path: apiPath(m.path, 'call.path'),
    args: args(m.args, 'call.args'),
  }),
  cast: (m) => ({ t: 'cast', path: apiPath(m.path, 'cast.path'), args: args(m.args, 'cast.args') }),
  // A sandboxed run's fetch, relayed (../node/fetch-relay.js): only where the host allows it.
  fetch: (m) => {
    const out = { t: 'fetch', id: Number.isSafeInteger(m.id) ? m.id : fail('fetch.id is not a safe integer'), url: short(m.url, 16 * 1024, 'fetch.url'), method: short(m.method, 32, 'fetch.method') };
    if (!Array.isArray(m.headers) || m.headers.length > 256) fail('fetch.headers is not an array of at most 256 [name, value]');
    out.headers = m.headers.map((h, i) =>
      Array.isArray(h) && h.length === 2 ? [short(h[0], 1024, `fetch.headers[${i}][0]`), short(h[1], 16 * 1024, `fetch.headers[${i}][1]`)] : fail(`fetch.headers[${i}] is not [name, value]`),
    );
    if (m.body !== undefined && m.body !== null && !(m.body instanceof Uint8Array)) fail('fetch.body is not bytes');
    // A copy: a view decoded from the frame would keep the whole frame alive.
    if (m.body instanceof Uint8Array) out.body = new Uint8Array(m.body);
    const redirect = m.redirect ?? 'follow';
    out.redirect = redirect === 'follow' || redirect === 'manual' || redirect === 'error' ? redirect : fail("fetch.redirect is not 'follow', 'manual' or 'error'");
    return out;
  },
  'fetch-abort': (m) => ({ t: 'fetch-abort', id: Number.isSafeInteger(m.id) ? m.id : fail('fetch-abort.id is not a safe integer') }),
  net: (m) => {
    const out = { t: 'net', method: short(m.method, 32, 'net.method'), url: short(m.url, 16 * 1024, 'net.url'), allowed: bool(m.allowed, 'net.allowed') };
    if (m.address !== undefined) out.address = short(m.address, 64, 'net.address');
    return out;
  },
};

/**
 * Checks a message from a realm against the protocol; returns the checked
 * copy, or throws a ProtocolViolation saying what was wrong.
 * @param {unknown} m
 * @param {{ allow?: Set<string> }} [options] allow: the message types accepted here
 */
function checkRealmMessage(m, { allow } = {}) {
  if (!isObject(m)) fail('a message is not an object');
  const t = m.t;
  if (typeof t !== 'string' || !Object.hasOwn(REALM_MESSAGES, t) || (allow && !allow.has(t))) {
    fail(`a message of unknown type ${JSON.stringify(typeof t === 'string' ? t.slice(0, 40) : typeof t)}`);
  }
  return REALM_MESSAGES[t](m);
}

/**
 * Splits a run's stdout or stderr into lines within the output budget:
 * a line longer than maxLineBytes, or more than maxTotalBytes in all (both
 * streams share `total`), is a violation; nothing beyond the line being
 * built is held.
 * @param {{ onLine: (line: string) => void, onViolation: (reason: string) => void, name: string, total: { bytes: number }, budget?: typeof OUTPUT_BUDGET }} options
 */
function lineReader({ onLine, onViolation, name, total, budget = OUTPUT_BUDGET }) {
  let parts = [];
  let length = 0;
  let broken = false;
  const violate = (reason) => {
    if (broken) return;
    broken = true;
    parts = [];
    length = 0;
    onViolation(reason);
  };
  const emit = (buf) => {
    let s = buf.toString('utf8');
    if (s.endsWith('\r')) s = s.slice(0, -1);
    onLine(s);
  };
  return {
    push(chunk) {
      if (broken) return;
      total.bytes += chunk.length;
      if (total.bytes > budget.maxTotalBytes) return violate(`it wrote more than ${budget.maxTotalBytes} bytes to stdout and stderr`);
      let from = 0;
      for (;;) {
        const nl = chunk.indexOf(10, from);
        const end = nl === -1 ? chunk.length : nl;
        if (length + (end - from) > budget.maxLineBytes) return violate(`it wrote a ${name} line longer than ${budget.maxLineBytes} bytes`);
        if (nl === -1) {
          if (end > from) {
            parts.push(chunk.subarray(from));
            length += end - from;
          }
          return;
        }
        const line = parts.length ? Buffer.concat([...parts, chunk.subarray(from, nl)]) : chunk.subarray(from, nl);
        parts = [];
        length = 0;
        emit(line);
        from = nl + 1;
      }
    },
    end() {
      if (broken || length === 0) return;
      const line = Buffer.concat(parts);
      parts = [];
      length = 0;
      emit(line);
    },
  };
}

module.exports = { MAX_FRAME_BYTES, FRAME_BUDGET, OUTPUT_BUDGET, EXPANSION_BUDGET, ProtocolViolation, encodeFrame, frameReader, checkRealmMessage, lineReader };
