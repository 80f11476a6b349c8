// Import formats: each input line (or CSV record) becomes a plant, validated by the API's rules, or the
// reason it is invalid. JSON Lines use the API's int64-exact JSON parser (src/json/); CSV follows RFC 4180.
import { exactInteger, parseJson, parseJsonRoot, writtenAsInteger } from '../json/lossless-json.js';
import { fieldTooLong, type PlantRecord } from '../plants/plant.js';
import type { Line } from './lines.js';

export type Parsed = { line: number; plant: PlantRecord } | { line: number; error: string };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const DECIMAL_INTEGER = /^(0|-?[1-9]\d{0,18})$/;
/** As POST /plants says it of a body's `id` written `5.0`, `1e3` or `-0`. */
const NOT_PLAIN_INTEGER = 'id must be written as a plain integer (digits only: no fraction, exponent or -0)';
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

function lineProblem(line: Line): string | undefined {
  if (line.tooLong) return 'line longer than 1 MiB';
  if (!line.utf8) return 'not valid UTF-8';
  return undefined;
}

/** What POST /plants would say of the fields beyond their types: too long, or not well-formed Unicode. */
function fieldProblem(plant: PlantRecord): string | undefined {
  const tooLong = fieldTooLong(plant);
  if (tooLong !== undefined) return tooLong.rule;
  for (const field of ['name', 'tag'] as const) {
    const value = plant[field];
    if (value !== undefined && !value.isWellFormed()) return `${field} must be well-formed Unicode (it holds an unpaired surrogate)`;
  }
  return undefined;
}

