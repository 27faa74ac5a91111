'use strict';
// Topic matching shared by both channels: a subscription is a topic, or a
// prefix ending in '*' ('cmd:execute:*' hears every command).

/** @param {Iterable<string>} subscriptions @param {string} topic */
function matches(subscriptions, topic) {
  for (const s of subscriptions) {
    if (s === topic || (s.endsWith('*') && topic.startsWith(s.slice(0, -1)))) return true;
  }
  return false;
}

module.exports = { matches };
