// Kubernetes resource quantities ("4", "500m", "8Gi", "1e3") as plain numbers, for nodeResource probes.

const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/** Parses a quantity; returns undefined when the text is not one. */
export function parseQuantity(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) ? text : undefined;
  const match = QUANTITY.exec(text.trim());
  if (!match) return undefined;
  const [, digits, exponent, suffix = ''] = match;
  const base = Number(digits);
  if (exponent) return base * 10 ** Number(exponent.slice(1));
  return base * (SUFFIX[suffix] as number);
}
