// Input repeated in messages, logs and events is capped (docs/design.md section 3): an annotation is attacker-controlled
// and may be 256 KiB long; a message that echoes it whole would be logged, written to a Lease and put in an
// event in full. Every place that repeats input goes through these.

/** The most characters of one input value any message repeats. */
export const MAX_ECHOED_INPUT = 128;

/** `value` cut to `max` characters, with the number of characters left out when it was longer. */
export function capInput(value: string, max: number = MAX_ECHOED_INPUT): string {
  if (value.length <= max) return value;
  return `${value.slice(0, max)}… (${value.length - max} more characters)`;
}

/** `value` as a JSON string literal for a message, capped first (quotes and escapes make it readable). */
export function quoteInput(value: string, max: number = MAX_ECHOED_INPUT): string {
  return JSON.stringify(capInput(value, max));
}
