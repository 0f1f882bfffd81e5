#!/usr/bin/env node
// A Thirty-One bot in Node.js, built from the arena's .proto files and nothing else of ours.
//
// It is a gRPC server (the referee is the client) that serves two services:
//   - thirtyone.v1.BotService (proto/thirtyone/v1/bot.proto): GetIdentity and Play;
//   - grpc.health.v1.Health, from the grpc-health-check package, because Node's gRPC has no
//     built-in health service and the referee waits for SERVING before it starts a match.
//
// It plays greedy from the observation alone: every value is computed here, in JavaScript,
// from the cards and the rules the observation carries. See README.md in this folder.
//
//     node greedy.js                                   # 127.0.0.1:50031
//     node greedy.js --address unix:///tmp/node.sock
//     THIRTYONE_BOT_ADDRESS=7000 node greedy.js        # 127.0.0.1:7000 (the referee sets unix://...)
'use strict';

// SIGTERM is how the referee stops a bot, and it may come at any moment, even while the gRPC
// packages below are still loading (a second or so on a busy machine). So the handlers go in
// first: before the server exists a stop is simply exit 0; afterwards main() sets stopServing.
let stopServing = null;
if (require.main === module) {
  const onSignal = (signal) => (stopServing ? stopServing(signal) : process.exit(0));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}

const fs = require('fs');
const path = require('path');

// The packages live in node_modules inside this folder. A folder submitted without them
// (no `npm ci` before `thirtyone submit --dir`) fails to start; say what to do, because the
// referee shows these last lines of output to whoever submitted it.
let grpc, protoLoader, HealthImplementation;
try {
  grpc = require('@grpc/grpc-js');
  protoLoader = require('@grpc/proto-loader');
  ({ HealthImplementation } = require('grpc-health-check'));
} catch (err) {
  const hint = 'install the packages with `npm ci` in the bot\'s folder before running it or submitting it with --dir';
  process.stderr.write(`node-greedy: ${err.message.split('\n')[0]}: ${hint}\n`);
  process.exit(1);
}

const PACKAGE = require('./package.json');

// ------------------------------------------------------------------ the contract

// The protos are a copy kept in this folder (sync-protos.js makes it, a test checks it),
// not ../../proto: the folder must run on its own once `thirtyone submit --dir` has copied
// it into a tournament, where nothing outside it is visible to the sandboxed bot.
const PROTO_ROOT = path.join(__dirname, 'proto');
const SERVICE_NAME = 'thirtyone.v1.BotService';
const PROTOCOL_VERSION = 1;
const ADDRESS_ENV = 'THIRTYONE_BOT_ADDRESS';
const DEFAULT_ADDRESS = '127.0.0.1:50031';

// keepCase: field names as written in the .proto (decision_id, legal_actions), so this file
// reads side by side with the contract. longs as strings: decision_id is a uint64, and it
// only has to be echoed back, never computed with. oneofs: `payload` names the field set.
const LOADER_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };

function loadContract() {
  const file = path.join(PROTO_ROOT, 'thirtyone', 'v1', 'bot.proto');
  if (!fs.existsSync(file)) {
    throw new Error(`the contract is missing: ${file} (run: npm run sync-protos --prefix sample_bots/node)`);
  }
  const definition = protoLoader.loadSync('thirtyone/v1/bot.proto', { ...LOADER_OPTIONS, includeDirs: [PROTO_ROOT] });
  return grpc.loadPackageDefinition(definition).thirtyone.v1;
}

// ------------------------------------------------------------------ hand values (docs/rules.md, "Hand values")

// A card is two characters, rank then suit: "Ah", "Td", "7s" (game.proto).
const RANKS = '23456789TJQKA';
const SUITS = 'cdhs';
const RANK_VALUE = { 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, T: 10, J: 10, Q: 10, K: 10, A: 11 };
const rank = (card) => card[0];
const suit = (card) => card[1];
const cardValue = (card) => RANK_VALUE[rank(card)];
// The order the referee's own scorer breaks ties in (rank, then suit), so that this bot and
// the Python greedy sample choose the same card when two discards leave equal values.
const cardOrder = (card) => RANKS.indexOf(rank(card)) * 4 + SUITS.indexOf(suit(card));

// Whether three of a kind counts specially, and how much, under these rules.
function tripleValue(cards, rules) {
  const kind = rules.three_of_a_kind;
  if (kind !== 'THREE_OF_A_KIND_30_5' && kind !== 'THREE_OF_A_KIND_30') return null;
  if (!(rank(cards[0]) === rank(cards[1]) && rank(cards[1]) === rank(cards[2]))) return null;
  // three_aces is proto3 `optional`: absent means A-A-A is worth what any triple is worth.
  if (rank(cards[0]) === 'A' && rules.three_aces !== undefined && rules.three_aces !== null) {
    return Number(rules.three_aces);
  }
  return kind === 'THREE_OF_A_KIND_30_5' ? 30.5 : 30;
}

