// The meaning of a plant write, decided once for every engine: a replace is the merge patch that sets name and
// tag on the version it requires (so it writes only when something changed), and the event each write emits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decidePatch, replaceAsPatch } from '../../src/plants/plant.js';
import { EVENT_OF_WRITE } from '../../src/plants/plant-event.js';

const current = { id: 7n, name: 'Fern', tag: 'green', version: 3n };

test('a replace writes only when something changed, on the version it requires; no tag removes the tag', () => {
  const same = replaceAsPatch({ op: 'replace', plant: { id: 7n, name: 'Fern', tag: 'green' }, ifVersion: undefined });
  assert.deepEqual(decidePatch(current, same.patch, same.ifVersions), { kind: 'unchanged', plant: current });
  const untagged = replaceAsPatch({ op: 'replace', plant: { id: 7n, name: 'Fern' }, ifVersion: 3n });
  assert.deepEqual(decidePatch(current, untagged.patch, untagged.ifVersions), { kind: 'write', plant: { id: 7n, name: 'Fern' } });
  const stale = replaceAsPatch({ op: 'replace', plant: { id: 7n, name: 'Ivy' }, ifVersion: 2n });
  assert.deepEqual(decidePatch(current, stale.patch, stale.ifVersions), { kind: 'version-mismatch', current });
  assert.deepEqual(decidePatch(undefined, stale.patch, stale.ifVersions), { kind: 'not-found' });
});

test('each write emits its event: create newPlant, replace and patch plantUpdated, delete plantDeleted', () => {
  assert.deepEqual(EVENT_OF_WRITE, { create: 'newPlant', replace: 'plantUpdated', patch: 'plantUpdated', delete: 'plantDeleted' });
});
