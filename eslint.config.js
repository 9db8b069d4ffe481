// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layering (docs/architecture.md, "Rooms"): `api` ← `lib` ← `agent` / `controller` / `cli`; the decisions
 * import no I/O; a program never reaches into another, except that `cli` decides with the controller's
 * decision core and decodes with its ingest, through their front doors. `demo/`, `bench/` and tests may
 * import anything. test/unit/layering.test.ts shows each rule failing on a file that breaks it.
 */
const reach = (rooms, message) => ({
  group: rooms.flatMap((room) => [`**/${room}/**`, `../${room}/**`]),
  message,
});
const OUTSIDE = ['demo', 'bench', 'test'];
/** What pure code may not import: the Kubernetes client, the network, files, processes. */
const IO_MODULES = {
  paths: [
    'undici',
    '@kubernetes/client-node',
    'node:fs',
    'node:fs/promises',
    'node:net',
    'node:http',
    'node:https',
    'node:child_process',
    'node:dgram',
  ].map((name) => ({
    name,
    message:
      'Decisions are pure: I/O belongs in the shell around them (controller/cache/, writes/, reconciler.ts).',
  })),
};
/** Fakes and test helpers live in testing.ts files; the product never imports them. */
const NO_TESTING = {
  group: ['**/testing.ts', './testing.ts'],
  message: 'Fakes and test helpers stay out of the product: only tests import a testing.ts.',
};
// ESLint replaces a rule's options when a later block matches the same file, it does not merge them: each
// block therefore carries every pattern that applies to its files.
const restrict = (files, patterns, extra = {}) => ({
  files,
  ignores: ['**/*.test.ts', '**/testing.ts'],
  rules: { 'no-restricted-imports': ['error', { ...extra, patterns: [...patterns, NO_TESTING] }] },
});
const CONTROLLER = reach(['agent', 'cli', ...OUTSIDE], 'The controller imports only api/ and lib/.');
/** A room with an index.ts is entered through it: what else is in the room is its own business. */
const ROOM_DOORS = {
  regex: '(^|/)(cache|decide|eviction|probes|rollup|writes)/(?!index\\.ts$)[^/]+$',
  message: 'Enter a room through its index.ts (docs/architecture.md, "Rooms").',
};

export const LAYERING = [
  restrict(
    ['api/**/*.ts'],
    [
      reach(
        ['lib', 'agent', 'controller', 'cli', ...OUTSIDE],
        'api/ is the contract: it imports nothing of ours.',
      ),
    ],
  ),
  restrict(
    ['lib/**/*.ts'],
    [reach(['agent', 'controller', 'cli', ...OUTSIDE], 'lib/ serves the programs; it imports only api/.')],
  ),
  restrict(
    ['agent/**/*.ts'],
    [reach(['controller', 'cli', ...OUTSIDE], 'The agent imports only api/ and lib/.'), ROOM_DOORS],
  ),
  restrict(['controller/**/*.ts'], [CONTROLLER, ROOM_DOORS]),
  restrict(
    ['cli/**/*.ts'],
    [
      reach(
        ['agent', ...OUTSIDE],
        'kubectl-nodecare imports api/, lib/ and the controller front doors only.',
      ),
      {
        regex: '(^|/)controller/(?!decide/index\\.ts$|ingest\\.ts$)',
        message:
          'From the controller, kubectl-nodecare imports controller/decide/index.ts and controller/ingest.ts only.',
      },
    ],
  ),
  restrict(
    [
      'controller/decide/**/*.ts',
      'controller/rollup/evaluate.ts',
      'controller/rollup/pairs.ts',
      'controller/rollup/condition.ts',
      'controller/rollup/gardener.ts',
    ],
    [CONTROLLER, ROOM_DOORS, reach(['lib/kube'], 'Decisions are pure: no Kubernetes client.')],
    IO_MODULES,
  ),
];

/**
 * The shape holds itself (issue 52 item 5; docs/architecture.md): no product file over 400 lines, no function
 * over 80. Tests and testing.ts files are not held to it. Import circles are refused by dependency-cruiser in
 * the same `npm run lint` (.dependency-cruiser.js), type-only imports included.
 */
const PRODUCT = ['api/**/*.ts', 'lib/**/*.ts', 'agent/**/*.ts', 'controller/**/*.ts', 'cli/**/*.ts'];
export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

/** Long by nature: a function that is a table, one row a line. Each entry says why. */
const TABLES = [
  // Its constructor registers every metric of the controller: one metric, a few lines, after another.
  { files: ['controller/metrics.ts'] },
];

export const SIZES = [
  {
    files: PRODUCT,
    ignores: ['**/*.test.ts', '**/testing.ts'],
    rules: {
      'max-lines': ['error', { max: MAX_FILE_LINES }],
      'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES }],
    },
  },
  ...TABLES.map(({ files }) => ({ files, rules: { 'max-lines-per-function': 'off' } })),
];

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
  ...LAYERING,
  ...SIZES,
);
