// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'coverage/', '.cache/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object and a string-literal union.' },
      ],
    },
  },
  {
    // Time is a dependency (docs/conventions.md 2): only the composition roots read the wall clock.
    files: ['api/**/*.ts', 'agent/**/*.ts', 'controller/**/*.ts'],
    ignores: ['**/main.ts', '**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Take a Clock; Date.now() belongs in main.ts only.' },
      ],
    },
  },
);
