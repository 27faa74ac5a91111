'use strict';
// peek.d.ts compiles what a worker author and a host writer write, under
// --strict, through the package's own export map (durable-workers/peek).
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { tmpDir } = require('../helpers/tmp');

const USAGE = `
import { createWorkerHost, nodeAdapter, runConformance, loadManifest, codes, lintWorker } from 'durable-workers/peek';
import type { WorkerEntry, RunResult, AdapterDeclaration, Manifest, PeekErrorCode, LintFinding } from 'durable-workers/peek';

const findings: LintFinding[] = lintWorker('manifest.json');
for (const f of findings) {
  const rule: 'node-import' | 'module-timer' | 'window' | 'eval' | 'ungranted-api' | 'parse' = f.rule;
  const at: string = \`\${f.file}:\${f.line}:\${f.column} \${f.severity === 'error' ? 'error' : 'warning'} \${f.message} (\${f.hint})\`;
  void rule; void at;
}

export const hello: WorkerEntry = async (api, ctx) => {
  api.log?.('hi', ctx?.trigger.kind);
  if (ctx?.trigger.kind === 'schedule') ctx.trigger.scheduledFor.toFixed();
  if (ctx?.trigger.kind === 'command') ctx.waitUntil(api.publish?.(ctx.trigger.resultTopic ?? 'r', 1) ?? Promise.resolve());
  const d = await api.datastore?.describe?.();
  if (d && d.success) return d.data.user;
  const res = await api.network?.fetch('https://api.example.com', { signal: ctx?.signal });
  return res?.status;
};

export const handlers: WorkerEntry = async (api) => {
  api.initialize?.(async (ctx) => ctx.trigger.kind);
  api.onShutdown?.(() => undefined);
  const off: (() => void) | undefined = api.subscribe?.('news/*', (message, ctx) => [message, ctx.deadline]);
  api.commands?.on('refresh', async (params, ctx) => ({ params, at: ctx.deadline }));
  const greeting: unknown = api.settings?.greeting;
  off?.();
  return greeting;
};

async function main(): Promise<void> {
  const adapter = nodeAdapter({ dir: './.peek', memoryMb: 64, credentials: { file: 'c.json' }, sandbox: 'auto', sandboxUids: [0x60000000, 4096] });
  const why: string = adapter.sandbox.on ? adapter.sandbox.mode : adapter.sandbox.reason;
  const host = createWorkerHost({ adapter });
  createWorkerHost({ adapter, settings: 'settings.json' });
  createWorkerHost({ adapter, settings: async (worker) => (worker === 'w' ? { greeting: 'hi' } : undefined) });
  const m: Manifest = loadManifest('manifest.json');
  const r: RunResult = await host.run(m, { kind: 'command', name: 'go', params: { n: 1 } });
  if (!r.ok) { const c: string | undefined = r.error.code; void c; }
  host.on('run', (e) => e.result.ms + (e.run ?? 0));
  const kept = await adapter.readLogs('hello', { run: 1, after: 0, limit: 10 });
  for (const r of kept.records) { const l: 'info' | 'warn' | 'error' | 'run' = r.level; void [l, r.seq, r.run, r.at, r.text.length, kept.runs]; }
  const d: AdapterDeclaration = adapter.declares;
  const iso: 'isolate-per-worker' | 'process-per-run' | 'shared-process' = d.isolation;
  await adapter.ensureSchedule(m, 'every 15m');
  await adapter.start();
  const report = await runConformance({ adapter });
  const code: PeekErrorCode = codes.DEADLINE;
  const sandboxCodes: PeekErrorCode[] = [codes.SANDBOX, codes.FETCH_LIMIT, codes.LIFECYCLE, codes.SETTINGS];
  const declared: boolean = m.commandsDeclared;
  const defaults: Readonly<Record<string, unknown>> | null = m.settings;
  void declared; void defaults; void m.capabilities.lifecycle;
  void iso; void report.ok; void code; void why; void sandboxCodes;
  await adapter.close();
}
void main;
`;

test('peek.d.ts compiles a worker and a host program under tsc --strict', (t) => {
  t.timeout(120_000);
  const dir = tmpDir(t);
  fs.writeFileSync(path.join(dir, 'usage.ts'), USAGE);
  fs.writeFileSync(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        typeRoots: [path.join(__dirname, '..', '..', 'node_modules', '@types')],
      },
      files: ['usage.ts'],
    }),
  );
  // The package resolves by name from the temporary directory through a link.
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(__dirname, '..', '..'), path.join(dir, 'node_modules', 'durable-workers'), 'dir');
  const tsc = require.resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { stdio: 'pipe' });
    t.pass();
  } catch (err) {
    t.fail(String(err.stdout) + String(err.stderr));
  }
});
