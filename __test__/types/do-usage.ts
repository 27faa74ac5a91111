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
  const snap = await served.backup('/backups/now');
  const copied: number = snap.workers;
  void copied;
  await served.close();
  const archived = await serve({ dir: '.data', archive: { to: '/mnt/archive', retain: '30d' }, control: false, hibernateAfterMs: 5000 });
  await archived.close();
  const objects = await openObjects({
    dir: '.data',
    name: 'app',
    bindings: { COUNTER: { class: Counter, sql: true } },
    vars: { GREETING: 'hi' },
    maxOpenFiles: 64,
    alarmRetryMs: 500,
    maxLive: 1000,
    evictAfterMs: 70_000,
    hibernateAfterMs: 10_000,
  });
  const ns = objects.env.COUNTER;
  void ns;
  const stats = objects.stats().archive?.records;
  void stats;
  const dir: string = objects.dir;
  void dir;
  await objects.backup('/backups/objects');
  await openObjects({ dir: '.data', bindings: {}, archive: { to: '/mnt/a', baseEvery: '12h' }, control: true, log: (line: string) => void line });
  // @ts-expect-error the archive needs a destination object
  await openObjects({ dir: '.data', bindings: {}, archive: '/mnt/a' });
  void url;
  await objects.close();
  // @ts-expect-error bindings are required
  await openObjects({ dir: '.data' });
}
void main;
