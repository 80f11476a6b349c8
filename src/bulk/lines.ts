// Splits a byte stream into numbered lines with constant memory: chunks are cut at LF, a line may span
// chunks, and a line longer than the cap is reported (not buffered) so one huge line cannot exhaust memory.
import { isUtf8 } from 'node:buffer';

export interface Line {
  /** 1-based physical line number. */
  n: number;
  /** The line without its LF (or CRLF); U+FFFD where the bytes were not UTF-8. */
  text: string;
  /** False when the bytes are not valid UTF-8 (text then holds replacement characters). */
  utf8: boolean;
  /** True when the line was longer than the cap; text is then empty. */
  tooLong: boolean;
}

export const MAX_LINE_BYTES = 1024 * 1024;

/** The lines of each chunk as they arrive (the last line of the input may lack its LF). */
export async function* readLines(input: AsyncIterable<Buffer | string>, maxBytes = MAX_LINE_BYTES): AsyncGenerator<Line[]> {
  let carry: Buffer[] = [];
  let carryLength = 0;
  let overflow = false;
  let n = 0;
  const make = (bytes: Buffer): Line => {
    n++;
    if (overflow) return { n, text: '', utf8: true, tooLong: true };
    let end = bytes.length;
    if (end > 0 && bytes[end - 1] === 0x0d) end--;
    let start = 0;
    if (n === 1 && end >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
    const line = bytes.subarray(start, end);
    return { n, text: line.toString('utf8'), utf8: isUtf8(line), tooLong: false };
  };
  for await (const data of input) {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    const out: Line[] = [];
    let pos = 0;
    let lf: number;
    while ((lf = chunk.indexOf(0x0a, pos)) !== -1) {
      const tail = chunk.subarray(pos, lf);
      if (!overflow && carryLength + tail.length > maxBytes) overflow = true;
      out.push(make(carryLength > 0 && !overflow ? Buffer.concat([...carry, tail]) : tail));
      carry = [];
      carryLength = 0;
      overflow = false;
      pos = lf + 1;
    }
    if (pos < chunk.length && !overflow) {
      const rest = chunk.subarray(pos);
      carryLength += rest.length;
      if (carryLength > maxBytes) {
        overflow = true;
        carry = [];
      } else {
        carry.push(rest);
      }
    }
    if (out.length > 0) yield out;
  }
  if (carryLength > 0 || overflow) yield [make(Buffer.concat(carry))];
}
