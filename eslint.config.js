// Lint rules kept by a tool: ESLint's and typescript-eslint's recommended sets over src/, jobs/
// and test/; formatting is Prettier's (`prettier --check .` in npm test), so no style rules here.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/', 'test/output/', 'test/fixtures/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // Control characters in patterns are deliberate: printable-text.ts and the hostile-text tests match them.
      'no-control-regex': 'off',
      // Unused names are the compiler's job (noUnusedLocals, noUnusedParameters), with its `_` convention.
      '@typescript-eslint/no-unused-vars': 'off',
    },
  },
  {
    // Longer parameter lists become named options objects in the product; tests keep terse fixtures.
    files: ['src/**/*.ts', 'jobs/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'max-params': ['error', 4] },
  },
  {
    files: ['src/dashboard/assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