// The value of three cards: the best total of one suit, unless a triple is worth more.
function handValue(cards, rules) {
  const perSuit = {};
  for (const card of cards) perSuit[suit(card)] = (perSuit[suit(card)] || 0) + cardValue(card);
  const best = Math.max(...Object.values(perSuit));
  const triple = tripleValue(cards, rules);
  return triple === null ? best : Math.max(best, triple);
}

// From four cards: the allowed discard that leaves the best three, and their value. Among
// equal results the cheapest card goes, so the choice never depends on the hand's order.
function bestDiscard(hand4, rules, allowed) {
  let best = null;
  const candidates = hand4.filter(allowed).sort((a, b) => cardValue(a) - cardValue(b) || cardOrder(a) - cardOrder(b));
  for (const card of candidates) {
    const value = handValue(hand4.filter((c) => c !== card), rules);
    if (best === null || value > best.value) best = { card, value };
  }
  return best;
}

// ------------------------------------------------------------------ the strategy

// Knock with a hand worth this much or more: the Python greedy sample's threshold, so that
// the two make the same decisions and a test can compare them move for move.
const KNOCK_AT = 22;
// Playing for a pot (`scoring = POT`) only the highest hand wins: knock later (greedy's pot_knock_at).
const POT_KNOCK_AT = 24;
// The widow game: also knock with a hand this close to the threshold that no swap raises.
const STUCK_MARGIN = 4;
// CALL under the gun with a hand worth this much, by seats still in (sample_bots/greedy.py):
// playing for lives a hand unlikely to be the lowest of random hands, for a pot likely the highest.
const CALL_AT = { 2: 24, 3: 19, 4: 16, 5: 15, 6: 14, 7: 14, 8: 14, 9: 14 };
const POT_CALL_AT = { 2: 15, 3: 18, 4: 20, 5: 20, 6: 21, 7: 21, 8: 21, 9: 22 };

const isKind = (kind) => (action) => action.kind === kind;
// The order in which a card is given up among equal choices: the cheapest first, then by rank
// and suit (the Python SDK's order, so that both choose the same card).
const giveUpOrder = (card) => cardValue(card) * 64 + cardOrder(card);

// The mean value of a random three-card hand under these rules (about 13.1): what the
// face-down dummy is worth as far as this seat can tell. Computed once per way of valuing triples.
const meanCache = new Map();
function meanHandValue(rules) {
  const key = `${rules.three_of_a_kind}/${rules.three_aces}`;
  if (!meanCache.has(key)) {
    const deck = [];
    for (const r of RANKS) for (const s of SUITS) deck.push(r + s);
    let total = 0;
    let count = 0;
    for (let i = 0; i < 52; i++) {
      for (let j = i + 1; j < 52; j++) {
        for (let k = j + 1; k < 52; k++) {
          total += handValue([deck[i], deck[j], deck[k]], rules);
          count++;
        }
      }
    }
    meanCache.set(key, total / count);
  }
  return meanCache.get(key);
}

// The best exchange of one hand card for one of `offered` (the up-card, or the widow's cards):
// { give, take, value }, the cheapest card given up and the dearest taken among equals.
function bestExchange(hand, offered, rules) {
  let best = null;
  for (const give of [...hand].sort((a, b) => giveUpOrder(a) - giveUpOrder(b))) {
    for (const take of [...offered].sort((a, b) => giveUpOrder(b) - giveUpOrder(a))) {
      const value = handValue(hand.map((c) => (c === give ? take : c)), rules);
      if (best === null || value > best.value) best = { give, take, value };
    }
  }
  return best;
}

// The action of `legal` of this kind (and cards), or null: the answer is always one of them.
function pick(legal, kind, card = '', widowCard = '') {
  return legal.find((a) => a.kind === kind && (a.card || '') === card && (a.widow_card || '') === widowCard) || null;
}

