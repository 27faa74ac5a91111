// The hello worker: one argument (api), no ctx, no imports. It runs the same
// on any Peek host.

/**
 * The api as this worker's manifest.json grants it: datastore.describe and
 * log. (WorkerApi marks every namespace optional, since each is present only
 * when granted; this type says which ones are, for the type check.)
 * @typedef {import('durable-workers/peek').WorkerApi & {
 *   datastore: Required<Pick<import('durable-workers/peek').WorkerDatastore, 'describe'>>,
 *   log: import('durable-workers/peek').WorkerLog,
 * }} HelloApi
 */

/** @param {HelloApi} api */
export async function hello(api) {
  const session = await api.datastore.describe();
  if (!session.success) throw new Error(`describe failed: ${session.error}`);
  api.log('hello,', session.data.user, 'on profile', session.data.profile);
  return session.data;
}
