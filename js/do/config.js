'use strict';
// The Wrangler config of a Durable Object app, read as `wrangler dev` reads
// it, reduced to what `durable-workers serve` can run: the entry module, the
// compatibility settings, Durable Object namespaces and plain vars.
//
// Guarantee: whatever serve cannot provide is refused at startup, by key and
// binding name, never ignored in a way the app would notice later. A key that
// changes nothing locally (routes, observability, account_id, …) is ignored;
// an unknown key that holds bindings is refused; any other unknown key is
// ignored and reported in `warnings`.
//
// Sources, in workers-sdk (cloudflare/workers-sdk):
// * which file: packages/workers-utils/src/config/config-helpers.ts
//   `findWranglerConfig` looks for wrangler.json, then wrangler.jsonc, then
//   wrangler.toml, each searched from the directory upwards; an explicit path
//   wins. `.json` and `.jsonc` are both JSONC (parse.ts `parseJSONC`), TOML is
//   smol-toml, as here.
// * `main` is relative to the config file's directory.
// * sql or not: packages/wrangler/src/dev/class-names-sqlite.ts replays the
//   migrations in order (new_sqlite_classes → SQLite, new_classes → KV
//   storage), then the live entries of the declarative `exports` map.
// * binding keys: packages/workers-utils/src/config/environment.ts
//   (`EnvironmentNonInheritable`) and config.ts.
// * `.dev.vars`: packages/wrangler/src/dev/dev-vars.ts. Wrangler falls back
//   to `.env` files when there is no `.dev.vars`; serve does not (yet).
const fs = require('node:fs');
const path = require('node:path');
const TOML = require('smol-toml');
const { DurableError, codes } = require('../api/errors');
const { parseJsonc } = require('./jsonc');
const { parseDotenv } = require('./dotenv');

/** Wrangler's file names, in its order of precedence. */
const CONFIG_NAMES = ['wrangler.json', 'wrangler.jsonc', 'wrangler.toml'];

/** Top-level keys loadConfig reads itself. */
const READ = new Set(['name', 'main', 'compatibility_date', 'compatibility_flags', 'vars', 'durable_objects', 'migrations', 'exports', 'secrets', 'env']);

/** Keys that change nothing when the Worker runs here: deployment, build, tooling, limits. */
const HARMLESS = new Set(
  [
    '$schema account_id workers_dev preview_urls routes route placement limits minify keep_names keep_vars',
    'observability dev build logpush upload_source_maps send_metrics dependencies_instrumentation',
    'compliance_region first_party_worker tsconfig jsx_factory jsx_fragment no_bundle find_additional_modules',
    'base_dir preserve_file_names triggers cloudchamber previews python_modules usage_model node_compat',
    'legacy_env zone_id addresses cache access pages_build_output_dir',
  ]
    .join(' ')
    .split(' '),
);

/** Keys that declare bindings of a kind serve does not provide. */
const BINDING_KEYS = new Set(
  [
    'kv_namespaces r2_buckets d1_databases services queues ai assets workflows hyperdrive vectorize',
    'analytics_engine_datasets browser dispatch_namespaces mtls_certificates send_email tail_consumers',
    'streaming_tail_consumers version_metadata images media stream containers secrets_store_secrets',
    'pipelines artifacts unsafe_hello_world flagship ratelimits worker_loaders vpc_services vpc_networks',
    'ai_search_namespaces ai_search agent_memory websearch connect unsafe logfwdr wasm_modules text_blobs',
    'data_blobs site legacy_assets kv-namespaces experimental_services',
  ]
    .join(' ')
    .split(' '),
);

/** Keys that change the code at build time; serve imports `main` as it is, unbundled. */
const BUILD_KEYS = { define: 'global replacements', alias: 'module aliases', rules: 'module rules for non-JavaScript imports' };

/**
 * Finds, reads and checks the Wrangler config.
 * @param {{ cwd?: string, config?: string }} [o] config: a path (relative to cwd); else it is searched from cwd upwards
 * @returns {{ file: string, name: string | null, main: string | null, compatibilityDate: string | null,
 *             compatibilityFlags: string[], vars: Record<string, unknown>,
 *             objects: { binding: string, className: string, sql: boolean }[], warnings: string[] }}
 * @throws {DurableError} ERR_DURABLE_CONFIG: no config, a syntax error, or everything serve cannot run, listed
 */
