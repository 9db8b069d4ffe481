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

/** `text` with every control character (CONTROLS) but those in `keep` written as a visible `\uXXXX` escape. */
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
