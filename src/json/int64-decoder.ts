// Turns the values at int64 paths (int64-paths.ts) of a parsed value into exact bigints, in place: the server
// after validating a request, the client on every response.
import { exactInteger } from './lossless-json.js';

/** Replaces, in place, the int64 values at its paths under holder[key] by their exact bigints. */
export type Int64Decoder = (holder: object, key: string | number) => void;

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
  const steps = [...node.properties.values()].map(compile);
  const items = node.items && compile(node.items);
  const int64 = node.int64;
  return (holder, key) => {
    const value = (holder as Record<string, unknown>)[key];
    if (typeof value === 'number') {
      if (!int64) return;
      const exact = exactInteger(holder, key);
      if (exact !== undefined) (holder as Record<string, unknown>)[key] = exact;
    } else if (value !== null && typeof value === 'object') {
      if (Array.isArray(value)) {
        if (items) for (let i = 0; i < value.length; i++) items(value, i);
      } else {
        for (let i = 0; i < names.length; i++) if (Object.hasOwn(value, names[i]!)) steps[i]!(value, names[i]!);
      }
    }
  };
}
