'use strict';
// A class's directory carries ext2/3/4's T attribute, so the 256 directories
// made in it are placed as top-level ones are: spread over the file system's
// block groups. Without it they land beside the class, where a new worker's
// inode is sought past every inode deleted there in the last minute (on ext4
// without a journal). Skipped, saying why, where the temp directory's file
// system has no such attributes.
const test = require('ava');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { open, DurableWorker } = require('durable-workers');
const { tmpDir } = require('../helpers/tmp');

/** `lsattr -d dir`'s flags, or null with why. */
function attributes(dir) {
  const r = spawnSync('lsattr', ['-d', dir], { encoding: 'utf8' });
  if (r.error) return { flags: null, why: `lsattr: ${r.error.message}` };
  if (r.status !== 0) return { flags: null, why: (r.stderr || `lsattr exited ${r.status}`).trim() };
  return { flags: r.stdout.trim().split(/\s+/)[0], why: null };
}

// Decided when the file loads, so a skip is visible in the report.
const probe = process.platform === 'linux' ? attributes(os.tmpdir()) : { flags: null, why: 'not Linux' };
const linuxAttrs = probe.flags === null ? test.skip : test;
if (probe.flags === null) console.log(`files/spread: skipped: ${os.tmpdir()} has no ext2/3/4 attributes (${probe.why})`);

class Note extends DurableWorker {
  write(n) {
    this.state.set('n', n);
  }
}

linuxAttrs('a class directory is marked T, and its 256 directories are spread over the block groups', async (t) => {
  const dir = tmpDir(t);
  const host = await open({ dir, control: false });
  // The first worker makes the class's directory and one of its 256; the
  // first whose directory is missing makes the rest.
  for (let i = 0; i < 8; i++) await host.get(Note, `n${i}`).write(i);
  await host.close();
  const classDir = path.join(dir, 'Note');
  t.regex(attributes(classDir).flags ?? '', /T/, `lsattr -d ${classDir}`);
  const fans = fs.readdirSync(classDir);
  t.is(fans.length, 256);
  // Inode numbers by group (8,192 a group, ext4's usual; any size shows
  // the spread): beside their class, they share one or two.
  const groups = new Set(fans.map((f) => Math.floor(fs.statSync(path.join(classDir, f)).ino / 8192)));
  t.log(`${groups.size} groups hold the 256 directories`);
  t.true(groups.size >= 16, `${groups.size} groups hold the 256 directories`);
});
