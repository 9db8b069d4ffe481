// @ts-check
/**
 * Import circles, checked by `npm run lint` (docs/architecture.md, "The shape holds itself"). A circle is a
 * circle even when one of its imports is `import type`: the rooms it ties together can no longer be read one
 * at a time. ESLint's import plugins skip type-only imports when they look for cycles; dependency-cruiser
 * counts them (tsPreCompilationDeps). test/unit/layering.test.ts shows this rule failing on a type-only circle.
 */

/**
 * Transitional (issue 52): circles another change of issue 52 ends, as path patterns. Empty since the
 * controller/decide/ and controller/rollup/ circles ended (3d184da); add none.
 */
export const PENDING_ISSUE_52_CIRCLES = [];

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'Import circles, type-only imports included, are refused: cut the shared part into its own file.',
      from: PENDING_ISSUE_52_CIRCLES.length > 0 ? { pathNot: PENDING_ISSUE_52_CIRCLES } : {},
      to: { circular: true },
    },
  ],
  options: {
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|coverage|\\.cache)/' },
  },
};