/** One JSON Lines line; undefined for a blank line, which is skipped. */
export function parseJsonLine(line: Line): Parsed | undefined {
  const problem = lineProblem(line);
  if (problem) return { line: line.n, error: problem };
  if (line.text.trim() === '') return undefined;
  let value: unknown;
  try {
    value = parseJson(line.text);
  } catch (err) {
    return { line: line.n, error: `not valid JSON: ${(err as Error).message.slice(0, 120)}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { line: line.n, error: 'not a JSON object' };
  const body = value as Record<string, unknown>;
  if (!('id' in body)) return { line: line.n, error: 'id is required' };
  const id = exactInteger(body, 'id');
  if (id === undefined) {
    return { line: line.n, error: Number.isInteger(body.id) ? 'id must be an integer from -2^63 to 2^63-1' : 'id must be an integer' };
  }
  if (!writtenAsInteger(body, 'id')) return { line: line.n, error: NOT_PLAIN_INTEGER };
  if (!('name' in body)) return { line: line.n, error: 'name is required' };
  if (typeof body.name !== 'string') return { line: line.n, error: 'name must be a string' };
  if ('tag' in body && typeof body.tag !== 'string') return { line: line.n, error: 'tag must be a string' };
  const plant: PlantRecord = typeof body.tag === 'string' ? { id, name: body.name, tag: body.tag } : { id, name: body.name };
  const bad = fieldProblem(plant);
  return bad ? { line: line.n, error: bad } : { line: line.n, plant };
}

/** A plant as one JSON Lines line, `id` digit for digit (the form export writes and import reads). */
export function plantJsonLine(plant: PlantRecord): string {
  const tag = plant.tag === undefined ? '' : `,"tag":${JSON.stringify(plant.tag)}`;
  return `{"id":${plant.id},"name":${JSON.stringify(plant.name)}${tag}}\n`;
}

export class CsvHeaderError extends Error {}

/** True when `line` would be accepted as the header of a CSV import (id,name[,tag] in any order). */
export function isCsvHeader(line: Line): boolean {
  try {
    return new CsvParser().push(line) === undefined;
  } catch {
    return false;
  }
}

/**
 * CSV with a header naming the columns id and name, and optionally tag, in any order. Fields are separated
 * by commas; a field in double quotes may hold commas, line breaks and doubled quotes (""). An empty tag
 * field means no tag. Records are numbered by the line they start on.
 */
export class CsvParser {
  private columns?: { id: number; name: number; tag: number; count: number };
  private fields: string[] = [];
  private field = '';
  private quoted = false;
  private inQuotes = false;
  private startLine = 0;
  private problem: string | undefined;

  /** Feeds one physical line; returns the record it completes, if any (undefined for blank lines). */
  push(line: Line): Parsed | undefined {
    if (!this.inQuotes) {
      this.startLine = line.n;
      this.problem = undefined;
      if (line.text === '' && !line.tooLong) return undefined;
    } else {
      this.field += '\n';
    }
    this.problem ??= lineProblem(line);
    const text = line.text;
    const n = text.length;
    let i = 0;
    while (i < n) {
      if (this.inQuotes) {
        const q = text.indexOf('"', i);
        if (q === -1) {
          this.field += text.slice(i);
          i = n;
        } else if (text.charCodeAt(q + 1) === 0x22) {
          this.field += text.slice(i, q + 1);
          i = q + 2;
        } else {
          this.field += text.slice(i, q);
          this.inQuotes = false;
          i = q + 1;
          const next = text.charCodeAt(i);
          if (i < n && next !== 0x2c) this.problem ??= `unexpected character after a closing quote (column ${i + 1})`;
        }
      } else {
        const c = text.charCodeAt(i);
        if (c === 0x2c) {
          this.endField();
          i++;
        } else if (c === 0x22 && this.field === '' && !this.quoted) {
          this.quoted = true;
          this.inQuotes = true;
          i++;
        } else {
          let j = i;
          while (j < n) {
            const d = text.charCodeAt(j);
            if (d === 0x2c) break;
            if (d === 0x22) {
              this.problem ??= `a quote inside an unquoted field (column ${j + 1}); quote the whole field and double the quote`;
            }
            j++;
          }
          this.field += text.slice(i, j);
          i = j;
        }
      }
    }
    if (this.inQuotes) return undefined;
    this.endField();
    const fields = this.fields;
    this.fields = [];
    return this.record(fields);
  }

  /** At the end of the input: the record left open by a quoted field that never closed, if any. */
  end(): Parsed | undefined {
    if (!this.columns) throw new CsvHeaderError('the CSV input is empty: it needs a header line such as id,name,tag');
    if (!this.inQuotes) return undefined;
    this.inQuotes = false;
    this.fields = [];
    this.field = '';
    this.quoted = false;
    return { line: this.startLine, error: 'a quoted field is not closed before the end of the input' };
  }

  private endField(): void {
    this.fields.push(this.field);
    this.field = '';
    this.quoted = false;
  }

  private record(fields: string[]): Parsed | undefined {
    const line = this.startLine;
    if (!this.columns) {
      if (this.problem) throw new CsvHeaderError(`line ${line}, the header, is not valid CSV (${this.problem})`);
      const names = fields.map((f) => f.trim().toLowerCase());
      const unknown = names.find((f) => !['id', 'name', 'tag'].includes(f));
      if (unknown !== undefined || new Set(names).size !== names.length || !names.includes('id') || !names.includes('name')) {
        throw new CsvHeaderError(`the header on line ${line} must name the columns id and name, and optionally tag (found "${fields.join(',').slice(0, 80)}")`);
      }
      this.columns = { id: names.indexOf('id'), name: names.indexOf('name'), tag: names.indexOf('tag'), count: names.length };
      return undefined;
    }
    if (this.problem) return { line, error: this.problem };
    const cols = this.columns;
    if (fields.length !== cols.count) return { line, error: `expected ${cols.count} fields, found ${fields.length}` };
    const idText = fields[cols.id]!;
    if (!DECIMAL_INTEGER.test(idText)) {
      // An int64 written as 5.0, 1e3 or -0 is told so, as a JSON body's is.
      if (idText.length <= 40 && JSON_NUMBER.test(idText) && exactInteger(parseJsonRoot(idText), 'value') !== undefined) return { line, error: NOT_PLAIN_INTEGER };
      return { line, error: idText === '' ? 'id is required' : /^-?\d+$/.test(idText) && !/^-?0\d/.test(idText) ? 'id must be an integer from -2^63 to 2^63-1' : 'id must be an integer' };
    }
    const id = BigInt(idText);
    if (id < INT64_MIN || id > INT64_MAX) return { line, error: 'id must be an integer from -2^63 to 2^63-1' };
    const name = fields[cols.name]!;
    const tag = cols.tag === -1 ? '' : fields[cols.tag]!;
    const plant: PlantRecord = tag === '' ? { id, name } : { id, name, tag };
    const tooLong = fieldTooLong(plant);
    return tooLong === undefined ? { line, plant } : { line, error: tooLong.rule };
  }
}
