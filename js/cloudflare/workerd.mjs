// durable-workers/cloudflare as seen inside workerd (and on Cloudflare): the
// bundle for a Worker resolves the package to this file. It is the one place
// that imports cloudflare:workers, so every other file stays plain
// CommonJS that Node can load too.
import { DurableObject } from 'cloudflare:workers';
import runtime from './runtime.js';
import wire from './wire.js';

export const toDurableObject = runtime.makeToDurableObject(DurableObject);
export const { hostOf, handleCall, isWorkerClass } = runtime;
export { wire };
export { DurableWorker, DurableError, codes } from './base.js';
