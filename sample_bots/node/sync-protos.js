#!/usr/bin/env node
// Copies the arena's contract (proto/thirtyone/v1/bot.proto and game.proto) into this
// folder's proto/, so that the bot stays self-contained: a folder submitted with
// `thirtyone submit ... --dir sample_bots/node` is copied alone into the tournament and runs
// sandboxed, where ../../proto does not exist. Run it after editing the contract:
//
//     npm run sync-protos --prefix sample_bots/node
//
// tests/sample_bots/test_node_bot.py fails while the copy differs from the original.
'use strict';

const fs = require('fs');
const path = require('path');

const FILES = ['bot.proto', 'game.proto'];
const source = path.resolve(__dirname, '..', '..', 'proto', 'thirtyone', 'v1');
const target = path.join(__dirname, 'proto', 'thirtyone', 'v1');

if (!fs.existsSync(path.join(source, 'bot.proto'))) {
  console.error(`sync-protos: no contract at ${source}; run it from the arena's checkout`);
  process.exit(1);
}
fs.mkdirSync(target, { recursive: true });
for (const name of FILES) {
  fs.copyFileSync(path.join(source, name), path.join(target, name));
  console.log(`copied ${path.relative(process.cwd(), path.join(target, name))}`);
}
