'use strict';
// Why a run happens. Checked before a run starts, because a worker may branch
// on it and a malformed trigger would reach feature code as a surprise.

/**
 * @param {unknown} t
 * @returns {import('../../peek').Trigger} a frozen copy
 */
function checkTrigger(t) {
  const bad = (why) => new TypeError(`trigger: ${why}; one of { kind: 'schedule', scheduledFor }, { kind: 'wake', topic, message }, { kind: 'command', name, params, resultTopic? }`);
  if (t === null || typeof t !== 'object') throw bad('must be an object');
  switch (t.kind) {
    case 'schedule':
      if (!Number.isFinite(t.scheduledFor)) throw bad('scheduledFor must be epoch ms');
      return Object.freeze({ kind: 'schedule', scheduledFor: t.scheduledFor });
    case 'wake':
      if (typeof t.topic !== 'string' || t.topic.length === 0) throw bad('topic must be a non-empty string');
      return Object.freeze({ kind: 'wake', topic: t.topic, message: t.message });
    case 'command':
      if (typeof t.name !== 'string' || t.name.length === 0) throw bad('name must be a non-empty string');
      if (t.resultTopic !== undefined && (typeof t.resultTopic !== 'string' || t.resultTopic.length === 0)) throw bad('resultTopic must be a non-empty string');
      return Object.freeze({ kind: 'command', name: t.name, params: t.params, ...(t.resultTopic !== undefined ? { resultTopic: t.resultTopic } : {}) });
    default:
      throw bad(`unknown kind ${JSON.stringify(t.kind)}`);
  }
}

module.exports = { checkTrigger };