function loadConfig(o = {}) {
  const cwd = path.resolve(o.cwd ?? process.cwd());
  const file = o.config !== undefined ? path.resolve(cwd, o.config) : findConfig(cwd);
  const raw = parseFile(file);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) fail(file, ['the file must hold an object (a table)']);
  const problems = [];
  const warnings = [];
  const dir = path.dirname(file);

  for (const key of Object.keys(raw)) {
    const value = raw[key];
    if (READ.has(key) || HARMLESS.has(key)) continue;
    if (Object.hasOwn(BUILD_KEYS, key)) {
      problems.push(`"${key}" (${BUILD_KEYS[key]}) needs a bundler; serve imports "main" unbundled: remove it or build first`);
      continue;
    }
    const names = bindingNames(key, value);
    if (BINDING_KEYS.has(key)) {
      if (!isEmpty(value)) problems.push(`"${key}" ${describeNames(names)} is not supported: serve provides Durable Object namespaces and vars only`);
    } else if (names.length > 0) {
      problems.push(`unknown key "${key}" ${describeNames(names)} looks like a binding, which serve cannot provide`);
    } else {
      warnings.push(`unknown key "${key}" ignored`);
    }
  }
  if (raw.env !== undefined && !isEmpty(raw.env)) {
    const envs = typeof raw.env === 'object' ? Object.keys(raw.env) : [];
    problems.push(`environments ("env": ${envs.map((e) => `"${e}"`).join(', ')}) are not supported yet: serve runs the top-level configuration; move what you need to the top level`);
  }

  const name = optionalString(raw, 'name', problems);
  const mainPath = optionalString(raw, 'main', problems);
  const compatibilityDate = optionalString(raw, 'compatibility_date', problems);
  const compatibilityFlags = raw.compatibility_flags ?? [];
  if (!Array.isArray(compatibilityFlags) || !compatibilityFlags.every((f) => typeof f === 'string')) problems.push('"compatibility_flags" must be an array of strings');

  const sqlByClass = classStorage(raw, problems);
  const objects = [];
  if (raw.durable_objects !== undefined && (typeof raw.durable_objects !== 'object' || raw.durable_objects === null)) problems.push('"durable_objects" must be an object with "bindings"');
  const bindings = raw.durable_objects?.bindings ?? [];
  if (!Array.isArray(bindings)) problems.push('"durable_objects.bindings" must be an array');
  for (const b of Array.isArray(bindings) ? bindings : []) {
    if (typeof b?.name !== 'string' || typeof b?.class_name !== 'string') {
      problems.push(`"durable_objects.bindings" entry ${JSON.stringify(b)} needs a string "name" and "class_name"`);
      continue;
    }
    const what = `Durable Object binding "${b.name}" (class "${b.class_name}")`;
    // A script_name naming this Worker is the same namespace; another Worker's classes are not here.
    if (b.script_name !== undefined && b.script_name !== name) {
      problems.push(`${what} lives in another Worker (script_name "${b.script_name}"): serve runs one Worker`);
    } else if (b.environment !== undefined) {
      problems.push(`${what} names a service environment ("environment": "${b.environment}"), which serve does not support`);
    } else if (!sqlByClass.has(b.class_name)) {
      problems.push(`${what} is in no migration: add "${b.class_name}" to a migration's "new_sqlite_classes" (or "new_classes" for the KV storage backend)`);
    } else {
      objects.push({ binding: b.name, className: b.class_name, sql: sqlByClass.get(b.class_name) });
    }
  }

  const vars = readVars(raw, dir, problems);
  const seen = new Set(Object.keys(vars));
  for (const { binding } of objects) {
    if (seen.has(binding)) problems.push(`the name "${binding}" is bound twice (Durable Object bindings and vars share env)`);
    seen.add(binding);
  }
  if (problems.length > 0) fail(file, problems);
  return {
    file,
    name,
    main: mainPath === null ? null : path.resolve(dir, mainPath),
    compatibilityDate,
    compatibilityFlags,
    vars,
    objects,
    warnings,
  };
}

/** wrangler's search: each name in turn, from `cwd` up to the root. */
function findConfig(cwd) {
  for (const name of CONFIG_NAMES) {
    for (let dir = cwd; ; dir = path.dirname(dir)) {
      const p = path.join(dir, name);
      if (fs.statSync(p, { throwIfNoEntry: false })?.isFile()) return p;
      if (path.dirname(dir) === dir) break;
    }
  }
  throw new DurableError(codes.CONFIG, `no Wrangler config: none of ${CONFIG_NAMES.join(', ')} in ${cwd} or a directory above it (pass the path with --config)`);
}

function parseFile(file) {
  const format = /\.toml$/.test(file) ? 'toml' : /\.jsonc?$/.test(file) ? 'jsonc' : null;
  if (format === null) throw new DurableError(codes.CONFIG, `${file}: a Wrangler config must end in .json, .jsonc or .toml`);
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new DurableError(codes.CONFIG, `cannot read the Wrangler config ${file}: ${err.message}`, { cause: err });
  }
  if (format === 'jsonc') return parseJsonc(text, file);
  try {
    return TOML.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    if (!(err instanceof TOML.TomlError)) throw err;
    throw new DurableError(codes.CONFIG, `${file}:${err.line}:${err.column}: ${err.message.split('\n')[0]}`, { cause: err });
  }
}

/**
 * Which classes are SQLite-backed: the migrations replayed in order, then the
 * live `exports` entries (class-names-sqlite.ts). Migrations that rename,
 * delete or transfer a class are refused for now: serve would have to move
 * stored objects to follow them.
 * @returns {Map<string, boolean>}
 */
