#!/usr/bin/env node
import { runCli } from './program.js';

// Exit through exitCode so stdout is flushed before the process ends.
void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
