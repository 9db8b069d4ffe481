// prom-client's registry and metric types, loaded without the package's index: the index also loads its
// default metrics, whose CPU counter loads @opentelemetry/api (~6 MiB RSS in the agent's 64 MiB,
// docs/adr/0006). The classes and their types are prom-client's own; runtime-metrics.ts serves the default
// metrics under their standard names.

import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry.js') as typeof PromClient.Registry;
export type Registry = PromClient.Registry;
export const Counter = require('prom-client/lib/counter.js') as typeof PromClient.Counter;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export const Gauge = require('prom-client/lib/gauge.js') as typeof PromClient.Gauge;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export const Histogram = require('prom-client/lib/histogram.js') as typeof PromClient.Histogram;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;
