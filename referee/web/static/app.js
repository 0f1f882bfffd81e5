/* The Thirty-One arena viewer: standings, rating plot, match list and replay viewer.
 *
 * Plain script, no library and no module (modules cannot load from file://). The data
 * come from the server's JSON endpoints, or, in an export or a single-match file, from
 * window.THIRTYONE_DATA and data/replays/ID.js scripts. The browser never reads a match
 * log: replays arrive as the replay model's steps plus one table frame per step.
 * Every text from a tournament (bot names, messages) goes in through textContent.
 */
(function () {
  "use strict";

  var DATA = window.THIRTYONE_DATA || null;
  var MODE = DATA ? DATA.mode : "server"; // server | static | single
  // The server's words (referee.tournament.schedule.HELD_BACK) for a replay not shown yet.
  var HELD_BACK = "held back until the deal is complete";
  var PALETTE = ["#1e5aa8", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#ad1457", "#558b2f", "#283593"];
  var SUITS = { c: "♣", d: "♦", h: "♥", s: "♠" };
  var app = document.getElementById("app");

  // ------------------------------------------------------------ DOM helpers

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] === null || attrs[k] === undefined) continue;
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
        else node.setAttribute(k, attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function setChildren(node) {
    node.replaceChildren();
    for (var i = 1; i < arguments.length; i++) add(node, arguments[i]);
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function pct(x) { return (100 * x).toFixed(0) + "%"; }
  function fix(x, n) { return x === null || x === undefined ? "–" : Number(x).toFixed(n); }
  function num(v) { return v === null || v === undefined ? "" : String(Math.round(v * 10) / 10); }

  // ------------------------------------------------------------ cards

  function cardLabel(text) {
    var r = text.charAt(0), s = text.charAt(1);
    return (r === "T" ? "10" : r) + (SUITS[s] || s);
  }
  function isRed(text) { var s = text.charAt(1); return s === "d" || s === "h"; }
  function card(text, extra) {
    return el("span", { cls: "card" + (isRed(text) ? " red" : "") + (extra ? " " + extra : ""), "data-card": text, title: text }, cardLabel(text));
  }
  function back(extra) { return el("span", { cls: "card back" + (extra ? " " + extra : ""), "data-back": "1" }); }
  function cardText(text) {
    if (!text) return "?";
    return el("span", { cls: "cardtext" + (isRed(text) ? " red" : ""), "data-cardtext": text }, cardLabel(text));
  }

  // ------------------------------------------------------------ data access

  function getJSON(url) {
    return fetch(url, { cache: "no-store" }).then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) {
          var e = new Error(body && body.error ? body.error : r.status + " " + r.statusText);
          e.heldBack = !!(body && body.held_back);
          throw e;
        }
        return body;
      });
    });
  }
  var replayWaiters = {};
  var replayStore = (DATA && DATA.replays) || {};
  window.THIRTYONE_REPLAY = function (id, views) {
    replayStore[id] = views;
    (replayWaiters[id] || []).forEach(function (w) { w[0](views); });
    delete replayWaiters[id];
  };
  function loadViews(id) {
    if (replayStore[id]) return Promise.resolve(replayStore[id]);
    return new Promise(function (resolve, reject) {
      var first = !replayWaiters[id];
      (replayWaiters[id] = replayWaiters[id] || []).push([resolve, reject]);
      if (!first) return;
      var s = document.createElement("script");
      s.src = "data/replays/" + encodeURIComponent(id) + ".js";
      s.onerror = function () {
        (replayWaiters[id] || []).forEach(function (w) { w[1](new Error("no replay of match " + id + " in this export")); });
        delete replayWaiters[id];
      };
      document.head.appendChild(s);
    });
  }
  var api = {
    standings: function () { return DATA ? Promise.resolve(DATA.standings) : getJSON("api/standings"); },
    matches: function (q) {
      if (!DATA) {
        var p = new URLSearchParams({ sort: q.sort, desc: q.desc ? "1" : "0", page: String(q.page), per: String(q.per) });
        if (q.bot) p.set("bot", q.bot);
        return getJSON("api/matches?" + p.toString());
      }
      return Promise.resolve(localPage(DATA.matches || [], q));
    },
    replay: function (id, view) {
      if (!DATA) return getJSON("api/replay/" + encodeURIComponent(id) + "?view=" + encodeURIComponent(view) + (state.analysis ? "&analysis=1" : ""));
      var listed = (DATA.matches || []).filter(function (m) { return m.id === id; })[0];
      if (listed && listed.held_back) {
        var e = new Error("the replay of match " + listed.key + " is " + HELD_BACK + ": every rotation of a deal is dealt the same cards, and another rotation of this one is still to be played");
        e.heldBack = true;
        return Promise.reject(e);
      }
      return loadViews(id).then(function (views) {
        if (!views[view]) throw new Error("no view " + view + " of match " + id);
        return views[view];
      });
    },
  };
  function localPage(all, q) {
    var rows = all.filter(function (m) { return !q.bot || m.seats.indexOf(q.bot) >= 0; });
    var field = { key: "key", finished: "finished_at", duration: "duration_s", rounds: "rounds" }[q.sort] || "key";
    rows.sort(function (a, b) {
      var x = a[field], y = b[field];
      var c = x < y ? -1 : x > y ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
      return q.desc ? -c : c;
    });
    var bots = {};
    all.forEach(function (m) { m.seats.forEach(function (s) { bots[s] = 1; }); });
    var pages = Math.max(1, Math.ceil(rows.length / q.per));
    return { total: rows.length, page: q.page, per: q.per, pages: pages, sort: q.sort, desc: q.desc, bot: q.bot,
      rows: rows.slice((q.page - 1) * q.per, q.page * q.per), bots: Object.keys(bots).sort() };
  }

  // ------------------------------------------------------------ routing

  var state = { standings: null, signature: null, route: null, replay: null, timer: null, analysis: false };

  function parseHash() {
    var h = location.hash.replace(/^#\/?/, "");
    var qi = h.indexOf("?");
    var path = qi >= 0 ? h.slice(0, qi) : h;
    var query = new URLSearchParams(qi >= 0 ? h.slice(qi + 1) : "");
    var parts = path.split("/").map(decodeURIComponent);
    return { page: parts[0] || (MODE === "single" ? "replay" : "standings"), parts: parts, query: query };
  }

  function route() {
    stopPlay();
    var r = parseHash();
    state.route = r;
    document.querySelectorAll("#nav a").forEach(function (a) { a.classList.toggle("active", a.id === "nav-" + r.page); });
    if (MODE === "single" && r.page !== "replay") {
      // One match and nothing else: "#step=N" names a moment of it (a link to share); any
      // other fragment says it is unknown and shows the replay from its start.
      var m = /^step=(\d+)$/.exec(r.parts[0]);
      return showReplay(DATA.match, "omni", m ? Math.max(0, parseInt(m[1], 10) - 1) : 0, m ? null : r.parts[0]);
    }
    if (r.page === "matches") return showMatches(r.query);
    if (r.page === "replay") {
      var id = r.parts[1] || (DATA && DATA.match);
      return showReplay(id, r.parts[2] || "omni", parseInt(r.parts[3] || "0", 10) || 0);
    }
    if (r.page !== "standings") return unknownPage(r.parts[0]);
    return showStandings();
  }

  function unknownPage(name) {
    setChildren(app, el("p", { cls: "bad", id: "error" }, "There is no page '" + name + "' here. "),
      el("p", null, el("a", { href: "#/standings" }, "the standings"), " · ", el("a", { href: "#/matches" }, "the matches")));
  }

  function fail(e) {
    if (e && e.heldBack) {
      // Not a failure: the replay is shown once the deal's other rotations are played.
      var back = MODE === "single" ? null : el("p", null, el("a", { href: "#/matches" }, "← matches"));
      return setChildren(app, back, el("p", { cls: "warn", id: "held-back" }, "Not yet: " + e.message + "."));
    }
    setChildren(app, el("p", { cls: "bad", id: "error" }, "Cannot show this page: " + (e && e.message ? e.message : String(e))));
  }

  // ------------------------------------------------------------ standings

  function showStandings() {
    var go = state.standings ? Promise.resolve(state.standings) : api.standings();
    return go.then(function (st) { state.standings = st; state.signature = st.signature; renderStandings(st); }).catch(fail);
  }

  function renderStandings(st) {
    var src = st.source || {};
    document.getElementById("source").textContent = src.folder ? src.folder + (src.kind === "logs" ? " (match logs)" : "") : "";
    var prog = st.progress || {};
    var head = [];
    if (prog.scheduled !== null && prog.scheduled !== undefined) {
      head.push(el("p", { cls: prog.complete ? "" : "warn", id: "progress" },
        prog.complete ? "Complete: all " + prog.scheduled + " scheduled matches played." : "In progress: " + prog.played + " of " + prog.scheduled + " matches played."));
    } else {
      head.push(el("p", { id: "progress" }, st.matches + " matches."));
    }
    if (st.rules) {
      var set = st.settings || {};
      head.push(el("p", { id: "rules" }, "Rules: " + st.rules + (set.table_size ? " · " + set.table_size + " seats a table" : "") +
        (set.games ? " · " + set.games + " deals a table" : "")));
    }
    if (st.unsandboxed) head.push(el("p", { cls: "bad" }, "The bots ran unsandboxed (sandbox = off)."));
    Object.keys(st.disqualified || {}).forEach(function (b) { head.push(el("p", { cls: "bad" }, "Disqualified " + b + ": " + st.disqualified[b])); });
    if (st.settings) {
      var s = st.settings;
      head.push(el("p", { cls: "muted" }, "Tables of " + s.table_size + ", " + s.games + " deals per table, seed " + (st.seed_hidden ? "hidden until every match is played" : st.seed_text || s.seed) + "."));
    }

    var t = el("table", { cls: "data", id: "standings" },
      el("thead", null, el("tr", null,
        ["#", "bot", "rating", "95% CI", "n", "wins", "win rate (95% CI)", "mean place", "lives/round", "timeouts", "crashes", "illegal", "malformed", "failed starts", "forfeits"]
          .map(function (h, i) { return el("th", { cls: i === 1 ? "l" : "" }, h); }))));
    var body = el("tbody");
    st.standings.forEach(function (r) {
      body.appendChild(el("tr", { "data-bot": r.bot },
        el("td", { "data-field": "rank" }, String(r.rank)),
        el("td", { cls: "l", "data-field": "bot" }, r.bot, r.disqualified ? el("span", { cls: "bad" }, " DQ") : null),
        el("td", { "data-field": "rating", "data-rating": r.rating, "data-low": r.rating_low95, "data-high": r.rating_high95 },
          r.rating === null ? "–" : fix(r.rating, 0)),
        el("td", { "data-field": "rating_ci" }, r.rating === null ? "–" : fix(r.rating_low95, 0) + "–" + fix(r.rating_high95, 0)),
        el("td", { "data-field": "matches" }, String(r.matches)),
        el("td", { "data-field": "wins" }, String(r.wins)),
        el("td", { "data-field": "win_rate", "data-rate": r.win_rate, "data-low": r.win_rate_low95, "data-high": r.win_rate_high95 },
          pct(r.win_rate) + " (" + pct(r.win_rate_low95) + "–" + pct(r.win_rate_high95) + ")"),
        el("td", { "data-field": "mean_placing", "data-value": r.mean_placing }, fix(r.mean_placing, 2)),
        el("td", { "data-field": "lives_lost_per_round" }, fix(r.lives_lost_per_round, 3)),
        ["timeout", "crash", "illegal", "malformed", "start"].map(function (k) { return el("td", { "data-field": "faults_" + k }, String(r["faults_" + k] || 0)); }),
        el("td", { "data-field": "forfeits" }, String(r.forfeits))));
    });
    t.appendChild(body);

    var names = st.standings.map(function (r) { return r.bot; });
    var colors = {};
    names.forEach(function (n, i) { colors[n] = PALETTE[i % PALETTE.length]; });
    var plots = el("div", { cls: "plots" }, ratingPlot(st.history, names, colors), winPlot(st, colors));

    setChildren(app, el("h2", null, "Standings"), head, t,
      el("p", { cls: "muted" }, "Rating: the Plackett-Luce model fitted to every match's placings; 1500 is the field's average and 400 points are odds of 10 to 1 of placing above the other. " +
        "95% CI: its interval, counting the rotations of a deal as one draw of the cards. Win rate interval: Wilson 95%, from the same matches."),
      el("h2", null, "Rating progress and win rates"), plots,
      el("h2", null, "Head to head"), h2hTable(st, names),
      el("p", { cls: "muted" }, "Share of the matches both played in which the row's bot placed above the column's (ties count half)."));
  }

  function legend(names, colors) {
    return el("div", { cls: "legend" }, names.map(function (n) {
      return el("span", null, el("span", { cls: "swatch", style: "background:" + colors[n] }), n);
    }));
  }

  function ratingPlot(history, names, colors) {
    var W = 600, H = 280, L = 44, R = 12, T = 12, B = 30;
    var box = el("div", { cls: "plot", id: "rating-plot" });
    var bots = (history && history.bots) || {};
    var maxX = Math.max(1, (history && history.matches) || 1);
    var lo = Infinity, hi = -Infinity;
    // Points are [match, rating, low, high]; the band is the interval, clipped to a sane
    // range (a bot's first fit, on a match or two, has an interval as wide as the prior's).
    names.forEach(function (n) { (bots[n] || []).forEach(function (p) { lo = Math.min(lo, Math.max(p[2], p[1] - 600)); hi = Math.max(hi, Math.min(p[3], p[1] + 600)); }); });
    if (!isFinite(lo)) { lo = 1400; hi = 1600; }
    if (hi - lo < 1) { hi += 0.5; lo -= 0.5; }
    function X(m) { return L + (W - L - R) * m / maxX; }
    function Y(v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); }
    var s = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "rating over matches" });
    for (var i = 0; i <= 5; i++) {
      var v = lo + (hi - lo) * i / 5, y = Y(v);
      s.appendChild(svg("line", { x1: L, x2: W - R, y1: y, y2: y, stroke: "#e4e1d8" }));
      s.appendChild(svg("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, v.toFixed(0)));
      var m = Math.round(maxX * i / 5), x = X(m);
      s.appendChild(svg("text", { x: x, y: H - B + 16, "text-anchor": "middle" }, String(m)));
    }
    s.appendChild(svg("text", { x: W - R, y: H - 2, "text-anchor": "end" }, "matches played"));
    names.forEach(function (n) {
      var pts = bots[n] || [];
      if (!pts.length) return;
      function clip(v) { return Math.min(hi, Math.max(lo, v)); }
      // A fit holds until the next one, so it is drawn as steps: a slope between two fits
      // would read as a trend between matches that no fit saw.
      var held = [];
      pts.forEach(function (p, i) {
        if (i > 0) held.push([p[0], pts[i - 1][1], pts[i - 1][2], pts[i - 1][3]]);
        held.push(p);
      });
      var up = held.map(function (p) { return X(p[0]).toFixed(1) + "," + Y(clip(p[3])).toFixed(1); });
      var down = held.slice().reverse().map(function (p) { return X(p[0]).toFixed(1) + "," + Y(clip(p[2])).toFixed(1); });
      s.appendChild(svg("polygon", { points: up.concat(down).join(" "), fill: colors[n], "fill-opacity": "0.13", stroke: "none" }));
      s.appendChild(svg("polyline", { points: held.map(function (p) { return X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); }).join(" "),
        fill: "none", stroke: colors[n], "stroke-width": "2", "data-bot": n }));
    });
    add(box, [el("div", null, el("strong", null, "Rating with its 95% interval"),
      el("span", { cls: "muted" }, " fitted to the matches played so far, in schedule order")), s, legend(names, colors)]);
    return box;
  }

  function winPlot(st, colors) {
    var rows = st.standings;
    var W = 460, L = 110, R = 60, row = 26, T = 10, H = T + row * rows.length + 26;
    var box = el("div", { cls: "plot", id: "win-plot" });
    var s = svg("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "win rates" });
    function X(v) { return L + (W - L - R) * v; }
    for (var i = 0; i <= 4; i++) {
      var x = X(i / 4);
      s.appendChild(svg("line", { x1: x, x2: x, y1: T, y2: H - 22, stroke: "#e4e1d8" }));
      s.appendChild(svg("text", { x: x, y: H - 8, "text-anchor": "middle" }, (25 * i) + "%"));
    }
    var size = st.settings && st.settings.table_size;
    if (size) {
      var fx = X(1 / size);
      s.appendChild(svg("line", { x1: fx, x2: fx, y1: T, y2: H - 22, stroke: "#999", "stroke-dasharray": "4 3" }));
    }
    rows.forEach(function (r, i) {
      var y = T + row * i + row / 2;
      s.appendChild(svg("text", { x: L - 6, y: y + 4, "text-anchor": "end" }, r.bot));
      s.appendChild(svg("line", { x1: X(r.win_rate_low95), x2: X(r.win_rate_high95), y1: y, y2: y, stroke: colors[r.bot], "stroke-width": "3" }));
      s.appendChild(svg("circle", { cx: X(r.win_rate), cy: y, r: 5, fill: colors[r.bot], "data-bot": r.bot }));
      s.appendChild(svg("text", { x: W - R + 6, y: y + 4 }, pct(r.win_rate)));
    });
    add(box, [el("div", null, el("strong", null, "Win rate with its 95% interval"),
      size ? el("span", { cls: "muted" }, " (dashed: a fair share, 1 in " + size + ")") : null), s]);
    return box;
  }

  function h2hTable(st, names) {
    var cells = {};
    (st.head_to_head || []).forEach(function (h) { cells[h.bot + "\u0000" + h.opponent] = h; });
    var t = el("table", { cls: "data h2h", id: "h2h" },
      el("thead", null, el("tr", null, el("th", { cls: "l" }, "bot \\ opponent"), names.map(function (n) { return el("th", null, n); }))));
    var body = el("tbody");
    names.forEach(function (a) {
      body.appendChild(el("tr", { "data-bot": a }, el("td", { cls: "l" }, el("strong", null, a)), names.map(function (b) {
        if (a === b) return el("td", { cls: "self" }, "");
        var h = cells[a + "\u0000" + b];
        if (!h) return el("td", { cls: "muted" }, "–");
        return el("td", { "data-opponent": b, "data-score": h.score, title: h.better + " better, " + h.equal + " equal, " + h.worse + " worse of " + h.matches },
          pct(h.score) + " ", el("span", { cls: "muted" }, "(" + h.matches + ")"));
      })));
    });
    t.appendChild(body);
    return t;
  }

  // ------------------------------------------------------------ live refresh (server mode)

  function poll() {
    api.standings().then(function (st) {
      var changed = st.signature !== state.signature;
      state.standings = st;
      state.signature = st.signature;
      var prog = st.progress || {};
      var live = document.getElementById("live");
      live.textContent = (prog.scheduled && !prog.complete ? "live · " + prog.played + "/" + prog.scheduled + " · " : "") + "updated " + new Date().toLocaleTimeString() + (st.stale ? " · recomputing the standings…" : "");
      if (!changed || !state.route) return;
      if (state.route.page === "standings") renderStandings(st);
      else if (state.route.page === "matches") showMatches(state.route.query);
    }).catch(function () { document.getElementById("live").textContent = "server not answering"; });
  }

  // ------------------------------------------------------------ the match list

  function matchQuery(q) {
    return { bot: q.get("bot") || "", sort: q.get("sort") || "key", desc: q.get("desc") === "1", page: Math.max(1, parseInt(q.get("page") || "1", 10) || 1), per: 50 };
  }
  function matchHash(q) {
    var p = new URLSearchParams();
    if (q.bot) p.set("bot", q.bot);
    if (q.sort !== "key") p.set("sort", q.sort);
    if (q.desc) p.set("desc", "1");
    if (q.page > 1) p.set("page", String(q.page));
    var s = p.toString();
    return "#/matches" + (s ? "?" + s : "");
  }

  function showMatches(query) {
    var q = matchQuery(query);
    return api.matches(q).then(function (res) { renderMatches(q, res); }).catch(fail);
  }

  function renderMatches(q, res) {
    var filter = el("select", { id: "bot-filter", onchange: function (e) { location.hash = matchHash(Object.assign({}, q, { bot: e.target.value, page: 1 })); } },
      el("option", { value: "" }, "every bot"), res.bots.map(function (b) {
        var o = el("option", { value: b }, b);
        if (b === q.bot) o.selected = true;
        return o;
      }));
    function th(label, key) {
      if (!key) return el("th", { cls: "l" }, label);
      var mark = q.sort === key ? (q.desc ? " ▼" : " ▲") : "";
      return el("th", { cls: "sortable", "data-sort": key, onclick: function () {
        location.hash = matchHash(Object.assign({}, q, { sort: key, desc: q.sort === key ? !q.desc : false, page: 1 }));
      } }, label + mark);
    }
    var t = el("table", { cls: "data", id: "matches" }, el("thead", null, el("tr", null,
      th("match", "key"), th("seats (placing)"), th("winner"), th("rounds", "rounds"), th("faults"), th("time", "duration"), th("finished", "finished"))));
    var body = el("tbody");
    res.rows.forEach(function (m) {
      body.appendChild(el("tr", { "data-id": m.id },
        el("td", { cls: "l" }, m.held_back
          ? el("span", { "data-match": m.id, "data-held-back": "1", title: "replay " + HELD_BACK }, m.key, el("span", { cls: "muted" }, " (replay " + HELD_BACK + ")"))
          : el("a", { href: "#/replay/" + encodeURIComponent(m.id) + "/omni/0", "data-match": m.id }, m.key)),
        el("td", { cls: "l" }, m.seats.map(function (s, i) { return (i ? ", " : "") + s + " (" + m.placings[i] + ")"; }).join("")),
        el("td", { cls: "l" }, m.winner || "–"),
        el("td", null, m.rounds === null ? "" : String(m.rounds)),
        el("td", { cls: m.faults ? "bad" : "" }, String(m.faults) + (m.forfeits ? " (" + m.forfeits + " forfeit)" : "")),
        el("td", null, fix(m.duration_s, 1) + " s"),
        el("td", null, m.finished_at || "")));
    });
    t.appendChild(body);
    var nav = el("div", { cls: "controls" },
      el("button", { id: "prev-page", disabled: res.page <= 1 ? "disabled" : null, onclick: function () { location.hash = matchHash(Object.assign({}, q, { page: res.page - 1 })); } }, "◀ previous"),
      el("span", { id: "page-info" }, "page " + res.page + " of " + res.pages + " · " + res.total + " matches"),
      el("button", { id: "next-page", disabled: res.page >= res.pages ? "disabled" : null, onclick: function () { location.hash = matchHash(Object.assign({}, q, { page: res.page + 1 })); } }, "next ▶"));
    // Logs of a folder that have no result to show (unreadable, cut short, diverging), with why.
    var skipped = res.skipped || (DATA && DATA.standings && DATA.standings.skipped) || [];
    var notes = skipped.length ? el("div", { id: "skipped" }, el("p", { cls: "warn" }, skipped.length + " log" + (skipped.length > 1 ? "s" : "") + " not shown:"),
      el("ul", null, skipped.map(function (x) { return el("li", { "data-file": x.file }, x.file + ": " + x.reason); }))) : null;
    setChildren(app, el("h2", null, "Matches"), el("div", { cls: "controls" }, el("label", null, "bot ", filter)), t, nav, notes);
  }

  // ------------------------------------------------------------ the replay viewer

  function label(rep, seat) {
    var l = rep.header.labels;
    return seat === null || seat === undefined ? "?" : "#" + seat + " " + (l[seat] || "");
  }

  function showReplay(id, view, step, unknown) {
    if (!id) return fail(new Error("no match named"));
    var cached = state.replay && state.replay.id === id && state.replay.view === view;
    var go = cached ? Promise.resolve(state.replay.data) : api.replay(id, view);
    return go.then(function (data) {
      state.replay = { id: id, view: view, data: data, step: Math.min(Math.max(0, step), Math.max(0, data.steps.length - 1)) };
      renderReplay();
      if (unknown) {
        app.insertBefore(el("p", { cls: "bad", id: "unknown-route" }, "There is no page '" + unknown +
          "' in this replay: here it is from its start (#step=N opens step N)."), app.firstChild);
      }
    }).catch(fail);
  }

  function setStep(i, push) {
    var r = state.replay;
    if (!r) return;
    r.step = Math.min(Math.max(0, i), r.data.steps.length - 1);
    var h = "#/replay/" + encodeURIComponent(r.id) + "/" + r.view + "/" + r.step;
    if (location.hash !== h) history.replaceState(null, "", h);
    renderReplayBody();
    if (push) { /* kept for symmetry: the fragment always names the moment */ }
  }

  function roundStarts(steps) {
    var out = [];
    steps.forEach(function (s, i) { if (s.kind === "deal") out.push(i); });
    return out;
  }
  function nextRound(dir) {
    var r = state.replay, starts = roundStarts(r.data.steps);
    if (dir > 0) {
      for (var i = 0; i < starts.length; i++) if (starts[i] > r.step) return setStep(starts[i]);
      return setStep(r.data.steps.length - 1);
    }
    for (var j = starts.length - 1; j >= 0; j--) if (starts[j] < r.step) return setStep(starts[j]);
    return setStep(0);
  }
  function stopPlay() {
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    var b = document.getElementById("play");
    if (b) { b.textContent = "▶ play"; b.classList.remove("on"); }
  }
  function togglePlay() {
    if (state.timer) return stopPlay();
    var r = state.replay;
    if (!r) return;
    if (r.step >= r.data.steps.length - 1) setStep(0);
    state.timer = setInterval(function () {
      if (!state.replay || state.replay.step >= state.replay.data.steps.length - 1) return stopPlay();
      setStep(state.replay.step + 1);
    }, 700);
    var b = document.getElementById("play");
    if (b) { b.textContent = "⏸ pause"; b.classList.add("on"); }
  }
  function toggleAnalysis() {
    // Served only: a page written to a file carries the analysis it was made with, if any.
    state.analysis = !state.analysis;
    var b = document.getElementById("analysis-toggle");
    if (b) { b.textContent = "analysing…"; b.disabled = true; }
    switchView(state.replay.view);
  }
  function switchView(view) {
    var r = state.replay;
    var line = r.data.steps.length ? r.data.steps[r.step].at.line : 0;
    api.replay(r.id, view).then(function (data) {
      // The same moment in the other view: its last step at or before the line shown now.
      var at = 0;
      data.steps.forEach(function (s, i) { if (s.at && s.at.line <= line) at = i; });
      state.replay = { id: r.id, view: view, data: data, step: at };
      history.replaceState(null, "", "#/replay/" + encodeURIComponent(r.id) + "/" + view + "/" + at);
      renderReplay();
    }).catch(fail);
  }

  function renderReplay() {
    var r = state.replay, d = r.data, h = d.header;
    var views = el("div", { cls: "controls", id: "views" }, el("span", null, "view: "),
      el("button", { cls: r.view === "omni" ? "on" : "", "data-view": "omni", onclick: function () { switchView("omni"); } }, "everyone (omniscient)"),
      h.labels.map(function (l, s) {
        return el("button", { cls: r.view === String(s) ? "on" : "", "data-view": String(s), onclick: function () { switchView(String(s)); } }, "seat " + s + ": " + l);
      }));
    if (!DATA) {
      add(views, el("button", { id: "analysis-toggle", cls: state.analysis ? "on" : "", title: "judge each decision against the position evaluator's best (docs/analysis.md)",
        onclick: toggleAnalysis }, state.analysis ? "analysis: on" : "analysis: off"));
    }
    var n = d.steps.length;
    var controls = el("div", { cls: "controls", id: "controls" },
      el("button", { id: "round-back", title: "previous round (↑)", onclick: function () { nextRound(-1); } }, "« round"),
      el("button", { id: "step-back", title: "previous step (←)", onclick: function () { setStep(r.step - 1); } }, "◀ step"),
      el("button", { id: "play", title: "play / pause (space)", onclick: togglePlay }, "▶ play"),
      el("button", { id: "step-forward", title: "next step (→)", onclick: function () { setStep(state.replay.step + 1); } }, "step ▶"),
      el("button", { id: "round-forward", title: "next round (↓)", onclick: function () { nextRound(1); } }, "round »"),
      el("input", { type: "range", id: "scrub", min: "0", max: String(Math.max(0, n - 1)), value: String(r.step),
        oninput: function (e) { setStep(parseInt(e.target.value, 10)); } }),
      el("span", { id: "step-info" }),
      el("span", { cls: "muted keys", id: "key-hints" }, " keys: ", el("kbd", null, "←"), " ", el("kbd", null, "→"), " step, ", el("kbd", null, "↑"), " ", el("kbd", null, "↓"), " round, ", el("kbd", null, "space"), " play"));
    var title = el("h2", null, "Match " + h.match_id);
    var info = el("p", { cls: "muted" }, h.players + " players · " + h.rules_text + " rules · time " + h.time_text +
      (h.seed !== null && h.seed !== undefined ? " · seed " + h.seed : "") +
      (d.viewer !== null ? " · as seen by " + label(d, d.viewer) + ": its own cards and the public table" : ""));
    var notes = [];
    if (d.analysis) notes.push(analysisSummary(d));
    if (d.divergence) notes.push(el("p", { cls: "bad" }, "The log diverges from the game model: " + d.divergence));
    if (d.stops) notes.push(el("p", { cls: "warn" }, "Incomplete: the log " + d.stops + "."));
    var back = MODE === "single" ? null : el("p", null, el("a", { href: "#/matches" }, "← matches"));
    setChildren(app, back, title, info, notes, views, controls,
      el("div", { cls: "layout" }, el("div", null, el("div", { id: "table", cls: "felt" }), el("div", { id: "event", cls: "event" }), el("div", { id: "panel" })),
        el("div", null, el("div", { cls: "muted" }, "this round so far"), el("div", { id: "steps", cls: "steps" }))));
    renderReplayBody();
  }

  function latencyText(us) { return us === null || us === undefined ? "" : (us / 1000).toFixed(us < 10000 ? 2 : 1) + " ms"; }

  function lastThinking(d, upto, seat) {
    for (var i = upto; i >= 0; i--) {
      var s = d.steps[i];
      if (s.kind === "deal" && i < upto) return null;
      if (s.kind === "action" && s.seat === seat && s.latency_us !== null && s.latency_us !== undefined) return s.latency_us;
    }
    return null;
  }

  function renderReplayBody() {
    var r = state.replay, d = r.data, n = d.steps.length;
    var scrub = document.getElementById("scrub");
    if (!n) {
      document.getElementById("event").textContent = "Nothing to replay (the log stops before the first deal).";
      return;
    }
    var step = d.steps[r.step], f = d.frames[r.step];
    if (scrub) scrub.value = String(r.step);
    document.getElementById("step-info").textContent = "step " + (r.step + 1) + " of " + n + " · round " + f.round + " · turn " + f.turn;
    document.getElementById("step-back").disabled = r.step <= 0;
    document.getElementById("round-back").disabled = r.step <= 0;
    document.getElementById("step-forward").disabled = r.step >= n - 1;
    document.getElementById("round-forward").disabled = r.step >= n - 1;

    // the table: one panel per seat, the stock and the discard pile in the middle
    var tableEl = document.getElementById("table");
    var seats = [];
    var drawn = step.kind === "action" && (step.action.kind === "draw_stock" || step.action.kind === "draw_discard") ? step.card : null;
    for (var s = 0; s < d.header.players; s++) {
      var tags = [];
      if (f.dealer === s) tags.push(el("span", null, "dealer"));
      if (f.knocker === s) tags.push(el("span", { cls: "knock" }, "knocked"));
      if (f.thirty_one.indexOf(s) >= 0) tags.push(el("span", { cls: "t31" }, "31"));
      if (f.faults[s]) tags.push(el("span", { cls: "fault" }, f.faults[s] + " fault" + (f.faults[s] > 1 ? "s" : "")));
      if (!f.in_game[s]) tags.push(el("span", { cls: "outtag" }, "out"));
      if (f.placings) tags.push(el("span", null, "place " + f.placings[s]));
      var shown = f.shown[String(s)];
      var cards = [], value = null;
      if (shown) { cards = shown.cards.map(function (c) { return card(c, c === drawn ? "new" : ""); }); value = shown.value; }
      else if (f.hands[s]) { cards = f.hands[s].map(function (c) { return card(c, c === drawn && step.seat === s ? "new" : ""); }); value = f.values[s]; }
      else { for (var k = 0; k < f.counts[s]; k++) cards.push(back()); }
      var tok = f.tokens[s];
      var tokens = !f.in_game[s] ? "out of the match" : tok === 0 ? "on the bus" : (tok <= 8 ? new Array(tok + 1).join("●") : tok + " lives");
      // Playing for a pot: net chips instead of lives (public).
      var chipsTag = f.chips ? el("span", { cls: "chips", "data-chips": String(f.chips[s]) }, "chips " + signed(f.chips[s])) : null;
      if (f.dummy_taker === s) tags.push(el("span", null, "took the dummy"));
      var think = lastThinking(d, r.step, s);
      seats.push(el("div", { cls: "seat" + (f.active === s ? " active" : "") + (f.in_game[s] ? "" : " out") + (d.viewer === s ? " viewer" : ""), "data-seat": String(s) },
        el("div", null, el("span", { cls: "name" }, label(d, s)), " ",
          chipsTag || el("span", { cls: "tokens", "data-tokens": String(tok) }, tokens), chipsTag && !f.in_game[s] ? " (out)" : null),
        el("div", { cls: "tags" }, tags),
        el("div", { cls: "hand", "data-seat-hand": String(s) }, cards, value !== null && value !== undefined ? el("span", { cls: "value" }, num(value)) : null),
        think !== null ? el("div", { cls: "think" }, "last decision: " + latencyText(think)) : null));
    }
    var middle = [];
    if (f.widow && f.widow.length) {
      // The widow game: three cards face up, no stock and no discard pile.
      middle.push(el("div", null, el("div", { id: "widow", cls: "widow" }, f.widow.map(function (c) { return card(c); })),
        el("div", { cls: "pile-label" }, "widow (face up)")));
    } else {
      var pile = el("div", { cls: "pile", id: "pile" }, f.pile.map(function (c, i) { return card(c, i === f.pile.length - 1 ? "" : "small"); }));
      middle.push(el("div", null, el("div", { id: "stock" }, f.stock > 0 ? back() : el("span", { cls: "card", style: "opacity:.3" }, "∅")),
          el("div", { cls: "pile-label", id: "stock-size", "data-stock": String(f.stock) }, "stock: " + f.stock)),
        el("div", null, pile, el("div", { cls: "pile-label", "data-pile": String(f.pile_size) }, "discard pile: " + f.pile_size)));
    }
    if (f.dummy_size) {
      // Face down: backs, unless this view may see its cards (the omniscient one).
      var dummyCards = f.dummy_cards && f.dummy_cards.length ? f.dummy_cards.map(function (c) { return card(c, "small"); }) :
        Array.apply(null, Array(f.dummy_size)).map(function () { return back("small"); });
      middle.push(el("div", null, el("div", { id: "dummy", "data-dummy": String(f.dummy_size) }, dummyCards),
        el("div", { cls: "pile-label" }, "dummy (face down)")));
    } else if (f.face_up && f.face_up.length) {
      middle.push(el("div", null, el("div", { id: "face-up" }, f.face_up.map(function (c) { return card(c, "small"); })),
        el("div", { cls: "pile-label" }, "face up: " + label(d, f.dummy_taker) + "'s old hand, out of play")));
    }
    if (f.pot !== null && f.pot !== undefined) {
      middle.push(el("div", null, el("div", { id: "pot", cls: "pot", "data-pot": String(f.pot) }, String(f.pot)), el("div", { cls: "pile-label" }, "pot")));
    }
    setChildren(tableEl, el("div", { cls: "center" }, middle), seats);

    var ev = document.getElementById("event");
    ev.className = "event" + (step.kind === "fault" || step.kind === "forfeit" ? " fault" : "");
    setChildren(ev, describe(d, step));
    setChildren(document.getElementById("panel"), panel(d, step, f));

    // the round's steps so far (never the ones to come), the current one marked
    var list = document.getElementById("steps");
    var from = 0;
    roundStarts(d.steps).forEach(function (i) { if (i <= r.step) from = i; });
    var items = [];
    for (var i = from; i <= r.step; i++) {
      (function (i) {
        var st = d.steps[i];
        items.push(el("div", { cls: (i === r.step ? "cur " : "") + st.kind, "data-step": String(i), onclick: function () { setStep(i); } }, describe(d, st)));
      })(i);
    }
    setChildren(list, items);
    var cur = list.querySelector(".cur");
    if (cur && cur.scrollIntoView) cur.scrollIntoView({ block: "nearest" });
  }

  var ACTION = { knock: "knocks", pass: "passes on the empty stock", call: "calls under the gun: showdown at once" };
  var BLITZ = { swap_upcard: " swaps the up-card in to 31", swap_hand: " takes the dummy at 31", swap_widow: " swaps with the widow to 31" };
  function signed(n) { return n > 0 ? "+" + n : String(n); }
  function cardList(cs) { return cs.map(function (c, i) { return [i ? " " : "", cardText(c)]; }); }

  function describe(d, s) {
    var out = el("span", { "data-kind": s.kind });
    if (s.kind === "deal") {
      add(out, "Round " + s.at.round_no + ": " + label(d, s.dealer) + " deals; ");
      if (s.widow && s.widow.length) add(out, ["the widow is ", cardList(s.widow), " (face up)"]);
      else add(out, ["the up-card is ", cardText(s.upcard), ", " + s.stock_size + " cards in the stock"]);
      if (s.dummy_size) add(out, "; the dummy: " + s.dummy_size + " cards face down");
      if (s.antes && s.antes.length) add(out, "; antes paid, the pot is " + s.pot + (s.pot_carried ? " (" + s.pot_carried + " carried)" : ""));
    } else if (s.kind === "action") {
      var k = s.action.kind;
      add(out, label(d, s.seat) + " ");
      if (k === "draw_stock") add(out, s.card ? ["draws ", cardText(s.card), " from the stock"] : "draws from the stock");
      else if (k === "draw_discard") add(out, ["takes ", cardText(s.card), " from the discard pile"]);
      else if (k === "discard") add(out, ["discards ", cardText(s.card)]);
      else if (k === "pass" && s.dealer_option) add(out, "keeps the hand (dealer's option)");
      else if (k === "swap_upcard") add(out, ["takes the up-card ", cardList(s.taken || []), ", turns ", cardText(s.card), " face up (dealer's option)"]);
      else if (k === "swap_hand") add(out, ["takes the dummy", s.taken ? [" ", cardList(s.taken)] : "", s.face_up && s.face_up.length ? ["; the old hand ", cardList(s.face_up), " lies face up"] : ""]);
      else if (k === "swap_widow") add(out, ["gives ", cardText(s.card), " to the widow, takes ", cardList(s.taken || [])]);
      else add(out, ACTION[k] || s.action.text);
      if (s.hand && s.hand.value !== null && s.hand.value !== undefined) add(out, " → " + num(s.hand.value));
      if (s.by_referee) add(out, el("span", { cls: "bad" }, " (played by the referee)"));
      if (s.latency_us !== null && s.latency_us !== undefined) add(out, el("span", { cls: "muted", "data-latency": String(s.latency_us) }, " · thought " + latencyText(s.latency_us)));
      if (s.analysis) add(out, judgement(d, s.analysis));
    } else if (s.kind === "restock") {
      add(out, ["The stock is empty: the discard pile becomes a new stock of " + s.stock_size + " cards", s.top_discard ? [" (", cardText(s.top_discard), " stays face up)"] : ""]);
    } else if (s.kind === "fault") {
      var fl = s.fault;
      add(out, [el("strong", { cls: "bad" }, "FAULT " + fl.kind), " by " + label(d, fl.seat) + ", strike " + fl.strike + " of " + s.max_strikes + ": " + fl.message]);
      if (fl.default_action) add(out, " → the referee plays " + fl.default_action.text);
      else if (fl.forfeited) add(out, el("strong", { cls: "bad" }, " → the seat forfeits"));
    } else if (s.kind === "forfeit") {
      add(out, [el("strong", { cls: "bad" }, label(d, s.seat) + " forfeits the match"), s.reason ? " (" + s.reason + ")" : ""]);
      if (s.dead_hand) add(out, ["; its hand ", s.dead_hand.map(function (c) { return [cardText(c), " "]; }), "is out of play"]);
    } else if (s.kind === "thirty_one") {
      add(out, s.seats.map(function (x, i) { return (i ? " and " : "") + label(d, x); }).join("") + (s.natural ? " has a dealt 31!" : (BLITZ[s.by] || " discards to 31") + ": blitz!"));
    } else if (s.kind === "round_end") {
      add(out, endTitle(d, s));
    } else if (s.kind === "result") {
      if (s.winner !== null && s.winner !== undefined) add(out, label(d, s.winner) + " wins after " + s.rounds + " round" + (s.rounds === 1 ? "" : "s") + (s.chips && s.chips.length ? ", chips " + signed(s.chips[s.winner]) : ""));
      else add(out, "No winner (" + s.reason + ") after " + s.rounds + " rounds");
    } else {
      add(out, s.text); // a kind this viewer does not draw itself
    }
    return out;
  }

  var VIEW_WORD = { seat: "seat's view", deal: "deal's view" };

  // One decision judged (docs/analysis.md): per view, "best" or the best action and the
  // expected loss of the one taken, flagged when it is a mistake or a blunder.
  function judgement(d, views) {
    var unit = d.analysis ? d.analysis.unit : "lives";
    var out = el("span", { cls: "analysis", "data-analysis": "1" });
    Object.keys(views).forEach(function (v, i) {
      var j = views[v];
      add(out, [i ? " · " : " — ", VIEW_WORD[v] || v, ": "]);
      if (!j.loss) { add(out, el("span", { cls: "good", "data-view": v, "data-loss": "0" }, "best")); return; }
      add(out, el("span", { cls: j.flag || "", "data-view": v, "data-loss": String(j.loss), "data-flag": j.flag || "" },
        "best " + j.best + ", −" + fix(j.loss, 2) + " ± " + fix(j.se, 2) + " " + unit + (j.flag ? " (" + j.flag + ": " + j.kind + ")" : "")));
    });
    return out;
  }

  function analysisSummary(d) {
    var a = d.analysis;
    var box = el("div", { id: "analysis-summary", cls: "muted" }, "Analysis (reference policy " + a.policy + ", " + a.samples + " rollouts per action; mistake from " +
      fix(a.thresholds.mistake, 2) + ", blunder from " + fix(a.thresholds.blunder, 2) + " " + a.unit + "): ");
    (a.views || []).forEach(function (v) {
      (a.summaries[v] || []).forEach(function (s) {
        add(box, el("div", { "data-summary": v + "/" + s.seat }, VIEW_WORD[v] + ", " + label(d, s.seat) + ": " + fix(s.per_100, 1) + " " + a.unit +
          " given away per 100 decisions, accuracy " + fix(s.accuracy, 0) + "%, " + s.mistakes + " mistakes, " + s.blunders + " blunders" +
          (Object.keys(s.kinds).length ? "; most often: " + Object.keys(s.kinds).slice(0, 3).join(", ") : "")));
      });
    });
    return box;
  }

  function endTitle(d, e) {
    var knocked = e.knocker !== null && e.knocker !== undefined ? label(d, e.knocker) + " knocked" : "";
    if (e.end === "knock") return "Showdown after " + (knocked ? label(d, e.knocker) + "'s knock" : "a knock");
    if (e.end === "empty_stock") return "Showdown: " + (e.ended_by !== null ? label(d, e.ended_by) : "a seat") + " passed on the empty stock" + (knocked ? "; " + knocked + " earlier" : "");
    if (e.end === "max_turns") return "Showdown: the turn limit (" + e.turns + " turns) was reached";
    if (e.end === "call") return "Showdown after " + label(d, e.knocker) + "'s call under the gun";
    if (e.end === "abandoned") return "Round abandoned: fewer than two seats are left in it";
    if (e.end === "natural_31") return "The round ends on a dealt 31";
    if (e.end === "blitz") return "The round ends on a blitz";
    return "End of the round (" + e.end + ")";
  }

  var WHY = { other_31: "another seat has 31", lowest: "lowest", knocker_alone: "knocker, alone lowest", knocker_tied: "knocker, tied lowest" };

  function panel(d, step, f) {
    if (step.kind === "round_end") {
      var box = el("div", { cls: "showdown", id: "showdown" }, el("strong", null, endTitle(d, step)));
      var t = el("table", { cls: "data" });
      step.shown.forEach(function (h) {
        var marks = [];
        var potGame = step.chips_after && step.chips_after.length;
        if (h.seat === step.knocker) marks.push(step.end === "call" ? "caller" : "knocker");
        if (h.seat === step.dummy_taker) marks.push("took the dummy");
        if (potGame) { if (step.showdown && step.winners.indexOf(h.seat) >= 0) marks.push("highest"); }
        else if (step.showdown && h.value === step.lowest) marks.push("lowest");
        t.appendChild(el("tr", { "data-seat": String(h.seat) }, el("td", { cls: "l" }, label(d, h.seat)),
          el("td", { cls: "l" }, h.cards.map(function (c) { return card(c, "small"); })),
          el("td", { "data-value": h.value }, num(h.value)), el("td", { cls: "l" }, marks.join(", "))));
      });
      add(box, t);
      step.losses.forEach(function (l) {
        add(box, el("div", { "data-loss": String(l.seat) }, label(d, l.seat) + ": " + (WHY[l.reason] || l.reason) +
          (step.lowest !== null && l.reason !== "other_31" ? " at " + num(step.lowest) : "") + " → loses " + l.lives +
          " · tokens " + l.tokens_before + " → " + (l.eliminated ? "out of the match" : l.tokens_after === 0 ? "0, on the bus" : l.tokens_after)));
      });
      if (step.knocker_safe) add(box, el("div", null, label(d, step.knocker) + ": knocker, tied lowest: loses nothing"));
      if (step.sudden_death) add(box, el("div", { cls: "warn" }, "Sudden death: everyone still in stays in at 0 tokens"));
      if (step.eliminated.length) add(box, el("div", { cls: "bad" }, "Out: " + step.eliminated.map(function (s) { return label(d, s); }).join(", ")));
      if (step.widow && step.widow.length) add(box, el("div", null, "Widow: ", step.widow.map(function (c) { return card(c, "small"); })));
      if (step.face_up && step.face_up.length) add(box, el("div", null, "Face up (" + label(d, step.dummy_taker) + "'s old hand): ", step.face_up.map(function (c) { return card(c, "small"); })));
      if (step.dummy && step.dummy.length) add(box, el("div", null, "Dummy, never taken: ", step.dummy.map(function (c) { return card(c, "small"); })));
      if (step.chips_after && step.chips_after.length) {
        var award = "Pot " + step.pot + " → ";
        if (!step.winners.length) award += "nobody wins it";
        else {
          var each = step.chips_won[step.winners[0]];
          var chipsText = each + (each === 1 ? " chip" : " chips");
          award += step.winners.map(function (s) { return label(d, s); }).join(" and ") + (step.winners.length > 1 ? " share it: " + chipsText + " each" : " wins " + chipsText);
        }
        if (step.high_card_tie_break) award += " · a tie on value, broken by card rank";
        if (step.carried) award += " · " + step.carried + " carried to the next round";
        add(box, el("div", { id: "pot-award" }, award));
        add(box, el("div", { "data-chips-after": "1" }, "Chips: " + step.chips_after.map(function (c, s) { return label(d, s) + " " + signed(c); }).join(" · ")));
      }
      return box;
    }
    if (step.kind === "result") {
      var res = el("div", { cls: "showdown", id: "result" }, el("strong", null, "Result"));
      var rt = el("table", { cls: "data" }, el("tr", null, el("th", null, "place"), el("th", { cls: "l" }, "seat"),
        step.chips && step.chips.length ? el("th", null, "chips") : null,
        step.stats ? [el("th", null, "decisions"), el("th", null, "faults"), el("th", null, "mean ms"), el("th", null, "max ms")] : null, el("th", { cls: "l" }, "")));
      var order = step.placings.map(function (p, s) { return s; }).sort(function (a, b) { return step.placings[a] - step.placings[b] || a - b; });
      order.forEach(function (s) {
        var st = step.stats ? step.stats[s] : null;
        var note = s === step.winner ? "winner" : step.forfeited[s] ? "forfeited in round " + step.out_round[s] : step.out_round[s] !== null ? "out in round " + step.out_round[s] : step.chips && step.chips.length ? "" : "still in";
        rt.appendChild(el("tr", null, el("td", null, String(step.placings[s])), el("td", { cls: "l" }, label(d, s)),
          step.chips && step.chips.length ? el("td", { "data-chips": String(step.chips[s]) }, signed(step.chips[s])) : null,
          st ? [el("td", null, String(st.decisions)), el("td", null, String(st.faults)),
            el("td", null, st.decisions ? (st.total_latency_us / st.decisions / 1000).toFixed(2) : "0"), el("td", null, (st.max_latency_us / 1000).toFixed(2))] : null,
          el("td", { cls: "l" }, note)));
      });
      add(res, rt);
      if (step.pot_left) add(res, el("div", { cls: "muted" }, step.pot_left + (step.pot_left === 1 ? " chip" : " chips") + " left in the pot after the last round: nobody's"));
      (d.notes || []).forEach(function (x) { add(res, el("div", { cls: "muted" }, x)); });
      return res;
    }
    return el("div");
  }

  // ------------------------------------------------------------ start

  document.addEventListener("keydown", function (e) {
    if (!state.route || state.route.page !== "replay" || !state.replay) return;
    if (e.target && (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") && e.target.type !== "range") return;
    var r = state.replay;
    if (e.key === "ArrowRight") setStep(r.step + 1);
    else if (e.key === "ArrowLeft") setStep(r.step - 1);
    else if (e.key === "ArrowDown" || e.key === "PageDown") nextRound(1);
    else if (e.key === "ArrowUp" || e.key === "PageUp") nextRound(-1);
    else if (e.key === " ") togglePlay();
    else if (e.key === "Home") setStep(0);
    else if (e.key === "End") setStep(r.data.steps.length - 1);
    else return;
    e.preventDefault();
  });
  window.addEventListener("hashchange", route);
  if (MODE === "single") document.getElementById("nav").style.display = "none";
  if (MODE === "server") setInterval(poll, 2000);
  route();
})();
