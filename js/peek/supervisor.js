'use strict';
// The resident supervisor (`durable-workers peek serve <dir>`): owns the
// adapter's directory, keeps each manifest's schedule, and holds the channel.
// Commands (cmd:execute:<command>) and wakes (a topic a manifest subscribes
// to) become runs through adapter.dispatch, so they queue behind a running
// schedule of the same worker. A command for a worker installed after start
// is found by scanning the directory again: no restart to install.
const fs = require('node:fs');
const path = require('node:path');
const { loadManifest } = require('./manifest');
const { matches } = require('./topics');
const { codes, toPlainError } = require('./errors');
const { REPLY_PREFIX } = require('./api');
const { HOLD_REPLY } = require('./host');

const COMMAND_PREFIX = 'cmd:execute:';
/** How long after its command's run a reply topic outside cmd: still wakes no worker (its result may still be on its way). */
const REPLY_HOLD_MS = 60_000;

/**
 * Why a command's resultTopic is refused, or null. A reply goes to a cmd:
 * reply topic (cmd:result:<id> for a commander on the channel, cmd:reply:<worker>:<id>
 * for a worker's command) or to a topic outside cmd:. Never to another
 * command topic: a result, or a worker answering, would run that command.
 */
function resultTopicProblem(topic) {
  if (typeof topic !== 'string' || topic.length === 0) return 'must be a non-empty string';
  if (topic.startsWith('cmd:') && !topic.startsWith('cmd:result:') && !topic.startsWith(REPLY_PREFIX)) return 'is a cmd: topic other than cmd:result:<id> or cmd:reply:<worker>:<id>';
  return null;
}

/**
 * Finds manifests in `dir`: every `<dir>/<name>/manifest.json` and `<dir>/*.json`.
 * @returns {{ manifests: import('../../peek').Manifest[], problems: { file: string, error: Error }[] }}
 */
function scanManifests(dir) {
  const manifests = [];
  const problems = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    let file = null;
    const isDir = entry.isDirectory() || (entry.isSymbolicLink() && fs.statSync(path.join(dir, entry.name), { throwIfNoEntry: false })?.isDirectory());
    if (isDir && !entry.name.startsWith('.')) {
      const f = path.join(dir, entry.name, 'manifest.json');
      if (fs.existsSync(f)) file = f;
    } else if (entry.isFile() && entry.name.endsWith('.json') && entry.name !== 'package.json') {
      file = path.join(dir, entry.name);
    }
    if (file === null) continue;
    try {
      manifests.push(loadManifest(file));
    } catch (error) {
      problems.push({ file, error });
    }
  }
  return { manifests, problems };
}

/**
 * @param {{ dir: string, adapter: import('../../peek').NodeAdapter, host: import('../../peek').WorkerHost, log?: (r: object) => void }} options
 */
