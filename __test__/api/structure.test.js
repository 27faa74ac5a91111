'use strict';
// The layout rules docs/internals.md states, kept: no JavaScript file over
// 400 lines and no Rust file over 600 outside its tests, unless named in
// internals.md's exceptions; and every js/ file sits in a layer folder.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const files = (dir, ext) =>
  fs
    .readdirSync(path.join(ROOT, dir), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f));
const exceptions = () => {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'internals.md'), 'utf8');
  const section = text.split('\n## Size exceptions\n')[1]?.split('\n## ')[0] ?? '';
  return new Set([...section.matchAll(/^- `([^`]+)`/gm)].map((m) => m[1]));
};

test('no JavaScript file in js/ is over 400 lines, and no Rust file over 600 outside its tests, unless internals.md names it', (t) => {
  const allowed = exceptions();
  const over = [];
  for (const f of files('js', '.js').concat(files('js', '.mjs'))) {
    const n = fs.readFileSync(path.join(ROOT, f), 'utf8').split('\n').length - 1;
    if (n > 400 && !allowed.has(f)) over.push(`${f}: ${n} lines`);
  }
  for (const f of files('src', '.rs')) {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    const body = text.split('\n#[cfg(test)]\n')[0];
    const n = body.split('\n').length - 1;
    if (n > 600 && !allowed.has(f)) over.push(`${f}: ${n} lines outside its tests`);
  }
  t.deepEqual(over, []);
});

test('js/ holds only the package entry points at its top; everything else is in a layer folder', (t) => {
  const top = fs
    .readdirSync(path.join(ROOT, 'js'), { withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => e.name);
  t.deepEqual(top.sort(), ['index.js', 'index.mjs']);
});

test('every code the native core can send is one of the package’s codes (errors.js), so none reaches a user as another', (t) => {
  const { codes } = require('../../js/api/errors');
  const known = new Set(Object.values(codes));
  const sent = new Set();
  for (const f of files('src', '.rs')) for (const m of fs.readFileSync(path.join(ROOT, f), 'utf8').matchAll(/"(ERR_[A-Z_]+)"/g)) sent.add(m[1]);
  t.true(sent.size >= 6, [...sent].join(' '));
  t.deepEqual(
    [...sent].filter((c) => !known.has(c)),
    [],
  );
});
