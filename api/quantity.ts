// Kubernetes resource quantities ("4", "500m", "8Gi", "1e3") as plain numbers, for nodeResource probes.
// Parsed by a single left-to-right scan (no regular expression, so no backtracking) after a length cap:
// quantities come from node annotations, which are attacker-controlled (issue 7 item 3).

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

/** Longer text is not a quantity (the API server's own quantities are far shorter). */
export const MAX_QUANTITY_LENGTH = 64;

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/** The end of a run of digits starting at `i`. */
function digitsEnd(text: string, i: number): number {
  while (isDigit(text[i])) i++;
  return i;
}

/** Parses a quantity; returns undefined when the text is not one. Linear in the text's length. */
export function parseQuantity(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) ? text : undefined;
  if (text.length > MAX_QUANTITY_LENGTH) return undefined;
  const s = text.trim();
  let i = s[0] === '+' || s[0] === '-' ? 1 : 0;
  const intEnd = digitsEnd(s, i);
  let end = intEnd;
  if (s[end] === '.') end = digitsEnd(s, end + 1);
  // At least one digit before or after the point.
  if (intEnd === i && end - intEnd <= 1) return undefined;
  const base = Number(s.slice(0, end));
  i = end;
  if (
    (s[i] === 'e' || s[i] === 'E') &&
    (isDigit(s[i + 1]) || ((s[i + 1] === '+' || s[i + 1] === '-') && isDigit(s[i + 2])))
  ) {
    const expEnd = digitsEnd(s, s[i + 1] === '+' || s[i + 1] === '-' ? i + 2 : i + 1);
    if (expEnd !== s.length) return undefined;
    return base * 10 ** Number(s.slice(i + 1, expEnd));
  }
  const suffix = s.slice(i);
  return Object.hasOwn(SUFFIX, suffix) ? base * (SUFFIX[suffix] as number) : undefined;
}
