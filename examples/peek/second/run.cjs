'use strict';
// Runs the second worker under an in-process supervisor: two scheduled runs,
// then one command over the channel whose answer arrives on its resultTopic.
//   node examples/peek/second/run.cjs
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { nodeAdapter, createWorkerHost, createSupervisor } = require('../../../js/peek');

async function main() {
  process.env.PEEK_CREDENTIAL_SECOND ??= 'example-local-token';
  const state = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-second-'));
  const workers = fs.mkdtempSync(path.join(os.tmpdir(), 'peek-second-workers-'));
  fs.symlinkSync(__dirname, path.join(workers, 'second'), 'dir');
  const adapter = nodeAdapter({ dir: state, log: (r) => console.log(`  [${r.worker}] ${r.args.join(' ')}`) });
  const host = createWorkerHost({ adapter });
  const ticks = [];
  let commandRan;
  const commandDone = new Promise((resolve) => {
    commandRan = resolve;
  });
  host.on('run', (e) => {
    console.log(`run: ${e.trigger.kind} ${e.result.ok ? 'ok' : `failed: ${e.result.error.message}`}`);
    if (e.trigger.kind === 'schedule') ticks.push(e.trigger.scheduledFor);
    if (e.trigger.kind === 'command') commandRan();
  });
  const supervisor = createSupervisor({ dir: workers, adapter, host, log: (r) => console.log(`  [${r.worker}] ${r.args.join(' ')}`) });
  await supervisor.start();
  while (ticks.length < 2) await new Promise((r) => setTimeout(r, 100));
  console.log(`two scheduled runs, due ${ticks[1] - ticks[0]} ms apart`);

  let answer;
  const answered = new Promise((resolve) => {
    answer = resolve;
  });
  const answers = await adapter.openChannel({ topics: ['second-answers'] }, (m) => answer(m.message));
  const client = await adapter.openChannel({ topics: [] }, () => {});
  await client.publish('cmd:execute:second-echo', { params: { hello: 'channel' }, resultTopic: 'second-answers' });
  console.log('command answered:', JSON.stringify(await answered));
  // The answer comes through ctx.waitUntil, before the run has ended: close
  // once it has (closing earlier would stop it, ERR_PEEK_CLOSED).
  await commandDone;
  await answers.close();
  await client.close();
  await supervisor.close();
  fs.rmSync(state, { recursive: true, force: true });
  fs.rmSync(workers, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
