'use strict';
// The catalog, the alarm index, the repair tool and the backfill under power
// loss (durability 'full'), with the rounds of files/powercut.test.js: a
// child writes on a power-cut mount and records what it saw acknowledged, the
// power is cut at a random moment, and the directory is checked as the cut
// left it (every file's integrity; the catalog read directly against the
// worker files: every file listed, every alarm indexed early, never late),
// then reopened and checked for every acknowledged operation.
//
// The catalog is a second file written beside the worker's with no
// transaction across the two; its order of writes is what keeps them
// consistent, and only a power cut shows whether each step was synced
// before the next.
const test = require('ava');
const { open } = require('../..');
const { repair } = require('../../js/tools/repair');
const { BASE_SEED, engineCuts, catalogCheck, integrity, must, sleep, powerTestOf, idsOf } = require('../helpers/powercut-rounds');
const { Clock, Alarmed, ledgerClass, ledgerField, docsOf } = require('../helpers/powercut-workers');

const powerTest = powerTestOf(test);

/**
 * Alarms set and deleted: a deleted one acknowledged stays deleted, a set one
 * is there at its time, except the one delete per caller that may have been
 * in flight (whatever the check finds for it then holds in later rounds).
 */
async function churnCheck(t, host, acks, memo, where) {
  memo.alarms ??= new Map();
  /** caller → the last name it acknowledged setting, this round. */
  const lastSet = new Map();
  for (const [kind, w, name, at] of acks) {
    if (kind === 'a') {
      memo.alarms.set(name, { w, at: Number(at), deleted: false, unsure: false });
      lastSet.set(name.slice(0, name.lastIndexOf('-')), name);
    }
    if (kind === 'x') memo.alarms.get(name).deleted = true;
  }
  // The name set just before each caller's last one may have been deleting.
  for (const [caller, name] of lastSet) {
    const n = Number(name.slice(name.lastIndexOf('-') + 1));
    const previous = memo.alarms.get(`${caller}-${n - 1}`);
    if (previous !== undefined && !previous.deleted) previous.unsure = true;
  }
  const wrong = [];
  for (const [name, a] of memo.alarms) {
    const when = await must(t, where, `${a.w}.when(${name})`, host.get(Clock, a.w).when(name));
    if (a.unsure) {
      if (when === null) a.deleted = true;
      else if (when !== a.at) wrong.push(`${a.w} alarm ${name}: ${when} instead of ${a.at} or none`);
      a.unsure = false;
    } else if (a.deleted ? when !== null : when !== a.at) {
      wrong.push(`${a.w} alarm ${name}: ${when} instead of ${a.deleted ? 'none (deleted)' : a.at}`);
    }
  }
  t.deepEqual(wrong.slice(0, 20), [], `${where}: ${wrong.length} of ${memo.alarms.size} acknowledged alarm changes wrong`);
}

/** How long a round's alarms may take to fire once the directory is open again. */
const FIRE_WITHIN = 15_000;

/**
 * Alarms due soon: after the cut and a restart every acknowledged alarm fires
 * (each round waits for all of them), and none fired before its time.
 */
async function fireCheck(t, host, acks, memo, where) {
  const want = new Map();
  for (const [kind, w, name, at] of acks) {
    if (kind !== 'a') continue;
    if (!want.has(w)) want.set(w, []);
    want.get(w).push([name, Number(at)]);
  }
  const alarms = await host.startAlarms({ classes: [Alarmed] });
  try {
    const deadline = Date.now() + FIRE_WITHIN;
    let pending;
    for (;;) {
      pending = [];
      const early = [];
      for (const [w, list] of want) {
        const seen = await must(t, where, `${w}.seen()`, host.get(Alarmed, w).seen(list.map(([name]) => name)));
        if (seen === undefined) return;
        list.forEach(([name, at], i) => {
          const [fired] = seen[i];
          if (fired === null) pending.push(`${w} ${name} (due ${at})`);
          else if (fired < at) early.push(`${w} ${name}: fired at ${fired}, due ${at}`);
        });
      }
      t.deepEqual(early.slice(0, 10), [], `${where}: alarms fired before their time`);
      if (pending.length === 0 || Date.now() > deadline) break;
      await sleep(100);
    }
    const total = [...want.values()].reduce((n, l) => n + l.length, 0);
    t.deepEqual(pending.slice(0, 20), [], `${where}: ${pending.length} of ${total} acknowledged alarms had not fired ${FIRE_WITHIN} ms after the restart`);
  } finally {
    await alarms.stop();
  }
}

