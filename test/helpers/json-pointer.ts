// Local references in the OpenAPI document, as the docs tests follow them.

type Node = Record<string, any>;

/** What a local JSON pointer (`#/components/schemas/Plant`, RFC 6901 escapes undone) points at in `doc`. */
export function pointer(doc: Node, ref: string): Node {
  return ref
    .slice(2)
    .split('/')
    .reduce((n: Node, k) => n?.[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
}
