// The document passes Spectral's `spectral:oas` ruleset (its recommended rules, as `extends: spectral:oas`
// gives them) with no error and no warning: operation descriptions, tags, contact, examples that match their
// schemas, and the other checks that tools reading the document rely on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import spectralCore from '@stoplight/spectral-core';
import Parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import YAML from 'yaml';
import { SCOPES } from '../../src/auth/tokens.js';

const DOCUMENT = fileURLToPath(new URL('../../../openapi/plant-store.yaml', import.meta.url));
// Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
const SEVERITY = ['error', 'warning', 'information', 'hint'];
// Spectral reads every scope in a security requirement as an OAuth flow's scope; OpenAPI 3.1 lets an http
// bearer scheme's requirement list role names that no flow declares (stoplightio/spectral#2643, open). The
// rule is off, and the last test checks what it would: each requirement names a declared scheme, and each
// role is a scope the service grants.
const SPECTRAL_3_1_BUG = 'oas3-operation-security-defined';

test('openapi/plant-store.yaml has no Spectral spectral:oas error or warning', async (t) => {
  const spectral = new spectralCore.Spectral();
  spectral.setRuleset({ extends: [[oas as never, 'recommended']], rules: { [SPECTRAL_3_1_BUG]: 'off' } });
  const results = await spectral.run(new spectralCore.Document(readFileSync(DOCUMENT, 'utf8'), Parsers.Yaml, DOCUMENT));
  const findings = results.map((r) => `${SEVERITY[r.severity]} ${r.code} at ${r.path.join('.')} (line ${r.range.start.line + 1}): ${r.message}`);
  for (const f of findings) t.diagnostic(f);
  assert.deepEqual(findings.filter((f) => /^(error|warning) /.test(f)), []);
});

test('every security requirement names a declared scheme, and every scope it lists is one the service grants', () => {
  const doc = YAML.parse(readFileSync(DOCUMENT, 'utf8'));
  const schemes = Object.keys(doc.components.securitySchemes);
  const requirements: Array<[string, Record<string, string[]>]> = (doc.security ?? []).map((r: Record<string, string[]>) => ['(document)', r]);
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      for (const r of op?.security ?? []) requirements.push([`${method.toUpperCase()} ${path}`, r]);
    }
  }
  assert.ok(requirements.length > 10, `requirements found: ${requirements.length}`);
  for (const [where, requirement] of requirements) {
    for (const [scheme, scopes] of Object.entries(requirement)) {
      assert.ok(schemes.includes(scheme), `${where}: ${scheme} is not a declared security scheme`);
      for (const scope of scopes) assert.ok((SCOPES as readonly string[]).includes(scope), `${where}: ${scope} is not a scope the service grants`);
    }
  }
});
