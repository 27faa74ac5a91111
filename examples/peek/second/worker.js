// The second worker branches on why it runs (ctx.trigger):
// - a schedule: records the slot it was due for (scheduledFor, not now), so a
//   retried or caught-up run writes the same answer as the original;
// - a command: answers on the command's resultTopic through ctx.waitUntil.
// Every run first tries a domain its manifest does not allow, and logs the refusal.

/**
 * The api as this worker's manifest.json grants it (WorkerApi marks every
 * namespace optional, since each is present only when granted).
 * @typedef {import('durable-workers/peek').WorkerApi & {
 *   datastore: Required<Pick<import('durable-workers/peek').WorkerDatastore, 'describe' | 'addItem' | 'queryItems'>>,
 *   publish: (topic: string, message: unknown) => Promise<void>,
 *   log: import('durable-workers/peek').WorkerLog,
 * }} SecondApi
 */

/**
 * @param {SecondApi} api
 * @param {import('durable-workers/peek').RunContext} ctx
 */
export async function second(api, ctx) {
  try {
    await fetch('https://denied.example/');
  } catch (err) {
    api.log('network guard:', /** @type {{ code?: string }} */ (err).code);
  }
  const { trigger } = ctx;
  if (trigger.kind === 'schedule') {
    await api.datastore.addItem('tick', { scheduledFor: trigger.scheduledFor }, { tags: ['second'] });
    const ticks = await api.datastore.queryItems({ type: 'tick', tag: 'second' });
    if (!ticks.success) throw new Error(`queryItems failed: ${ticks.error}`);
    api.log('tick for', new Date(trigger.scheduledFor).toISOString(), '- ticks so far:', ticks.data.length);
    return { ticks: ticks.data.length };
  }
  if (trigger.kind === 'command') {
    const answer = { echo: trigger.params, deadlineInMs: ctx.deadline - Date.now() };
    if (trigger.resultTopic) ctx.waitUntil(api.publish(trigger.resultTopic, answer));
    return answer;
  }
  return null;
}
