// The gateway service's module (bundled by ./build.js): the router, the hub,
// the schedules, and the embedded store's class as a Durable Object.
import { DurableObject } from 'cloudflare:workers';
import { toDurableObject } from '../workerd.mjs';
import gateway from './gateway.js';
import { PeekStore } from '../../peek/store-embedded.js';

export const PeekStoreObject = toDurableObject(PeekStore, { binding: 'PEEK_STORE' });
export const { PeekHub, PeekSchedule } = gateway.classes(DurableObject);
export default { fetch: (request, env) => gateway.fetchHandler(request, env) };
