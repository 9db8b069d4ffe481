// YAML for the files nodecare reads once (a kubeconfig, the agent's config file): js-yaml loaded for the
// parse and released after. An ES import would keep the parser (130 KB of source and the code compiled from
// it) for the life of every process that imports the reading module, the in-cluster agent too, which reads
// no YAML at all (docs/adr/0006, P6).

import { createRequire } from 'node:module';
import type * as JsYaml from 'js-yaml';

const require = createRequire(import.meta.url);

/** Parses one YAML document (js-yaml's `load`: its errors, its default schema). */
export function parseYaml(text: string): unknown {
  const path = require.resolve('js-yaml');
  try {
    return (require(path) as typeof JsYaml).load(text);
  } finally {
    delete require.cache[path];
  }
}
