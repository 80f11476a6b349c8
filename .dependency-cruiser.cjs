// The layers of src/, top to bottom: a folder may import its own layer's neighbours' lower layers, never a higher
// one, and no file imports itself back through others. `npm run check:structure` holds the code to it (CI runs it);
// docs/architecture.md draws the same layers.
const LAYERS = [
  ['cli'], // the commands
  ['process'], // server, start-up, workers and primary, background services, idle memory
  ['app.ts'], // the HTTP app put together
  ['config.ts'], // joins every part's settings
  ['health', 'docs', 'console', 'metrics', 'tokens', 'client'], // edge features and the published client
  ['storage'], // the engines: they implement the features' store ports
  ['replication'], // Litestream, for the SQLite engine
  ['observations'], // the closed set of observations, and the log that subscribes
  ['bulk'], // import and export lines
  ['plants'],
  ['webhooks'],
  ['limits'],
  ['events'], // the event itself, the feed, its stream
  ['http'], // contract wiring
  ['auth'],
  ['tracing', 'json', 'contract', 'errors', 'kit'], // kits that import no feature
];

const pathOf = (names) => `^src/(${names.map((n) => n.replace('.', '\\.')).join('|')})($|/)`;

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A file imports itself back through others: no import circle.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...LAYERS.slice(1).map((layer, i) => ({
      name: `layer-${layer.join('-').replace('.', '-')}`,
      severity: 'error',
      comment: `${layer.join(', ')} may not import a layer above it (${LAYERS.slice(0, i + 1).flat().join(', ')}).`,
      from: { path: pathOf(layer) },
      to: { path: pathOf(LAYERS.slice(0, i + 1).flat()) },
    })),
    {
      name: 'every-file-in-a-layer',
      severity: 'error',
      comment: 'Each file of src/ sits in a layer named above.',
      from: { path: '^src/', pathNot: pathOf(LAYERS.flat()) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/contract/schema\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6', 'cjs'],
  },
};