// One decision, from the observation alone. Always returns one of obs.legal_actions.
function decide(obs) {
  const legal = obs.legal_actions;
  const rules = obs.rules;
  const can = (kind) => legal.some(isKind(kind));

  if (obs.phase === 'PHASE_DISCARD') {
    // The card just taken from the discard pile may not go straight back; the referee
    // leaves it out of legal_actions, and this bot checks it too rather than trust a list.
    const forbidden = obs.drawn_from === 'PILE_DISCARD' ? obs.drawn_card : '';
    const legalCards = new Set(legal.filter(isKind('ACTION_KIND_DISCARD')).map((a) => a.card));
    const choice = bestDiscard(obs.hand, rules, (c) => c !== forbidden && legalCards.has(c));
    if (choice !== null) return { kind: 'ACTION_KIND_DISCARD', card: choice.card };
    return legal[0];
  }

  const pile = obs.discard_pile;
  const top = pile.length > 0 ? pile[pile.length - 1] : '';
  const value = handValue(obs.hand, rules);

  if (obs.phase === 'PHASE_DEALER_OPTION') {
    // The dealer's option: give the card whose exchange for the up-card leaves the most, if
    // that beats the hand as it is; else PASS (keep the hand).
    const swap = top ? bestExchange(obs.hand, [top], rules) : null;
    const action = swap !== null && swap.value > value ? pick(legal, 'ACTION_KIND_SWAP_UPCARD', swap.give) : null;
    return action || pick(legal, 'ACTION_KIND_PASS') || legal[0];
  }

  const pot = rules.scoring === 'SCORING_POT';
  const seatsIn = obs.in_game.filter(Boolean).length;
  // Knock under the gun (the round's very first turn): a showdown at once.
  if (can('ACTION_KIND_CALL') && value >= (pot ? POT_CALL_AT : CALL_AT)[seatsIn]) return { kind: 'ACTION_KIND_CALL' };

  const knockAt = pot ? POT_KNOCK_AT : KNOCK_AT;
  if (rules.draw === 'DRAW_WIDOW') {
    // The widow game: knock when good enough (or stuck near it), else the best widow swap.
    const swap = bestExchange(obs.hand, obs.widow, rules);
    const stuck = swap !== null && swap.value <= value && value >= knockAt - STUCK_MARGIN;
    if (can('ACTION_KIND_KNOCK') && (value >= knockAt || stuck)) return { kind: 'ACTION_KIND_KNOCK' };
    const action = swap !== null ? pick(legal, 'ACTION_KIND_SWAP_WIDOW', swap.give, swap.take) : null;
    return action || legal[0];
  }

  if (can('ACTION_KIND_KNOCK') && value >= knockAt) return { kind: 'ACTION_KIND_KNOCK' };

  // Take the top discard only if the hand is better with it, counting the forced discard
  // that follows (which may not be the card taken).
  let withTop = value;
  if (top && can('ACTION_KIND_DRAW_DISCARD')) {
    const after = bestDiscard([...obs.hand, top], rules, (c) => c !== top);
    if (after !== null) withTop = after.value;
  }
  // The dummy: take it with a hand worth less than a random hand on average.
  if (can('ACTION_KIND_SWAP_HAND') && Math.max(value, withTop) < meanHandValue(rules)) return { kind: 'ACTION_KIND_SWAP_HAND' };
  if (withTop > value) return { kind: 'ACTION_KIND_DRAW_DISCARD' };
  if (can('ACTION_KIND_DRAW_STOCK')) return { kind: 'ACTION_KIND_DRAW_STOCK' };
  // The stock is empty under `empty_stock = SHOWDOWN`: the only choices are the discard
  // (which does not help, see above) and PASS, which ends the round in a showdown now.
  if (can('ACTION_KIND_PASS')) return { kind: 'ACTION_KIND_PASS' };
  return legal[0];
}

// ------------------------------------------------------------------ the services

const log = (text) => process.stderr.write(`node-greedy: ${text}\n`);

function makeBotService(verbose) {
  return {
    getIdentity(call, callback) {
      callback(null, {
        name: 'node-greedy',
        version: PACKAGE.version,
        author: 'thirtyone sample bots',
        protocol_version: PROTOCOL_VERSION,
      });
    },

    // One call per match and seat. Its state lives in this closure, so concurrent streams
    // (several matches, or several seats of one match) never share anything: Node runs
    // their callbacks one at a time on its event loop, so no locking is needed either.
    play(call) {
      let match = '?';
      call.on('data', (request) => {
        try {
          if (request.payload === 'match_start') {
            const start = request.match_start;
            match = `${start.match_id} seat ${start.seat}`;
            if (verbose) log(`match ${match}: start, ${start.players} players, preset ${start.rules.preset}`);
          } else if (request.payload === 'decision_request') {
            const req = request.decision_request;
            call.write({ decision_id: req.decision_id, action: decide(req.observation) });
          } else if (request.payload === 'match_end') {
            // Nothing is sent for match_end: the referee half-closes next, and 'end' ends the call.
            if (verbose) log(`match ${match}: placing ${request.match_end.placing}, ${request.match_end.faults.length} faults`);
          }
        } catch (err) {
          // A bug here must not look like a timeout: end this stream with INTERNAL so the
          // referee records a crash at once, and keep serving the other streams.
          log(`match ${match}: ${err.stack || err}`);
          call.emit('error', { code: grpc.status.INTERNAL, details: `node-greedy: ${err.message || err}` });
        }
      });
      // The referee half-closed after match_end: return OK.
      call.on('end', () => call.end());
      // A stream the referee broke (cancelled, match aborted) is its business, not a crash here.
      call.on('error', () => {});
    },
  };
}