function createSupervisor({ dir, adapter, host, log = () => {} }) {
  let manifests = new Map();
  let channel = null;

  const rescan = () => {
    const { manifests: found, problems } = scanManifests(dir);
    for (const p of problems) log({ level: 'error', worker: path.basename(p.file), args: ['manifest refused:', p.error.message] });
    const names = new Map();
    for (const m of found) {
      if (names.has(m.name)) log({ level: 'error', worker: m.name, args: [`two manifests use this name; ${m.manifestPath} is ignored`] });
      else names.set(m.name, m);
    }
    manifests = names;
    return found;
  };
  const byCommand = (command) => [...manifests.values()].find((m) => m.commands.includes(command));
  /**
   * Reply topics outside cmd: of the commands heard (topic → until when):
   * a message there wakes no worker, even one subscribed to it, so a result
   * reaches its commander and not whoever listens. (cmd: topics wake no
   * worker at all.)
   */
  const replies = new Map();
  const holdReply = (topic, until) => {
    host[HOLD_REPLY]?.(topic, until);
    if (topic.startsWith('cmd:')) return;
    replies.set(topic, until);
    // A full pass: a held topic (Infinity while its command runs) may sit before expired ones.
    const now = Date.now();
    for (const [t, u] of replies) if (u < now) replies.delete(t);
  };
  const isHeldReply = (topic) => {
    const until = replies.get(topic);
    if (until === undefined) return false;
    if (until >= Date.now()) return true;
    replies.delete(topic);
    return false;
  };

  /** Runs the worker answering `command`, or tells resultTopic why not. */
  async function answerCommand(topic, command, message) {
    let m = byCommand(command);
    if (m === undefined) {
      rescan();
      m = byCommand(command);
    }
    if (m === undefined) {
      log({ level: 'warn', worker: '(supervisor)', args: [`no worker answers ${topic}`] });
      if (typeof message?.resultTopic === 'string') await channel.publish(message.resultTopic, { ok: false, error: { code: 'ERR_PEEK_MANIFEST', message: `no worker answers ${topic}` } });
      return;
    }
    const trigger = { kind: 'command', name: command, params: message?.params };
    if (typeof message?.resultTopic === 'string' && message.resultTopic.length > 0) trigger.resultTopic = message.resultTopic;
    try {
      await adapter.dispatch(m.manifestPath, trigger);
    } catch (err) {
      // The run never happened (the dispatch itself failed): the caller
      // waiting on resultTopic hears that rather than nothing.
      if (trigger.resultTopic !== undefined) {
        await channel.publish(trigger.resultTopic, { ok: false, error: toPlainError(err), ms: 0 }).catch(() => {});
      }
      throw err;
    }
  }

  async function onMessage({ topic, message }) {
    try {
      if (topic.startsWith(REPLY_PREFIX)) {
        // A worker's command answered: the reply wakes that worker alone
        // (cmd:reply:<worker>:<id>), and only one granted to send commands.
        const name = topic.slice(REPLY_PREFIX.length).split(':')[0];
        const m = manifests.get(name);
        if (m?.capabilities.pubsub?.commands?.length > 0) await adapter.dispatch(m.manifestPath, { kind: 'wake', topic, message });
        return;
      }
      if (topic.startsWith(COMMAND_PREFIX)) {
        const command = topic.slice(COMMAND_PREFIX.length);
        if (message?.resultTopic !== undefined) {
          const problem = resultTopicProblem(message.resultTopic);
          if (problem !== null) {
            log({ level: 'warn', worker: '(supervisor)', args: [`${topic} refused: its resultTopic ${JSON.stringify(message.resultTopic)} ${problem} (${codes.PUBSUB_DENIED})`] });
            return;
          }
        }
        // Held only for a command some worker answers: anyone on the channel
        // could otherwise silence an ordinary topic by naming it as a reply.
        const reply = typeof message?.resultTopic === 'string' && byCommand(command) !== undefined ? message.resultTopic : undefined;
        if (reply !== undefined) holdReply(reply, Infinity);
        try {
          await answerCommand(topic, command, message);
        } finally {
          if (reply !== undefined) holdReply(reply, Date.now() + REPLY_HOLD_MS);
        }
        return;
      }
      if (topic.startsWith('cmd:')) return;
      if (isHeldReply(topic)) {
        log({ level: 'info', worker: '(supervisor)', args: [`${topic} is a command's reply topic: no worker is woken by it`] });
        return;
      }
      for (const m of manifests.values()) {
        if (matches(m.capabilities.pubsub?.subscribe ?? [], topic)) await adapter.dispatch(m.manifestPath, { kind: 'wake', topic, message });
      }
    } catch (err) {
      log({ level: 'error', worker: '(supervisor)', args: [`handling ${topic} failed:`, err.message] });
    }
  }

  return {
    /** The manifests currently known, by name. */
    get manifests() {
      return manifests;
    },

    /** Takes the directory, brings schedules in line with the manifests, opens the channel. */
    async start() {
      rescan();
      // Schedules are brought in line before alarms fire: an ensureSchedule
      // queued behind a catch-up run would hold start() for the whole run.
      const stored = await adapter.schedules();
      for (const s of stored) {
        const m = manifests.get(s.name);
        if (m === undefined || m.schedule === null) {
          await adapter.cancelSchedule(s.name);
          log({ level: 'info', worker: s.name, args: ['schedule removed: its manifest no longer has one'] });
        }
      }
      for (const m of manifests.values()) {
        if (m.schedule !== null) {
          const r = await adapter.ensureSchedule(m.manifestPath, m.schedule);
          log({ level: 'info', worker: m.name, args: [`schedule ${m.schedule}; next run ${new Date(r.next).toISOString()}`] });
        }
      }
      await adapter.start();
      const topics = [`${COMMAND_PREFIX}*`, `${REPLY_PREFIX}*`, ...new Set([...manifests.values()].flatMap((m) => m.capabilities.pubsub?.subscribe ?? []))];
      channel = await adapter.openChannel({ topics }, (m) => onMessage(m));
    },

    /** Stops the channel and the alarms first (nothing new starts), then the runs in flight, then the adapter. */
    async close() {
      await channel?.close();
      // Alarms stop first (no new run starts); a handler still running waits
      // on its run, which host.close() stops (ERR_PEEK_CLOSED), so both end.
      const stopping = adapter.stop();
      await host.close();
      await stopping;
      await adapter.close();
    },
  };
}

module.exports = { createSupervisor, scanManifests };
