// Assertion 3, the heap: a snapshot of this process's own V8 heap, written to
// a file for the harness to scan for the credential (the probe is not told
// what it is). Whatever the run's process holds as a JavaScript value is in
// it: api and what its functions close over, the globals, module state,
// messages still referenced, the environment (copied first: its values are
// outside the V8 heap until read). The harness also checks that the snapshot
// holds `marker`, a string it sent in the trigger, so an empty or garbled
// snapshot cannot pass for a clean one.
// A run that cannot write to the harness's directory (a sandboxed run sees
// none of the host's directories) writes the snapshot where it can and
// returns it, gzipped, in its result: the harness scans that instead.
// Where there is no node:v8 with writeHeapSnapshot (workerd's is a stub), the
// probe says so and the harness reports the scan as not possible there.
// Kept in the heap so the snapshot holds it: written, never read.
// eslint-disable-next-line no-unused-vars
let held = null;

const builtin = (name) => {
  try {
    return globalThis.process?.getBuiltinModule?.(name) ?? null;
  } catch {
    return null;
  }
};

export default async function heap(api, ctx) {
  const { marker, dir } = ctx.trigger.params;
  held = { marker, env: { ...(globalThis.process?.env ?? {}) }, argv: globalThis.process?.argv };
  // The store in use: a credential that followed it here would be in the heap now.
  const session = await api.datastore.describe();
  const usedStore = session.success === true;
  const v8 = builtin('node:v8');
  const fs = builtin('node:fs');
  const path = builtin('node:path');
  const os = builtin('node:os');
  if (typeof v8?.writeHeapSnapshot !== 'function' || !fs || !path) return { usedStore, unsupported: 'no node:v8 writeHeapSnapshot in this realm' };
  const name = `probe-heap-${process.pid}-${Date.now()}.heapsnapshot`;
  // The harness's directory first; a run as another user may not write there.
  const tried = [];
  for (const d of [dir, os?.tmpdir()].filter(Boolean)) {
    try {
      const file = v8.writeHeapSnapshot(path.join(d, name));
      const out = { usedStore, file, bytes: fs.statSync(file).size, pid: process.pid };
      if (d !== dir) {
        out.gz = builtin('node:zlib').gzipSync(fs.readFileSync(file));
        fs.rmSync(file, { force: true });
      }
      return out;
    } catch (err) {
      if (err?.code === 'ERR_METHOD_NOT_IMPLEMENTED') return { usedStore, unsupported: `v8.writeHeapSnapshot: ${err.message}` };
      tried.push(`${d}: ${err?.code ?? err?.message}`);
    }
  }
  return { usedStore, error: `could not write a heap snapshot (${tried.join('; ')})` };
}
