#!/usr/bin/env node
// The published command: loads the TypeScript sources through tsx, so there is no build step to forget.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('./main.ts');
await runCli();
