'use strict';
// The storage of a SQLite-backed Durable Object as the pinned workerd
// (1.20261117.1, compatibility date 2026-11-01) runs it: the reference the
// Node host must match (../helpers/do-probe-cases.js).
const test = require('ava');
const { startProbeOnWorkerd } = require('../helpers/do-probe');
const { probeCases } = require('../helpers/do-probe-cases');

probeCases(test, () => startProbeOnWorkerd());
