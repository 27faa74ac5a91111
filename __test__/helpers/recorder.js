'use strict';
// A log of what test workers' hooks did, in order, that a test can read or
// wait on: `record.log` holds every event, and `record` emits 'event' for each.
const { EventEmitter } = require('node:events');

/** @returns {{ record: EventEmitter & { log: object[] }, note: (ev: string, rec: object) => void }} */
function makeRecorder() {
  const record = new EventEmitter();
  record.log = [];
  const note = (ev, rec) => {
    const e = { ev, ...rec };
    record.log.push(e);
    record.emit('event', e);
  };
  return { record, note };
}

module.exports = { makeRecorder };
