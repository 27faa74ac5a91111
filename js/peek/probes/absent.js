// Assertion 2: what the grant does not name is not there at all.
export default async function absent(api) {
  const names = ['window', 'shortcuts', 'filesystem', 'datastore', 'network', 'pubsub', 'publish', 'subscribe', 'commands', 'settings', 'initialize', 'onShutdown'];
  return Object.fromEntries(names.map((n) => [n, typeof api[n]]));
}
