// The gateway service's module (bundled by ./build.js): the router, the hub,
// the Peek workers' schedules and kept logs, and the embedded store's class as
// Durable Objects.
import { DurableObject, env } from 'cloudflare:workers';
import { toDurableObject } from '../workerd.mjs';
import gatewayModule from './gateway.js';
import { PeekStore } from '../../peek/store-embedded.js';

const gateway = gatewayModule.gateway({ DurableObject, toDurableObject, env });
export const PeekStoreObject = toDurableObject(PeekStore, { binding: 'PEEK_STORE' });
export const { PeekHub, PeekWorkerObject, PeekLogObject } = gateway;
export default { fetch: gateway.fetch };