/** Workers whose alarm was acknowledged: listed, with the alarm. */
async function listedCheck(t, host, acks, memo, where) {
  memo.made ??= new Map();
  for (const [kind, w, , at] of acks) if (kind === 'a') memo.made.set(w, Number(at));
  const listed = await idsOf(host, Clock);
  const wrong = [];
  for (const [w, at] of memo.made) {
    const when = await must(t, where, `${w}.when(x)`, host.get(Clock, w).when('x'));
    if (when !== at || !listed.has(w)) wrong.push(`${w}: alarm ${when} (set ${at})${listed.has(w) ? '' : ', not listed'}`);
  }
  t.deepEqual(wrong.slice(0, 20), [], `${where}: ${wrong.length} of ${memo.made.size} acknowledged workers wrong`);
}

/** Transactions of a ledger, whole, and its declared field's index complete. */
async function ledgerCheck(t, host, acks, memo, where, round) {
  const Ledger = ledgerClass(ledgerField(round));
  memo.last ??= new Map();
  for (const [kind, w, seq] of acks) if (kind === 'b') memo.last.set(w, Math.max(memo.last.get(w) ?? 0, Number(seq)));
  for (const [w, acked] of memo.last) {
    const r = await must(t, where, `${w}.read()`, host.get(Ledger, w).read());
    if (r === undefined) continue;
    t.true(r.last >= acked && r.last <= acked + 1, `${where}: ${w}: transaction ${acked} acknowledged, ${r.last} on disk`);
    let total = 0;
    for (let s = 1; s <= r.last; s++) total += docsOf(s);
    t.is(r.docs, total, `${where}: ${w}: the 'docs' key agrees with its transactions`);
    t.is(r.count, total, `${where}: ${w}: every document of every transaction up to ${r.last}, none after`);
    t.is(r.indexed, total, `${where}: ${w}: the field declared this round (${ledgerField(round)}) finds every document`);
    memo.last.set(w, r.last);
  }
}

const SCENARIOS = [
  ['alarms set and deleted: each as acknowledged, the index early, never late', 'churn', churnCheck],
  ['alarms due soon: every acknowledged one fires after the restart, none early', 'fire', fireCheck],
  ['a deleted catalog rebuilt by open(): every acknowledged worker listed with its alarm', 'rebuild', listedCheck],
  [
    'a changed declaration backfilled on the first wake: transactions whole, the new field finds every document',
    'ledger',
    ledgerCheck,
    // The backfill runs in the first tens of milliseconds of a round.
    { delay: { min: 0, spread: 80 } },
  ],
];

SCENARIOS.forEach(([title, scenario, check, options], i) => {
  for (const [j, mode] of ['drop', 'chaos'].entries()) {
    const seed = BASE_SEED + 20_000 + 1000 * i + 100 * j;
    powerTest(`power cut (${mode}): ${title}`, async (t) => {
      const memo = await engineCuts(t, { scenario, mode, seed, check, ...options });
      t.log(`catalog checked directly: ${JSON.stringify(memo.catalog)}`);
    });
  }
});

// The repair tool rebuilds a damaged catalog (the child damages its header
// on purpose, again and again). A cut anywhere in it leaves a directory that
// opens with every worker listed and indexed, or, while the damage is still
// in place, one that repair() fixes: it is a tool a person runs after trouble
// and must be safe to run again.
for (const [j, mode] of ['drop', 'chaos'].entries()) {
  powerTest(`power cut (${mode}): the repair tool, cut anywhere, leaves every acknowledged worker listed with its alarm`, async (t) => {
    let repaired = 0;
    await engineCuts(t, {
      scenario: 'repair',
      mode,
      seed: BASE_SEED + 29_000 + 100 * j,
      catalog: false,
      keep: (rel) => rel !== '_registry.db',
      check: listedCheck,
      before: async ({ dir, where }) => {
        try {
          const host = await open({ dir });
          await host.close();
        } catch (err) {
          if (err.code !== 'ERR_DURABLE_CORRUPT') throw err;
          await repair(dir);
          repaired++;
        }
        t.deepEqual(integrity(dir), [], `${where}: integrity_check, the catalog included`);
        t.deepEqual(catalogCheck(dir).problems.slice(0, 20), [], `${where}: the catalog against the worker files`);
      },
    });
    t.log(`${repaired} rounds left the damage in place, and repair() fixed it`);
  });
}
