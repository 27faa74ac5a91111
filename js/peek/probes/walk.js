// Assertion 3: every string reachable from api (own and inherited properties,
// symbols, each function's source), from the globals the host installed, and
// from this process's environment and arguments. The harness looks for the
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
  const session = await api.datastore.describe();
  return { strings: [...strings], usedStore: session.success === true };
}
