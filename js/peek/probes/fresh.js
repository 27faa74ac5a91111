// Assertion 4: a fresh module graph per run.
import { captured } from './fresh-dep.js';

export default async function fresh(api) {
  return { capturedIsThisRunsApi: captured === api, appIsApi: globalThis.app === api, pid: process.pid };
}
