// Input repeated in messages, logs, events and the CLI's output is capped and made inert (docs/design.md section 3):
// an annotation, a Lease or a node condition is written by whoever controls one node, may be 256 KiB long
// and may carry terminal control sequences. A message that echoed it whole would be logged, written to a
// Lease and put in an event in full, and one that echoed ESC or CSI would rewrite an operator's terminal.
// Every place that repeats input goes through these.

/** The most characters of one input value any message repeats. */
export const MAX_ECHOED_INPUT = 128;

/**
 * Characters a terminal acts on or that disguise text: C0 controls (ESC, CR, BS, newline, ...), DEL, C1
 * controls (CSI U+009B, OSC U+009D, ...), line and paragraph separators, and invisible or bidirectional
 * formatting marks (a right-to-left override reverses what follows it).
 */
const CONTROLS =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]/g;

/** `text` with every control character (CONTROLS) but those in `keep` written as a visible escape (`\u` and 4 hex digits). */
export function escapeControls(text: string, keep = ''): string {
  return text.replace(CONTROLS, (c) =>
    keep.includes(c) ? c : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** Output for a terminal: control characters escaped except the newlines and tabs that lay it out. */
export function escapeForTerminal(text: string): string {
  return escapeControls(text, '\n\t');
}

function cap(value: string, max: number): string {
  if (value.length <= max) return value;
  return `${value.slice(0, max)}… (${value.length - max} more characters)`;
}

/**
 * `value` cut to `max` characters, with the number of characters left out when it was longer, and its
 * control characters escaped.
 */
export function capInput(value: string, max: number = MAX_ECHOED_INPUT): string {
  return escapeControls(cap(value, max));
}

/** `value` as a JSON string literal for a message, capped first (quotes and escapes make it readable). */
export function quoteInput(value: string, max: number = MAX_ECHOED_INPUT): string {
  // JSON escapes C0 controls; escapeControls then finds only the others (DEL, C1, formatting marks).
  return escapeControls(JSON.stringify(cap(value, max)));
}

/** The UTF-8 size of one UTF-16 code unit at `i` of `text` and how many units its code point spans. */
function codePointAt(text: string, i: number): { bytes: number; units: number } {
  const c = text.charCodeAt(i);
  if (c < 0x80) return { bytes: 1, units: 1 };
  if (c < 0x800) return { bytes: 2, units: 1 };
  const next = text.charCodeAt(i + 1);
  if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) return { bytes: 4, units: 2 };
  // The rest of the BMP; a lone surrogate goes out as U+FFFD, also 3 bytes.
  return { bytes: 3, units: 1 };
}

/** The size of `text` in UTF-8 bytes: what the API server's byte limits count (an event's note: 1 KiB). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length;) {
    const point = codePointAt(text, i);
    bytes += point.bytes;
    i += point.units;
  }
  return bytes;
}

/**
 * The longest start of `text` within `maxBytes` UTF-8 bytes that ends on a code-point boundary (never half of
 * a character, nor half of a surrogate pair). Kubernetes counts some limits in bytes (an event's note, a
 * metav1.Condition's message): a cut by characters lets non-ASCII text over them, and the write is refused.
 */
export function cutUtf8(text: string, maxBytes: number): string {
  // No UTF-16 code unit takes more than 3 bytes (a surrogate pair: 2 units, 4 bytes).
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  for (let i = 0; i < text.length;) {
    const point = codePointAt(text, i);
    if (bytes + point.bytes > maxBytes) return text.slice(0, i);
    bytes += point.bytes;
    i += point.units;
  }
  return text;
}

/** `text` within `maxBytes` UTF-8 bytes: as it is when it fits, else cut (cutUtf8) and ended with `tail`. */
export function capUtf8(text: string, maxBytes: number, tail = '…'): string {
  if (text.length * 3 <= maxBytes || utf8Length(text) <= maxBytes) return text;
  return `${cutUtf8(text, Math.max(0, maxBytes - utf8Length(tail)))}${tail}`;
}
