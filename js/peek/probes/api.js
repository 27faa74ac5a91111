/* global app */
// Assertions 9 and 10: every namespace a manifest can grant is there, and the
// hooks and handlers run in the documented order with the documented failure
// rule (docs/peek.md, "The lifecycle and handlers"). Registrations are made at
// the top level, through `app`. `params.throwIn` names a step to fail.
const steps = [];
let params = {};
const note = (step) => {
  steps.push(step);
  app.log('probe-api', params.tag ?? '', step);
  if (params.throwIn === step.split(':')[0]) throw new Error(`${step} failed`);
};

app.initialize(async (ctx) => {
  params = ctx.trigger.params ?? ctx.trigger.message ?? {};
  note(`initialize:${ctx.trigger.kind}`);
});
app.onShutdown((ctx) => {
  note('shutdown');
  ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 20)).then(() => note('shutdown-wait')));
});
app.subscribe('probe-api/*', (message, ctx) => {
  note(`subscribe:${ctx.trigger.topic}`);
  return { heard: message, steps: [...steps] };
});
app.commands.on('probe-api-ping', (p) => {
  note('command');
  return { pong: p.nonce, steps: [...steps] };
});

const NAMES = ['datastore', 'network', 'pubsub', 'publish', 'subscribe', 'commands', 'settings', 'log', 'initialize', 'onShutdown'];

export default async function entry(api, ctx) {
  note('entry');
  ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, 20)).then(() => note('wait')));
  let late;
  try {
    api.subscribe('probe-api/late', () => {});
    late = 'accepted';
  } catch (err) {
    late = err.code;
  }
  return {
    types: Object.fromEntries(NAMES.map((n) => [n, typeof api[n]])),
    settings: api.settings,
    settingsFrozen: Object.isFrozen(api.settings),
    late,
    steps: [...steps],
  };
}
