// Compiled by __test__/api/types.test.js: the durable-workers/do entry points as a user calls them.
import { serve, openObjects, registerCloudflareModules } from 'durable-workers/do';

class Counter {
  constructor(
    readonly ctx: unknown,
    readonly env: unknown,
  ) {}
}

async function main(): Promise<void> {
  registerCloudflareModules();
  const served = await serve({ config: 'wrangler.jsonc', dir: '.data', port: 0, durability: 'full', maxOpenFiles: 256 });
  const url: string = served.url;
  await served.close();
  const objects = await openObjects({ dir: '.data', name: 'app', bindings: { COUNTER: { class: Counter, sql: true } }, vars: { GREETING: 'hi' }, maxOpenFiles: 64, alarmRetryMs: 500 });
  const ns = objects.env.COUNTER;
  void ns;
  void url;
  await objects.close();
  // @ts-expect-error bindings are required
  await openObjects({ dir: '.data' });
}
void main;
