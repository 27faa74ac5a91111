#!/usr/bin/env node
'use strict';
// Regenerates vendor/libsqlite3-sys/parse-udl.c: SQLite's parser generated
// by Lemon with -DSQLITE_UDL_CAPABLE_PARSER (UPDATE/DELETE … LIMIT), laid out
// as the amalgamation lays out parse.c. First it generates the parser
// without the option and checks that it is exactly the bundled
// amalgamation's: then parse.y here is that SQLite's grammar, and the
// capable parser is the one its own build would make.
//
//   node scripts/sqlite-parser.js <a SQLite source tree: tool/lemon.c, tool/lempar.c>
//
// Needs a C compiler (cc). Debian's sqlite3 source package is such a tree.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const VENDOR = path.join(__dirname, '..', 'vendor', 'libsqlite3-sys');
const BEGIN = '/************** Begin file parse.c *******************************************/\n';
const END = '/************** End of parse.c ***********************************************/\n';

/** What SQLite's amalgamation script does to parse.c as it inlines it. */
function amalgamated(text) {
  return text
    .split('\n')
    .filter((line) => !line.startsWith('#line'))
    .map((line) => {
      if (/^#include\s+[<"]/.test(line)) line = `/* ${line.trimEnd()} */`;
      if (/^(void|int|void \*)\s*\*?sqlite3Parser\w*\(/.test(line)) line = `SQLITE_PRIVATE ${line}`;
      return line.trimEnd();
    })
    .join('\n');
}

/** Runs Lemon on parse.y in a fresh directory; answers parse.c as the amalgamation has it. */
function generate(lemon, source, flags) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-lemon-'));
  try {
    fs.copyFileSync(path.join(VENDOR, 'parse.y'), path.join(dir, 'parse.y'));
    fs.copyFileSync(path.join(source, 'tool', 'lempar.c'), path.join(dir, 'lempar.c'));
    execFileSync(lemon, [...flags, '-S', 'parse.y'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    return amalgamated(fs.readFileSync(path.join(dir, 'parse.c'), 'utf8'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function main() {
  const source = process.argv[2];
  if (!source || !fs.existsSync(path.join(source, 'tool', 'lemon.c'))) {
    console.error('usage: node scripts/sqlite-parser.js <SQLite source tree with tool/lemon.c and tool/lempar.c>');
    process.exit(2);
  }
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'dw-lemon-bin-'));
  try {
    const lemon = path.join(bin, 'lemon');
    execFileSync('cc', ['-O1', '-o', lemon, path.join(source, 'tool', 'lemon.c')], { stdio: 'inherit' });
    const amalgamation = fs.readFileSync(path.join(VENDOR, 'sqlite3', 'sqlite3.c'), 'utf8');
    const bundled = amalgamation.slice(amalgamation.indexOf(BEGIN) + BEGIN.length, amalgamation.indexOf(END));
    if (generate(lemon, source, []).trimEnd() !== bundled.trimEnd()) {
      console.error("the parser generated from vendor/libsqlite3-sys/parse.y is not the bundled amalgamation's: update parse.y to this SQLite's grammar first");
      process.exit(1);
    }
    fs.writeFileSync(path.join(VENDOR, 'parse-udl.c'), generate(lemon, source, ['-DSQLITE_UDL_CAPABLE_PARSER']));
    console.log('parse.y gives the bundled parser exactly; vendor/libsqlite3-sys/parse-udl.c written');
  } finally {
    fs.rmSync(bin, { recursive: true, force: true });
  }
}

main();
