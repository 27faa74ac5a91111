'use strict';
// ESLint's recommended rules for the package's JavaScript; formatting is
// Prettier's (.prettierrc.json), checked by `npm run lint` too.
const js = require('@eslint/js');
const globals = require('globals');

module.exports = [
  { ignores: ['node_modules/', 'target/', '.nodes/', '.cross/', 'native/', 'dist/', 'bench/.build/', 'npm/', 'vendor/', '**/*.d.ts'] },
  js.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2024, sourceType: 'commonjs', globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Arguments name what a callback is given; a caught error is often not needed.
      'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  // ES modules: .mjs, and the folders whose package.json says "type": "module".
  { files: ['**/*.mjs', 'js/peek/probes/**/*.js', 'examples/peek/**/*.js'], languageOptions: { sourceType: 'module' } },
  // Code that runs on workerd, or as a Durable Object app on either host.
  {
    files: ['js/cloudflare/**/*.js', 'examples/cloudflare/**/*.js', '__test__/fixtures/do-*/**/*.mjs', 'bench/fixtures/do-bench/**/*.mjs', 'examples/polls/**/*.mjs'],
    languageOptions: { globals: { ...globals.serviceworker, WebSocketPair: 'readonly' } },
  },
];
