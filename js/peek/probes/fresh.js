// Assertion 4: a fresh module graph per run. (It also reports its process
// and isolate, for the isolation declaration: another worker than stamp.)
import { captured } from './fresh-dep.js';

const ISOLATE = Symbol.for('durable-workers.peek.isolate');

export default async function fresh(api) {
  globalThis[ISOLATE] ??= crypto.randomUUID();
  return { capturedIsThisRunsApi: captured === api, appIsApi: globalThis.app === api, pid: globalThis.process?.pid, isolate: globalThis[ISOLATE] };
}
