'use strict';
// docs/api.md against the types and the command line, both ways: every name
// index.d.ts and peek.d.ts export is mentioned in its module's section; every
// member of the main interfaces has its own heading; and every heading written
// in backticks names something that exists. The types are read with the
// TypeScript parser, not patterns, so an overload or a comment cannot fool it.
const test = require('ava');
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const ROOT = path.join(__dirname, '..', '..');
const DOC = fs.readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8');

/** Interfaces and classes whose every member must have a `####` heading. */
const MEMBERS_REQUIRED = ['Host', 'DurableState', 'Collection', 'WorkerContext', 'DurableWorker', 'DurableWebSocket'];

/**
 * The exported names of a .d.ts, and the members of each exported interface
 * or class (constructors and index signatures left out).
 * @returns {{ exports: Set<string>, members: Map<string, Set<string>> }}
 */
function readTypes(file) {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const exports = new Set();
  const members = new Map();
  const exported = (node) => (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export) !== 0;
  for (const node of source.statements) {
    if (ts.isVariableStatement(node) && exported(node)) {
      for (const d of node.declarationList.declarations) exports.add(d.name.getText(source));
      continue;
    }
    if (!(ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node) || ts.isTypeAliasDeclaration(node) || ts.isFunctionDeclaration(node))) continue;
    if (!exported(node) || node.name === undefined) continue;
    const name = node.name.text;
    exports.add(name);
    if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) {
      const set = members.get(name) ?? new Set();
      for (const m of node.members) if (m.name !== undefined) set.add(m.name.getText(source));
      members.set(name, set);
    }
  }
  return { exports, members };
}

/**
 * The doc as sections: `## ` titles → their text and headings. A heading
 * "names" something when it has a code span; its subject is the first
 * identifier in it after a keyword (`class`, `static`) and a receiver
 * (`host.`, `this.`), e.g. "#### `host.get(Class, id)`" → "get".
 */
function sections(markdown) {
  const out = new Map();
  let current = { title: '', text: '', headings: [] };
  out.set('', current);
  for (const line of markdown.split('\n')) {
    const h = /^(#{2,4}) (.*)$/.exec(line);
    if (h && h[1] === '##') {
      current = { title: h[2].trim(), text: '', headings: [] };
      out.set(current.title, current);
      continue;
    }
    current.text += `${line}\n`;
    if (h) {
      const code = /`([^`]+)`/.exec(h[2]);
      current.headings.push({ level: h[1].length, line, code: code ? code[1] : null });
    }
  }
  return out;
}

/** What a backticked heading is about: "class DurableWorker" → DurableWorker, "state.get(key)" → get. */
function subject(code) {
  const m = /^(?:class |static |interface |type |function |const )?(?:[A-Za-z_$][\w$]*\.)?([A-Za-z_$][\w$]*)/.exec(code);
  return m ? m[1] : null;
}

/** True if `name` appears as a word inside some code span (or backticked heading) of `text`. */
function mentioned(text, name) {
  const word = new RegExp(`(^|[^\\w$])${name.replace(/\$/g, '\\$')}([^\\w$]|$)`);
  for (const m of text.matchAll(/`([^`\n]+)`/g)) if (word.test(m[1])) return true;
  return false;
}

const MODULES = [
  { section: 'durable-workers', file: 'index.d.ts' },
  { section: 'durable-workers/peek', file: 'peek.d.ts' },
];
const doc = sections(DOC);

for (const { section, file } of MODULES) {
  const types = readTypes(file);
  const body = doc.get(section);

  test(`every export of ${file} is mentioned in the "${section}" section of docs/api.md`, (t) => {
    t.truthy(body, `docs/api.md has a "## ${section}" section`);
    const missing = [...types.exports].filter((name) => !mentioned(body.text, name));
    t.deepEqual(missing, [], `not mentioned in a code span under "## ${section}": ${missing.join(', ')}`);
  });

  test(`every backticked heading in the "${section}" section names an export of ${file}, or a member of the one above it`, (t) => {
    const wrong = [];
    let owner = null;
    for (const h of body.headings) {
      if (h.code === null) continue;
      const name = subject(h.code);
      if (h.level === 3) {
        owner = name;
        if (!types.exports.has(name)) wrong.push(`${h.line}: ${file} exports no ${name}`);
      } else if (h.level === 4) {
        const members = types.members.get(owner);
        if (members === undefined || !members.has(name)) wrong.push(`${h.line}: ${owner} has no member ${name}`);
      }
    }
    t.deepEqual(wrong, []);
  });
}

test('every member of Host, DurableState, Collection, WorkerContext, DurableWorker and DurableWebSocket has its own heading under its type', (t) => {
  const types = readTypes('index.d.ts');
  const body = doc.get('durable-workers');
  const documented = new Map();
  let owner = null;
  for (const h of body.headings) {
    if (h.code === null) continue;
    if (h.level === 3) owner = subject(h.code);
    else if (h.level === 4) documented.set(owner, (documented.get(owner) ?? new Set()).add(subject(h.code)));
  }
  const missing = [];
  for (const name of MEMBERS_REQUIRED) {
    t.true(types.members.has(name), `index.d.ts still declares ${name}`);
    for (const m of types.members.get(name) ?? []) if (!documented.get(name)?.has(m)) missing.push(`${name}.${m}`);
  }
  t.deepEqual(missing, [], `no "#### \`…${'${member}'}…\`" heading under "### \`${'${type}'}\`" for: ${missing.join(', ')}`);
});

test('every field of the option and counter types is mentioned in its section (a new counter or option gets a row)', (t) => {
  const missing = [];
  for (const [section, file, names] of [
    ['durable-workers', 'index.d.ts', ['OpenOptions', 'ShardOptions', 'HostStats']],
    ['durable-workers/peek', 'peek.d.ts', ['NodeAdapterOptions']],
  ]) {
    const { members } = readTypes(file);
    for (const name of names) for (const field of members.get(name) ?? ['(the type itself is gone)']) if (!mentioned(doc.get(section).text, field)) missing.push(`${name}.${field}`);
  }
  t.deepEqual(missing, []);
});

test('every command of the CLI has a heading under "Command line", and every such heading is a command', (t) => {
  const { COMMANDS } = require('../../js/cli');
  const body = doc.get('Command line');
  t.truthy(body, 'docs/api.md has a "## Command line" section');
  const headed = new Set(body.headings.filter((h) => h.code !== null).map((h) => /^durable-workers ([\w-]+)/.exec(h.code)?.[1]));
  const commands = new Set(COMMANDS.map((c) => c.name));
  t.deepEqual(
    [...commands].filter((c) => !headed.has(c)),
    [],
    'registered in js/cli/index.js, not documented in docs/api.md',
  );
  t.deepEqual(
    [...headed].filter((c) => !commands.has(c)),
    [],
    'documented in docs/api.md, not a command',
  );
});

test('the checker itself: a made-up export, member or command is caught', (t) => {
  // Guards against a parser that finds nothing and so passes everything.
  const types = readTypes('index.d.ts');
  t.true(types.exports.has('open') && types.exports.has('DurableError') && types.exports.has('codes'));
  t.true(types.members.get('Host').has('startAlarms'));
  t.false(types.exports.has('Hook'), 'a type that is not exported is not an export');
  t.false(mentioned(DOC, 'notAnExportAtAll'));
  t.is(subject('host.get(Class, id)'), 'get');
  t.is(subject('class DurableWorker'), 'DurableWorker');
  t.is(subject('static workerName'), 'workerName');
  t.is(subject('this.id'), 'id');
});
