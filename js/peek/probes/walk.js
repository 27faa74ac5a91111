// Assertion 3: every string reachable from api (own and inherited properties,
// symbols, each function's source), from the globals the host installed, from
// this process's environment and arguments, and, where there is a /proc, from
// the parent's (the supervisor's) environment and command line and every file
// named there that this process can read. The harness looks for the
// credential among them; the probe is not told what it is.
const BUILTIN = new Set([Object.prototype, Function.prototype, Array.prototype]);

export default async function walk(api) {
  const strings = new Set();
  const seen = new Set();
  const visit = (v, depth) => {
    if (typeof v === 'string') return void strings.add(v);
    if ((typeof v !== 'object' && typeof v !== 'function') || v === null || seen.has(v) || depth > 12) return;
    seen.add(v);
    if (typeof v === 'function') strings.add(Function.prototype.toString.call(v));
    for (let o = v; o !== null && !BUILTIN.has(o); o = Object.getPrototypeOf(o)) {
      for (const key of Reflect.ownKeys(o)) {
        strings.add(String(key));
        const d = Object.getOwnPropertyDescriptor(o, key);
        if ('value' in d) visit(d.value, depth + 1);
        else {
          if (d.get) visit(d.get, depth + 1);
          try {
            visit(Reflect.get(o, key, v), depth + 1);
          } catch {}
        }
      }
    }
  };
  visit(api, 0);
  visit(globalThis.app, 0);
  visit(globalThis.window, 0);
  visit(process.env, 0);
  visit(process.argv, 0);
  visit(process.execArgv, 0);
  for (const s of fromParent()) strings.add(s);
  const session = await api.datastore.describe();
  return { strings: [...strings], usedStore: session.success === true };
}

/** What a worker can read of its parent through /proc (same user): environ, cmdline, and the files they name. */
function fromParent() {
  const fs = globalThis.process?.getBuiltinModule?.('node:fs');
  const ppid = globalThis.process?.ppid;
  if (!fs || !ppid) return [];
  const out = [];
  const read = (file) => {
    try {
      return fs.readFileSync(file, 'latin1');
    } catch (err) {
      out.push(`${file}: ${err.code ?? err.message}`);
      return null;
    }
  };
  const parts = [];
  for (const what of ['environ', 'cmdline']) {
    const text = read(`/proc/${ppid}/${what}`);
    if (text !== null) parts.push(...text.split('\0').filter(Boolean));
  }
  out.push(...parts);
  // Any argument or variable value that names a readable file: read it too.
  const candidates = new Set(parts.flatMap((p) => [p, p.slice(p.indexOf('=') + 1)]).filter((p) => p.startsWith('/') || p.startsWith('.')));
  for (const c of candidates) {
    const file = c.startsWith('/') ? c : `/proc/${ppid}/cwd/${c}`;
    try {
      const st = fs.statSync(file);
      if (!st.isFile() || st.size > 64 * 1024) continue;
    } catch {
      continue;
    }
    const text = read(file);
    if (text !== null) out.push(text);
  }
  return out;
}