// ------------------------------------------------------------------ addresses and lifetime

// The address forms the Python SDK accepts: unix:///abs, unix:/abs, unix:relative,
// grpc://host:port, host:port, and a bare port (or :port) for 127.0.0.1.
function parseAddress(text) {
  let t = text.trim();
  if (t.startsWith('grpc://')) t = t.slice('grpc://'.length);
  if (t.startsWith('unix:')) {
    let rest = t.slice('unix:'.length);
    if (rest.startsWith('//')) rest = rest.slice(2);
    if (!rest) throw new Error(`${text}: no socket path after unix:`);
    const socketPath = path.resolve(rest);
    return { target: `unix:${socketPath}`, socketPath };
  }
  const port = t.startsWith(':') ? t.slice(1) : t;
  if (/^\d+$/.test(port)) return { target: `127.0.0.1:${port}`, socketPath: null };
  if (/^.+:\d+$/.test(t)) return { target: t, socketPath: null };
  throw new Error(`${text} is not an address; use unix:///abs/path.sock, host:port or a port`);
}

function parseArgs(argv) {
  const opts = { address: null, grace: 5, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [name, inline] = arg.split(/=(.*)/s);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    if (name === '--address') opts.address = value();
    else if (name === '--grace') opts.grace = Number(value());
    else if (arg === '--verbose' || arg === '-v') opts.verbose = true;
    else if (arg === '--help' || arg === '-h') {
      process.stdout.write('usage: node greedy.js [--address ADDR] [--grace SECONDS] [--verbose]\n');
      process.exit(0);
    } else {
      log(`unknown argument ${arg} (try --help)`);
      process.exit(2);
    }
  }
  if (!(opts.grace >= 0)) {
    log('--grace must be a number of seconds, 0 or more');
    process.exit(2);
  }
  return opts;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const text = opts.address || process.env[ADDRESS_ENV] || DEFAULT_ADDRESS;
  let address;
  try {
    address = parseAddress(text);
  } catch (err) {
    log(err.message);
    process.exit(2);
  }

  const contract = loadContract();
  const server = new grpc.Server();
  server.addService(contract.BotService.service, makeBotService(opts.verbose));
  // NOT_SERVING until the port is bound: the referee must not call before we listen.
  const health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE_NAME]: 'NOT_SERVING' });
  health.addToServer(server);

  server.bindAsync(address.target, grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) {
      log(`cannot listen on ${text}: ${err.message}`);
      process.exit(1);
    }
    // The referee checks "" first and the service's own name if "" is unknown: say both.
    health.setStatus('', 'SERVING');
    health.setStatus(SERVICE_NAME, 'SERVING');
    const where = address.socketPath ? `unix://${address.socketPath}` : address.target.replace(/:0$/, `:${port}`);
    log(`node-greedy ${PACKAGE.version} (protocol ${PROTOCOL_VERSION}) listening on ${where} (pid ${process.pid})`);
  });

  // Stopping (SIGTERM, Ctrl-C): no new matches; open streams get up to --grace seconds to
  // finish, then the process exits 0, which the referee reads as a clean stop.
  let stopping = false;
  stopServing = (signal) => {
    if (stopping) return;
    stopping = true;
    if (opts.verbose) log(`${signal}: stopping`);
    health.setStatus('', 'NOT_SERVING');
    health.setStatus(SERVICE_NAME, 'NOT_SERVING');
    const finish = () => {
      if (address.socketPath) fs.rmSync(address.socketPath, { force: true });
      process.exit(0);
    };
    setTimeout(() => {
      server.forceShutdown();
      finish();
    }, opts.grace * 1000).unref();
    server.tryShutdown(finish);
  };
}

if (require.main === module) {
  main();
}

// For tests and for reading: the pure parts.
module.exports = { handValue, bestDiscard, bestExchange, meanHandValue, decide, parseAddress };
