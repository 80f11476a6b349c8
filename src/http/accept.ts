// Content negotiation by Accept (RFC 9110, section 12.5.1): each media type gets the q-value of the most
// specific range that matches it (`text/event-stream` over `text/*` over `*/*`), and the client's preference
// decides, not the order of the ranges.

/** One media range of an Accept header: its type and subtype (lower case, `*` for any) and its q-value. */
export interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/** The ranges of an Accept header; a range that cannot be read (no `/`, a q-value out of 0..1) is left out. */
export function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of splitOutsideQuotes(header, ',')) {
    const [mediaType = '', ...params] = splitOutsideQuotes(part, ';');
    const slash = mediaType.indexOf('/');
    if (slash <= 0) continue;
    const type = mediaType.slice(0, slash).trim().toLowerCase();
    const subtype = mediaType.slice(slash + 1).trim().toLowerCase();
    if (type === '' || subtype === '' || (type === '*' && subtype !== '*')) continue;
    let q = 1;
    for (const param of params) {
      const eq = param.indexOf('=');
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      const value = param.slice(eq + 1).trim();
      // RFC 9110's qvalue: 0 to 1, at most three decimals.
      q = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(value) ? Number(value) : Number.NaN;
      break;
    }
    if (!Number.isNaN(q)) ranges.push({ type, subtype, q });
  }
  return ranges;
}

/** The q-value `mediaType` (`type/subtype`) gets from `ranges`: that of the most specific range matching it, 0 if none does. */
export function qualityOf(ranges: readonly MediaRange[], mediaType: string): number {
  const [type, subtype] = mediaType.toLowerCase().split('/') as [string, string];
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' ? 0 : -1;
    if (specificity < 0) continue;
    // Of two ranges equally specific (`text/event-stream` twice), the higher q-value counts.
    if (specificity > best || (specificity === best && r.q > q)) {
      best = specificity;
      q = r.q;
    }
  }
  return q;
}

/**
 * Whether GET /events answers with its stream: the client names `text/event-stream` (a stream is never sent for
 * `*` alone), its q-value is above 0 and at least that of `application/json`. `Accept: text/event-stream;q=0.5,
 * application/json` prefers JSON, so it gets a page.
 */
export function prefersEventStream(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = parseAccept(accept);
  if (!ranges.some((r) => r.type === 'text' && r.subtype === 'event-stream' && r.q > 0)) return false;
  const stream = qualityOf(ranges, 'text/event-stream');
  return stream > 0 && stream >= qualityOf(ranges, 'application/json');
}

/** `text` split at `separator`, except inside a quoted string (a parameter's value may hold one). */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (c === separator && !quoted) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
