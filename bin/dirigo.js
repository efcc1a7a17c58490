#!/usr/bin/env node
// Runs the TypeScript CLI directly: Node 24 strips the types (the project uses erasable syntax only).
import { main } from '../src/app/cli/main.ts';

process.exitCode = await main(process.argv.slice(2));