function classStorage(raw, problems) {
  const sql = new Map();
  const migrations = raw.migrations ?? [];
  if (!Array.isArray(migrations)) problems.push('"migrations" must be an array');
  for (const [i, m] of (Array.isArray(migrations) ? migrations : []).entries()) {
    const where = `migration ${i + 1}${typeof m?.tag === 'string' ? ` (tag "${m.tag}")` : ''}`;
    for (const kind of ['renamed_classes', 'deleted_classes', 'transferred_classes']) {
      if (m?.[kind] === undefined || isEmpty(m[kind])) continue;
      const classes = [].concat(m[kind]).map((c) => (typeof c === 'string' ? c : `${c?.from} → ${c?.to}`));
      problems.push(`${where}: "${kind}" (${classes.join(', ')}) is not supported yet`);
    }
    for (const [kind, isSql] of [
      ['new_classes', false],
      ['new_sqlite_classes', true],
    ]) {
      const classes = m?.[kind] ?? [];
      if (!Array.isArray(classes) || !classes.every((c) => typeof c === 'string')) {
        problems.push(`${where}: "${kind}" must be an array of class names`);
        continue;
      }
      for (const c of classes) {
        if (sql.has(c)) problems.push(`${where}: cannot apply ${kind} to existing class ${c}`);
        else sql.set(c, isSql);
      }
    }
  }
  const exportsMap = raw.exports ?? {};
  for (const [className, e] of Object.entries(typeof exportsMap === 'object' ? exportsMap : {})) {
    if (e?.type !== 'durable-object') continue;
    const state = e.state ?? 'created';
    if (state !== 'created') problems.push(`"exports.${className}": state "${state}" is not supported yet`);
    else if (e.storage !== 'sqlite' && e.storage !== 'legacy-kv') problems.push(`"exports.${className}.storage" must be "sqlite" or "legacy-kv"`);
    else if (sql.has(className)) problems.push(`class "${className}" is declared both in "migrations" and in "exports"; keep one`);
    else sql.set(className, e.storage === 'sqlite');
  }
  return sql;
}

/**
 * `vars`, then `.dev.vars` beside the config over them. With
 * `secrets.required`, only the keys that are vars or required secrets are
 * taken from `.dev.vars`, as wrangler does.
 */
function readVars(raw, dir, problems) {
  const given = raw.vars ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    problems.push('"vars" must be an object (a table)');
    return {};
  }
  // A JSON copy: plain objects instead of TOML's null-prototype tables, dates as strings.
  const vars = JSON.parse(JSON.stringify(given));
  let text;
  try {
    text = fs.readFileSync(path.join(dir, '.dev.vars'), 'utf8');
  } catch (err) {
    if (err.code === 'ENOENT') return vars;
    problems.push(`cannot read ${path.join(dir, '.dev.vars')}: ${err.message}`);
    return vars;
  }
  const required = raw.secrets?.required;
  for (const [k, v] of Object.entries(parseDotenv(text))) {
    if (!Array.isArray(required) || Object.hasOwn(vars, k) || required.includes(k)) vars[k] = v;
  }
  return vars;
}

/** The names of the bindings a key declares, whatever its shape; empty when it declares none. */
function bindingNames(key, value) {
  if (value === null || typeof value !== 'object') return [];
  if (key === 'site' || key === 'legacy_assets') return ['__STATIC_CONTENT'];
  if (key === 'wasm_modules' || key === 'text_blobs' || key === 'data_blobs') return Object.keys(value);
  if (key === 'queues') return [...(value.producers ?? []).map((p) => p?.binding), ...(value.consumers ?? []).map((c) => `consumer of ${c?.queue}`)].filter(Boolean);
  if (Array.isArray(value.bindings)) return value.bindings.map((b) => b?.name ?? b?.binding).filter(Boolean);
  const one = (b) => b?.binding ?? b?.name ?? b?.class_name ?? b?.service ?? (b?.port !== undefined ? `port ${b.port}` : undefined);
  if (Array.isArray(value)) return value.map(one).filter((n) => typeof n === 'string');
  const n = one(value);
  return typeof n === 'string' ? [n] : [];
}

function describeNames(names) {
  return names.length === 0 ? '(no binding name)' : `(${names.map((n) => `"${n}"`).join(', ')})`;
}

function isEmpty(value) {
  if (Array.isArray(value)) return value.length === 0;
  return value !== null && typeof value === 'object' && Object.keys(value).length === 0;
}

function optionalString(raw, key, problems) {
  const v = raw[key];
  if (v === undefined) return null;
  if (typeof v !== 'string') {
    problems.push(`"${key}" must be a string, got ${JSON.stringify(v)}`);
    return null;
  }
  return v;
}

function fail(file, problems) {
  throw new DurableError(codes.CONFIG, `${file} cannot be served by durable-workers:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
}

module.exports = { loadConfig, findConfig, CONFIG_NAMES };
