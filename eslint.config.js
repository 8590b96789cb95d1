// Lint (npm run lint, part of npm test): typescript-eslint's type-aware rules over every TypeScript file the
// build compiles, and import cycles refused (test/architecture.unit.test.ts checks the layering itself).
// Formatting is Prettier's (.prettierrc.json), so no stylistic rule is on here.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import prettier from 'eslint-config-prettier';
import globals from 'globals';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'sdk/js/dist/**',
      'node_modules/**',
      '.tools/**',
      '.data/**',
      'charts/**',
      'tools/**',
      '.bench/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver()],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      'import-x/no-cycle': 'error',
      // Prettier wraps code at 120 columns but leaves comments and long strings alone: comments wrap too; a long
      // string (an OpenAPI description, a message) reads better whole than cut into pieces.
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
      // An async method that implements a Promise-returning interface without awaiting (a fake store, a Koa
      // handler that answers at once) is deliberate; unhandled promises, the real hazard, are the two rules above.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Tests read untyped HTTP bodies and documents and assert on them (chai's `expect(x).to.be.true` is an
    // expression), so the rules about `any` flowing on would flag every assertion without making one safer.
    files: ['test/**/*.ts', 'testkit/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-expressions': 'off',
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], ...tseslint.configs.disableTypeChecked },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: globals.node },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['**/*.js', '**/*.mjs'], languageOptions: { globals: globals.node } },
  // Portico Connect's page script runs in the patient's browser.
  { files: ['assets/**/*.js'], languageOptions: { globals: globals.browser } },
  prettier,
);
