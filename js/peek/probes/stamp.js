// Declarations: when a run starts against what it was for, its deadline, and
// which process (pid) and which isolate (a nonce kept on the isolate's
// globalThis, which a fresh module graph does not reset) it is in.
const ISOLATE = Symbol.for('durable-workers.peek.isolate');

export default async function stamp(api, ctx) {
  globalThis[ISOLATE] ??= crypto.randomUUID();
  return { startedAt: Date.now(), trigger: ctx.trigger, deadline: ctx.deadline, pid: globalThis.process?.pid, isolate: globalThis[ISOLATE] };
}
