#!/usr/bin/env -S node --max-semi-space-size=32
// --max-semi-space-size=32: a young generation of 32 MiB semi-spaces; with Node's default a GET spent a fifth
// of its time in scavenges, with it a twentieth (README, Performance). `npm start` passes the same flag.
// The published command; the code lives in dist/ (built by `npm run build`, run by `prepare`).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
