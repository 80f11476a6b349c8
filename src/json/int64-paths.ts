// Where a JSON Schema puts int64 values: the server decodes requests by these paths and the client's generator
// (src/contract/generate.mjs, which imports this file as TypeScript) tabulates them for responses. Erasable
// syntax and no imports, so Node runs it as it is.

/**
 * Paths of the int64 values a schema describes, sorted: "" is the value itself, "/id" a property, "/*" every
 * array item. allOf, anyOf and oneOf branches count at their own place; `deref` resolves a `$ref` (a
 * reference met again inside itself is not followed).
 */
export function int64Paths(schema: unknown, deref?: (ref: string) => unknown, prefix = '', seen: ReadonlySet<string> = new Set()): string[] {
  if (!schema || typeof schema !== 'object') return [];
  const node = schema as Record<string, unknown>;
  if (typeof node.$ref === 'string') {
    if (seen.has(node.$ref)) return [];
    if (!deref) throw new Error(`int64Paths: no resolver for ${node.$ref}`);
    return int64Paths(deref(node.$ref), deref, prefix, new Set([...seen, node.$ref]));
  }
  const out: string[] = [];
  if (isInt64(node)) out.push(prefix);
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    for (const sub of (node[key] ?? []) as unknown[]) out.push(...int64Paths(sub, deref, prefix, seen));
  }
  for (const [name, sub] of Object.entries((node.properties ?? {}) as Record<string, unknown>)) {
    out.push(...int64Paths(sub, deref, `${prefix}/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`, seen));
  }
  if (node.items) out.push(...int64Paths(node.items, deref, `${prefix}/*`, seen));
  return [...new Set(out)].sort();
}

/** `type: integer` (alone or among others) with `format: int64`. */
export function isInt64(schema: unknown): boolean {
  if (!schema || typeof schema !== 'object') return false;
  const { type, format } = schema as { type?: unknown; format?: unknown };
  return format === 'int64' && (Array.isArray(type) ? type.includes('integer') : type === 'integer');
}
