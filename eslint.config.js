import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules', 'dirigo-data', 'dist', 'release', 'packages/*/dist', 'test-artifacts', 'web/dist', 'web/.dist-*'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // Domains join their table interfaces into Database by extension.
      '@typescript-eslint/no-empty-object-type': ['error', { allowInterfaces: 'with-single-extends' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Configuration is read once, in src/kernel/config.ts.
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/kernel/config.ts.' }],
    },
  },
  {
    files: ['web/src/**'],
    languageOptions: { globals: { ...globals.browser } },
  },
  {
    files: ['src/kernel/config.ts', 'test/**', 'bench/**', 'scripts/**', 'packages/**'],
    rules: { 'no-restricted-properties': 'off' },
  },
);
