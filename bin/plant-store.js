#!/usr/bin/env node
// The published command; the code lives in dist/ (built by `npm run build`, run by `prepare`).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
