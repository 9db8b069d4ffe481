// Leaves `metadata.managedFields` out of an API object's JSON text before it is parsed. The API server always
// sends them and has no way to leave them out, and no nodecare reader uses them: a stored object is stripped
// to what the program needs right after parsing (docs/adr/0001). Parsing them first is the cost: they are
// about 40% of a Lease's JSON and half of the objects it parses into (every owned field is an empty object),
// 17 MB of a start-up LIST at 5,000 nodes × 5 and a third of its parse and collection CPU (docs/adr/0014).
//
// The text is searched, not parsed: `"managedFields":[` preceded by `{` or `,` can only be an object member
// with an array value (inside a JSON string every `"` is escaped, so the member's first quote would follow
// a backslash), and in a Node or a Lease the one such member is metadata's. Its array is skipped bracket by
// bracket, strings and their escapes stepped over. Text that does not scan (unbalanced, cut short) is
// returned as it is, for JSON.parse to report.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const MEMBER = '"managedFields":[';

/** The index of the quote that closes the string opening at `start`; -1 when the text ends first. */
function stringEnd(json: string, start: number): number {
  for (let from = start + 1; ;) {
    const quote = json.indexOf('"', from);
    if (quote === -1) return -1;
    let escapes = 0;
    while (json.charCodeAt(quote - 1 - escapes) === BACKSLASH) escapes++;
    if (escapes % 2 === 0) return quote; // an even run of backslashes escapes itself, not the quote
    from = quote + 1;
  }
}

/** The index just past the array or object that opens at `start`; -1 when the text ends first. */
function skipContainer(json: string, start: number): number {
  let depth = 0;
  for (let i = start; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(json, i);
      if (i === -1) return -1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * `json` without any `managedFields` member whose value is an array (with the comma that joined it to its
 * neighbour), so that it parses to the same value less those members. Unchanged when there is none, or when
 * the text does not scan.
 */
export function withoutManagedFields(json: string): string {
  let at = json.indexOf(MEMBER);
  if (at === -1) return json;
  let kept = '';
  let from = 0;
  while (at !== -1) {
    const before = json.charCodeAt(at - 1);
    if (before !== OPEN_BRACE && before !== COMMA) {
      at = json.indexOf(MEMBER, at + 1);
      continue;
    }
    const end = skipContainer(json, at + MEMBER.length - 1);
    if (end === -1) return json;
    if (json.charCodeAt(end) === COMMA) {
      kept += json.slice(from, at); // `{"managedFields":[…],"b":…` or `,"managedFields":[…],"b":…`
      from = end + 1;
    } else {
      // `,"managedFields":[…]}` or `{"managedFields":[…]}`
      kept += json.slice(from, before === COMMA ? at - 1 : at);
      from = end;
    }
    at = json.indexOf(MEMBER, from);
  }
  return kept + json.slice(from);
}
