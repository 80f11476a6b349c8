// The docs page shows JSON answers digit for digit. Swagger UI formats a JSON response body with
// JSON.stringify(JSON.parse(text)), which rounds every integer above 2^53 (an id of 9223372036854775805 would
// show as 9223372036854776000). This Swagger UI plugin shows the body the service sent, re-indented without
// ever turning a number into a double. Requests need nothing: the page sends the body and path text as typed.

/**
 * `text` indented like JSON.stringify(value, null, 2), every token (numbers included) copied as it was sent;
 * undefined when `text` is not JSON. Self-contained: it reaches the page as its source text.
 */
export function reindentJson(text: string): string | undefined {
  try {
    JSON.parse(text);
  } catch {
    return undefined;
  }
  let out = '';
  let depth = 0;
  const newline = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      // A string, escapes included, as it was sent.
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === '{' || c === '[') {
      let j = i + 1;
      while (/\s/.test(text[j]!)) j++;
      if (text[j] === '}' || text[j] === ']') {
        out += c + text[j];
        i = j;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') {
      out += ',' + newline();
    } else if (c === ':') {
      out += ': ';
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

/**
 * A Swagger UI plugin (its plugin API's wrapComponents) that renders JSON response bodies through `reindent`.
 */
export function exactJsonPlugin(system: any, reindent: typeof reindentJson): object {
  return {
    wrapComponents: {
      responseBody: (Original: any) => (props: any) => {
        const React = system.React;
        const pretty = /json/i.test(props.contentType ?? '') && typeof props.content === 'string' ? reindent(props.content) : undefined;
        if (pretty === undefined) return React.createElement(Original, props);
        const HighlightCode = system.getComponent('HighlightCode', true);
        return React.createElement(
          'div',
          null,
          React.createElement('h5', null, 'Response body'),
          React.createElement(HighlightCode, { language: 'json', downloadable: true, fileName: 'response.json', canCopy: true }, pretty),
        );
      },
    },
  };
}

/**
 * The plugin as @fastify/swagger-ui's uiConfig takes it: the plugin writes functions into the page's initializer
 * by their source text (toString), so this one's text carries both functions above.
 */
export function exactJsonPagePlugin(): (system: unknown) => object {
  const source = `function plantStoreExactJson(system) { return (${exactJsonPlugin})(system, ${reindentJson}); }`;
  return Object.assign((system: unknown) => exactJsonPlugin(system, reindentJson), { toString: () => source });
}
