// Turns the values at int64 paths (int64-paths.ts) of a parsed value into exact bigints, in place: the server
// after validating a request, the client on every response.
import { exactInteger, writtenAsInteger } from './lossless-json.js';

/**
 * Replaces, in place, the int64 values at its paths under holder[key] by their exact bigints. Returns the
 * JSON pointer (below holder[key]) of the first one not written as a canonical decimal integer (`5.0`, `1e3`,
 * `-0`; see writtenAsInteger), which is decoded all the same; undefined when all are.
 */
export type Int64Decoder = (holder: object, key: string | number) => string | undefined;

interface PathNode {
  int64: boolean;
  properties: Map<string, PathNode>;
  items?: PathNode;
}

/**
 * A decoder for the paths of int64Paths ("" the value itself, "/id" a property, "/*" every array item);
 * undefined when there are none. A value that is not an int64 integer (which validation rejects) is left
 * as it is.
 */
export function int64Decoder(paths: readonly string[]): Int64Decoder | undefined {
  if (paths.length === 0) return undefined;
  const root: PathNode = { int64: false, properties: new Map() };
  for (const path of paths) {
    let node = root;
    for (const segment of path === '' ? [] : path.slice(1).split('/')) {
      if (segment === '*') {
        node = node.items ??= { int64: false, properties: new Map() };
      } else {
        const name = segment.replaceAll('~1', '/').replaceAll('~0', '~');
        let next = node.properties.get(name);
        if (!next) node.properties.set(name, (next = { int64: false, properties: new Map() }));
        node = next;
      }
    }
    node.int64 = true;
  }
  return compile(root);
}

function compile(node: PathNode): Int64Decoder {
  const names = [...node.properties.keys()];
  const pointers = names.map((name) => `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
  const steps = [...node.properties.values()].map(compile);
  const items = node.items && compile(node.items);
  const int64 = node.int64;
  return (holder, key) => {
    const value = (holder as Record<string, unknown>)[key];
    if (typeof value === 'number') {
      if (!int64) return undefined;
      const exact = exactInteger(holder, key);
      if (exact !== undefined) (holder as Record<string, unknown>)[key] = exact;
      return writtenAsInteger(holder, key) ? undefined : '';
    } else if (value !== null && typeof value === 'object') {
      if (Array.isArray(value)) {
        if (!items) return undefined;
        let first: string | undefined;
        for (let i = 0; i < value.length; i++) {
          const bad = items(value, i);
          if (bad !== undefined) first ??= `/${i}${bad}`;
        }
        return first;
      }
      let first: string | undefined;
      for (let i = 0; i < names.length; i++) {
        if (!Object.hasOwn(value, names[i]!)) continue;
        const bad = steps[i]!(value, names[i]!);
        if (bad !== undefined) first ??= `${pointers[i]}${bad}`;
      }
      return first;
    }
    return undefined;
  };
}
