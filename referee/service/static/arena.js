/* The Thirty-One arena's pages: leaderboard, sign-up and sign-in, my bots, matches, a bot's
 * page, admin.
 *
 * Plain script, no library. The page is picked from the path; every datum comes from the
 * JSON API under /api/v1/, read with the session cookie. A request that changes something
 * carries the session's CSRF token (X-CSRF-Token), which GET /api/v1/session hands to this
 * script. Every text a user controls (names, reasons, bot output) goes in through
 * textContent or a text node, never as markup.
 */
(function () {
  "use strict";

  var app = document.getElementById("app");
  var session = { user: null, csrf: null, open_signup: false, password_rules: "" };
  var PALETTE = ["#1e5aa8", "#c62828", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#5d4037", "#ad1457"];

  // ------------------------------------------------------------ DOM helpers

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] === null || attrs[k] === undefined || attrs[k] === false) continue;
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), attrs[k]);
        else node.setAttribute(k, attrs[k] === true ? "" : attrs[k]);
      }
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { add(node, c); }); return; }
    node.appendChild(typeof child === "string" || typeof child === "number" ? document.createTextNode(String(child)) : child);
  }
  function show() {
    app.replaceChildren();
    app.setAttribute("data-drawn", location.pathname);
    for (var i = 0; i < arguments.length; i++) add(app, arguments[i]);
    // Each page its own title (tabs, history, bookmarks): its heading's.
    var h1 = app.querySelector("h1");
    document.title = (h1 ? h1.textContent + " · " : "") + "Thirty-One arena";
  }
  var SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fix(x, n) { return x === null || x === undefined ? "–" : Number(x).toFixed(n); }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(0) + "%"; }
  function when(iso) { return iso ? iso.replace("T", " ").replace("+00:00", " UTC") : "–"; }
  function enc(s) { return encodeURIComponent(s); }
  function botLink(bot, label) { return el("a", { href: "/bots/" + enc(bot), text: label || bot }); }
  function matchLink(key) { return el("a", { href: "/matches/" + enc(key), text: key }); }
  function status(s) { return el("span", { cls: "status " + s, text: s }); }
  function table(head, rows, cls) {
    return el("table", { cls: "data" + (cls ? " " + cls : "") },
      el("thead", null, el("tr", null, head.map(function (h) { return el("th", { cls: h[1] || null, text: h[0] }); }))),
      el("tbody", null, rows));
  }
  function td(content, cls) { return el("td", { cls: cls || null }, content); }

  // ------------------------------------------------------------ the API

  function ApiError(status, code, message) { this.status = status; this.code = code; this.message = message; }
  function api(method, url, body, opts) {
    var headers = { Accept: "application/json" };
    if (method !== "GET" && session.csrf) headers["X-CSRF-Token"] = session.csrf;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    return fetch(url, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin", cache: "no-store" }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (data) {
        if (!r.ok) {
          var e = data && data.error ? data.error : { code: "http_error", message: r.status + " " + r.statusText };
          throw new ApiError(r.status, e.code, e.message);
        }
        return data;
      });
    });
  }
  function fail(e) {
    var msg = e && e.message ? e.message : String(e);
    show(el("h1", { text: e && e.status === 404 ? "Not found" : "Something went wrong" }), el("p", { cls: "bad", id: "error", text: msg }));
  }
  function formError(box, e) { box.textContent = e && e.message ? e.message : String(e); }

  // ------------------------------------------------------------ header

  function renderWho() {
    var who = document.getElementById("who");
    who.replaceChildren();
    document.getElementById("nav-me").hidden = !session.user;
    document.getElementById("nav-admin").hidden = !(session.user && session.user.admin);
    if (session.user) {
      add(who, ["signed in as ", el("strong", { id: "me-name", text: session.user.name }),
        el("button", { id: "signout", onclick: signOut }, "Sign out")]);
    } else {
      add(who, [el("a", { href: "/signin", id: "nav-signin" }, "Sign in"), el("a", { href: "/signup", id: "nav-signup" }, "Sign up")]);
    }
  }
  function signOut() {
    api("DELETE", "/api/v1/session").then(function () { location.href = "/"; }, fail);
  }
  function needUser() {
    if (session.user) return true;
    location.replace("/signin?next=" + enc(location.pathname));
    return false;
  }

  // ------------------------------------------------------------ the one figure

  // What the rating is, said once on every page that shows it.
  var RATING_NOTE = "Rating: the official fit of all finished matches (1500 is the board's average; a 400-point gap means 10:1 odds of placing above), " +
    "with its 95% interval. * marks a provisional figure: the live one, until the next refit includes the version. Win rates and their 95% intervals come from the same matches.";
  // A version's rating cell: the figure, * if provisional, the interval as its title.
  function ratingCell(v) {
    if (!v.matches) return td("–");
    return td(el("span", { cls: "rating" + (v.provisional ? " provisional" : ""), title: (v.provisional ? "provisional (live) " : "official ") + "rating, 95% interval " + fix(v.low, 0) + "–" + fix(v.high, 0),
      text: fix(v.rating, 0) + (v.provisional ? "*" : "") }));
  }
  function intervalCell(v, cls) { return td(v.matches ? fix(v.low, 0) + "–" + fix(v.high, 0) : "–", cls); }
  function winCells(v, cls, rateCls) {
    return [td(v.win_rate === null ? "–" : pct(v.win_rate), rateCls), td(v.win_rate === null ? "–" : pct(v.win_low) + "–" + pct(v.win_high), cls)];
  }

  // ------------------------------------------------------------ leaderboard

  var board = { timer: null, user: "" };
  function showBoard() {
    board.user = new URLSearchParams(location.search).get("user") || "";
    loadBoard(true);
    board.timer = setInterval(function () { loadBoard(false); }, 3000);
  }
  function loadBoard(first) {
    Promise.all([api("GET", "/api/v1/standings"), api("GET", "/api/v1/ladder")]).then(function (res) {
      renderBoard(res[0], res[1]);
    }, first ? fail : function () {});
  }
  function renderBoard(st, ladder) {
    var owners = {};
    st.standings.forEach(function (r) { owners[r.owner] = 1; });
    var rows = st.standings.filter(function (r) { return !board.user || r.owner === board.user; });
    var select = el("select", { id: "user-filter", "aria-label": "filter by user", onchange: function (ev) {
      board.user = ev.target.value;
      history.replaceState(null, "", board.user ? "/?user=" + enc(board.user) : "/");
      loadBoard(false);
    } }, el("option", { value: "", text: "every user" }), Object.keys(owners).sort().map(function (o) {
      return el("option", { value: o, text: o, selected: o === board.user });
    }));
    var counts = ladder.matches || {};
    var playing = ladder.paused ? el("span", { cls: "bad", text: "paused" }) : el("span", { cls: "good", text: "playing" });
    var table_ = table(
      [["#"], ["version", "l"], ["owner", "l opt"], ["rating"], ["95% interval", "opt"], ["trend", "opt l"], ["matches", "opt"], ["win rate"], ["95% interval", "opt"], ["faults", "opt2 l"]],
      rows.map(function (r) {
        var faults = Object.keys(r.faults || {}).map(function (k) { return k + " " + r.faults[k]; }).join(", ");
        var label = r.status === "active" ? "" : " (" + r.status + ")";
        return el("tr", { "data-version": r.version, "data-section": r.section, cls: r.section === "ranked" ? null : r.section },
          td(r.rank === null ? "–" : String(r.rank)), td([botLink(r.bot, r.label), r.reference ? el("span", { cls: "muted", text: " reference" }) : null, label], "l name"),
          td(el("a", { href: "/?user=" + enc(r.owner), text: r.owner }), "l opt name"),
          ratingCell(r), intervalCell(r, "opt"),
          td(el("a", { cls: "spark-link", href: "/bots/" + enc(r.bot) + "#ratings", title: "live rating history of " + r.bot, "aria-label": "rating history of " + r.label },
            sparkline(r.spark || [])), "opt l"),
          td(String(r.matches), "opt"), winCells(r, "opt"), td(faults || "–", "opt2 l"));
      }), "board");
    table_.id = "standings";
    show(
      el("h1", null, "Leaderboard"),
      el("p", { cls: "muted", id: "rating-note" }, RATING_NOTE),
      el("p", { cls: "muted" }, "Only active versions are ranked; versions no refit has seen yet follow, then those that left the ladder, with their final figures. The ladder is ",
        playing, ": " + (counts.done || 0) + " matches played, " + (counts.pending || 0) + " in play or waiting.",
        st.official_at ? " Refitted " + when(st.official_at) + " over " + st.official_matches + " matches." : " No refit yet."),
      el("div", { cls: "controls" }, el("label", { for: "user-filter" }, "Show "), select,
        el("span", { id: "live", cls: "muted", text: "updates every 3 s" })),
      rows.length ? table_ : board.user ? el("p", { cls: "muted", id: "empty" }, board.user + " has no bot on this board. ", el("a", { href: "/" }, "Every user's bots."))
        : el("p", { cls: "muted", id: "empty" }, "No version has played yet. ", session.user ? el("a", { href: "/me" }, "Upload a bot.") : el("a", { href: "/signup" }, "Sign up and upload a bot.")));
  }

  // A row's latest live (provisional) ratings as a small line; it starts at the first point (no line from 0).
  function sparkline(vals) {
    var W = 84, H = 22, P = 3;
    var s = svg("svg", { "class": "spark", viewBox: "0 0 " + W + " " + H, width: W, height: H, "data-points": vals.length });
    if (!vals.length) { s.appendChild(svg("text", { x: 2, y: 15 }, "–")); return s; }
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
    if (hi - lo < 5) { lo -= 2.5; hi += 2.5; }
    function X(i) { return vals.length === 1 ? W - P : P + (W - 2 * P) * i / (vals.length - 1); }
    function Y(v) { return P + (H - 2 * P) * (1 - (v - lo) / (hi - lo)); }
    if (vals.length > 1) {
      s.appendChild(svg("polyline", { points: vals.map(function (v, i) { return X(i).toFixed(1) + "," + Y(v).toFixed(1); }).join(" "),
        fill: "none", stroke: PALETTE[0], "stroke-width": 1.5 }));
    }
    s.appendChild(svg("circle", { cx: X(vals.length - 1), cy: Y(vals[vals.length - 1]), r: 2.2, fill: PALETTE[0] }));
    return s;
  }

  // ------------------------------------------------------------ sign in / sign up

  function field(label, name, type, hint, attrs) {
    var input = el("input", Object.assign({ type: type, name: name, id: "f-" + name, required: true }, attrs || {}));
    return [el("label", { for: "f-" + name, text: label }), input, hint ? el("p", { cls: "hint", text: hint }) : null];
  }
  // Where to go after signing in: a path of this site only. A path that starts "//" or "/\\"
  // (a browser reads "\\" as "/") would leave for another host, as would a scheme; so the
  // path must be plain (letters, digits and -._~/%?=&+ only) and must resolve to this origin.
  function sameSitePath(next) {
    if (!next || !/^\/(?![\/\\])[A-Za-z0-9\-._~\/%?=&+]*$/.test(next)) return null;
    var url;
    try { url = new URL(next, location.origin); } catch (e) { return null; }
    // Whole, with this origin: a path such as "/.//x" resolves to "//x", which alone would
    // name a host.
    return url.origin === location.origin ? location.origin + url.pathname + url.search : null;
  }
  function after() {
    location.href = sameSitePath(new URLSearchParams(location.search).get("next")) || "/me";
  }
  function showSignIn() {
    var err = el("p", { cls: "bad", id: "form-error", role: "alert" });
    var form = el("form", { cls: "card", id: "signin-form", onsubmit: function (ev) {
      ev.preventDefault();
      api("POST", "/api/v1/session", { name: form.elements.name.value, password: form.elements.password.value }).then(after, function (e) { formError(err, e); });
    } }, field("User name", "name", "text", null, { autocomplete: "username" }),
    field("Password", "password", "password", null, { autocomplete: "current-password" }),
    el("div", { cls: "actions" }, el("button", { cls: "primary", type: "submit" }, "Sign in"), el("a", { href: "/signup" }, "No account yet? Sign up")), err);
    show(el("h1", null, "Sign in"), form);
  }
  function showSignUp() {
    var err = el("p", { cls: "bad", id: "form-error", role: "alert" });
    var form = el("form", { cls: "card", id: "signup-form", onsubmit: function (ev) {
      ev.preventDefault();
      var f = form.elements;
      if (f.password.value !== f.password2.value) { err.textContent = "the two passwords differ"; return; }
      api("POST", "/api/v1/signup", { name: f.name.value, password: f.password.value, invite: f.invite.value }).then(function () { location.href = "/me"; },
        function (e) { formError(err, e); });
    } },
    field("User name", "name", "text", "1–32 letters, digits, '_', '.' or '-', starting with a letter or digit.", { autocomplete: "username", maxlength: "32" }),
    field("Password", "password", "password", "A password needs " + session.password_rules + ".", { autocomplete: "new-password", minlength: "10", maxlength: "200" }),
    field("Password again", "password2", "password", null, { autocomplete: "new-password" }),
    field("Invite code", "invite", "text", session.open_signup ? "Optional: this arena's sign-up is open." : "Ask the arena's admin for one.", { required: !session.open_signup, autocomplete: "off" }),
    el("div", { cls: "actions" }, el("button", { cls: "primary", type: "submit" }, "Sign up"), el("a", { href: "/signin" }, "Have an account? Sign in")), err);
    show(el("h1", null, "Sign up"), form);
  }

  // ------------------------------------------------------------ my bots

  function showMe() {
    if (!needUser()) return;
    Promise.all([api("GET", "/api/v1/versions"), api("GET", "/api/v1/runtimes")]).then(function (res) { renderMe(res[0], res[1]); }, fail);
  }
  // The version uploaded from this page, followed while it is checked (then its row says it all).
  var lastUpload = null;
  function uploadNote(versions) {
    if (!lastUpload) return "";
    var v = versions.filter(function (x) { return x.id === lastUpload.id; })[0];
    if (!v || (v.status !== "queued" && v.status !== "validating")) { lastUpload = null; return ""; }
    return "uploaded " + v.label + ": " + (v.status === "queued" ? "queued for validation" : "being validated");
  }
  function uploadForm(runtimes, noteText) {
    var err = el("p", { cls: "bad", id: "upload-error", role: "alert" });
    var progress = el("progress", { id: "upload-progress", max: "100", value: "0", hidden: true });
    var note = el("span", { id: "upload-note", cls: "muted", text: noteText });
    var form = el("form", { cls: "card", id: "upload-form", onsubmit: function (ev) {
      ev.preventDefault();
      var file = form.elements.file.files[0];
      if (!file) { err.textContent = "choose a file first"; return; }
      err.textContent = "";
      var q = "filename=" + enc(file.name) + (form.elements.botname.value ? "&name=" + enc(form.elements.botname.value) : "");
      var xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/versions?" + q);
      xhr.setRequestHeader("X-CSRF-Token", session.csrf);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      progress.hidden = false;
      xhr.upload.onprogress = function (e) {
        if (e.lengthComputable) { progress.value = Math.round(100 * e.loaded / e.total); note.textContent = Math.round(e.loaded / 1024) + " of " + Math.round(e.total / 1024) + " KiB"; }
      };
      xhr.onload = function () {
        var body = {};
        try { body = JSON.parse(xhr.responseText); } catch (x) { /* not JSON: the status says it */ }
        if (xhr.status === 201) { lastUpload = { id: body.id }; showMe(); }
        else { progress.hidden = true; note.textContent = ""; err.textContent = body.error ? body.error.message : "upload failed: " + xhr.status; }
      };
      xhr.onerror = function () { progress.hidden = true; err.textContent = "the upload did not reach the arena"; };
      xhr.send(file);
    } },
    el("label", { for: "f-file" }, "A Python file, or a folder as .tar.gz, .tgz, .tar or .zip with a bot.toml at its top"),
    el("input", { type: "file", id: "f-file", name: "file", accept: ".py,.tar.gz,.tgz,.tar,.zip", required: true }),
    el("label", { for: "f-botname" }, "Bot name (optional)"),
    el("input", { type: "text", id: "f-botname", name: "botname", maxlength: "32", placeholder: "the manifest's name, or the file's" }),
    el("p", { cls: "hint" }, "bot.toml says: ", el("code", { text: "name = \"mybot\"" }), " and ", el("code", { text: "command = \"python bot.py\"" }),
      ". Commands may start with: " + runtimes.runtimes.map(function (r) { return r.command; }).join(", ") + "."),
    el("div", { cls: "actions" }, el("button", { cls: "primary", type: "submit" }, "Upload"), progress, note), err);
    return form;
  }
  // Where a version that left the ladder stands now, said from its bot's versions as they are
  // (its stored reason tells what happened then; this, what is true today).
  function versionNow(v, versions) {
    if (v.status !== "retired" && v.status !== "withdrawn") return null;
    var playing = versions.filter(function (x) { return x.bot === v.bot && x.id !== v.id && x.status === "active"; })
      .map(function (x) { return x.label; });
    return (v.status === "retired" ? "Retired" : "Withdrawn") + ": " +
      (playing.length ? playing.join(", ") + (playing.length > 1 ? " play" : " plays") + " in its place. " : "no version of " + v.bot + " plays now. ") +
      "Reactivate brings it back" + (playing.length ? " (and retires " + playing.join(", ") + ")." : ".");
  }
  // The versions whose details are open: the page redraws itself while a version is checked,
  // and what its owner opened stays open.
  var meOpen = {};
  function plural(n, one, many) { return n + " " + (n === 1 ? one : many || one + "s"); }
  function renderMe(versions, runtimes) {
    var tokenBox = el("div", { id: "token-box" });
    function post(v, what) {
      return function () { api("POST", "/api/v1/versions/" + v.id + "/" + what).then(showMe, fail); };
    }
    var rows = versions.map(function (v) {
      var canWithdraw = ["queued", "validating", "active"].indexOf(v.status) >= 0;
      var now = versionNow(v, versions);
      return el("tr", { "data-version": v.id },
        td(botLink(v.bot, v.label), "l name"), td(el("span", { cls: "status " + v.status, text: v.status, title: now }), "l"),
        td(v.rank === null ? "–" : String(v.rank), "opt"), ratingCell(v), intervalCell(v, "opt"),
        td(String(v.matches), "opt"), winCells(v, "opt2", "opt"), td(when(v.uploaded_at), "opt2"),
        td([el("a", { href: "#v" + v.id, text: "details", onclick: function () { document.getElementById("v" + v.id).open = true; } }), " ",
          canWithdraw ? el("button", { cls: "withdraw", "data-id": v.id, onclick: function () {
            if (confirm("Withdraw " + v.label + "? It plays no more; its history stays, and Reactivate brings it back.")) post(v, "withdraw")();
          } }, "Withdraw") : null,
          // Retired or withdrawn: its owner may bring it back (the bot's active version retires).
          now ? el("button", { cls: "reactivate", "data-id": v.id, title: now, onclick: post(v, "reactivate") }, "Reactivate") : null,
          // A rejected version never played: its owner may remove it (and free the bot's name).
          v.status === "rejected" ? el("button", { cls: "delete", "data-id": v.id, onclick: function () {
            if (!confirm("Delete " + v.label + " and its files? It never played; its upload still counts toward today's limit.")) return;
            api("DELETE", "/api/v1/versions/" + v.id).then(showMe, fail);
          } }, "Delete") : null], "l"));
    });
    // Folded: a long list of versions stays one screen; a version's matches load when it opens.
    var details = versions.map(function (v) {
      var now = versionNow(v, versions);
      var box = el("div", { cls: "matches-of", "data-version": v.id });
      var d = el("details", { id: "v" + v.id, cls: "version", open: location.hash === "#v" + v.id || meOpen[v.id] === true,
        ontoggle: function () { meOpen[v.id] = d.open; if (d.open) loadMyMatches(v, box); } },
        el("summary", null, el("strong", { text: v.label }), " ", status(v.status), " ", el("span", { cls: "muted", text: plural(v.played, "match", "matches") + (v.played ? " played" : " played yet") })),
        el("dl", { cls: "facts" },
          el("dt", null, "command"), el("dd", null, el("code", { text: v.command })),
          el("dt", null, "uploaded"), el("dd", { cls: "uploaded", text: when(v.uploaded_at) + " from " + v.source + " (" + plural(v.files, "file") + ", " + plural(v.size, "byte") + ")" }),
          el("dt", null, "sha256"), el("dd", { text: v.sha256 })),
        now ? el("p", { cls: "now", text: now }) : null,
        v.reason ? [el("p", null, v.status === "rejected" ? "Why it was rejected:" : "Why:"), el("pre", { cls: "reason", text: v.reason })] : null,
        v.report ? el("details", { cls: "report" }, el("summary", null, "The validation report"), el("pre", { cls: "report", text: v.report })) : null,
        box);
      return d;
    });
    show(el("h1", null, "My bots"),
      el("div", { cls: "grid2" }, uploadForm(runtimes, uploadNote(versions)),
        el("div", { cls: "card" }, el("h2", null, "API token"),
          el("p", null, "For ", el("code", { text: "thirtyone remote login" }), ": a new token is shown once; the others keep working."),
          el("button", { id: "make-token", onclick: function () {
            api("POST", "/api/v1/me/tokens").then(function (t) { tokenBox.replaceChildren(el("code", { cls: "token", id: "token", text: t.token })); }, function (e) { formError(tokenBox, e); });
          } }, "Make a token"), tokenBox)),
      el("h2", null, "Versions"),
      versions.length ? [table([["version", "l"], ["status", "l"], ["#", "opt"], ["rating"], ["95% interval", "opt"], ["matches", "opt"], ["win rate", "opt"], ["95% interval", "opt2"], ["uploaded", "opt2"], ["", "l"]], rows),
        el("p", { cls: "muted" }, RATING_NOTE), el("h2", null, "Each version"), el("p", { cls: "muted" }, "Open one for its command and files, why it stopped, its validation report, and its latest matches with what it wrote in each.")] : el("p", { cls: "muted" }, "No upload yet."),
      details);
    details.forEach(function (d) { if (d.open) d.dispatchEvent(new Event("toggle")); });
    openFromHash();
    if (versions.some(function (v) { return v.status === "queued" || v.status === "validating"; })) setTimeout(refreshMe, 2000);
  }
  function refreshMe() { if (location.pathname === "/me") showMe(); }
  // A link to "#vID" (a row's "details") opens that version's details.
  function openFromHash() {
    var d = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    if (d && d.tagName === "DETAILS") d.open = true;
  }
  window.addEventListener("hashchange", openFromHash);
  // One version's own latest matches (not its bot's: a retired version's would be its successor's).
  function loadMyMatches(v, box) {
    if (box.dataset.done) return;
    box.dataset.done = "1";
    api("GET", "/api/v1/matches?limit=20&version=" + v.id).then(function (ms) {
      if (!ms.length) { add(box, el("p", { cls: "muted no-matches" }, "No match yet.")); return; }
      add(box, [el("p", null, "Its latest matches, and what it wrote in each:"),
        table([["match", "l"], ["status", "l opt"], ["placing"], ["opponents (placing)", "l"], ["output", "l"]], ms.map(function (m) {
          var seat = m.seats.filter(function (s) { return s.version === v.id; })[0];
          var others = m.seats.filter(function (s) { return s !== seat; });
          return el("tr", null, td(matchLink(m.key), "l"), td(m.status, "l opt"), td(seat && seat.placing ? String(seat.placing) : "–"),
            td(others.map(function (s, i) {
              return [i ? ", " : "", botLink(s.label.replace(/\.v\d+$/, ""), s.label), s.placing ? " (" + s.placing + ")" : ""];
            }), "l name opponents"),
            td(outputCell(m), "l"));
        }))]);
    }, function (e) { box.dataset.done = ""; add(box, el("p", { cls: "bad", text: e && e.message ? e.message : String(e) })); });
  }
  // A match's output is kept when it ends: before that (a match scheduled or in play) or for
  // a match given up, there is none to read, and "(nothing)" would say the bot wrote nothing.
  var NO_OUTPUT = {
    pending: "This match has not ended yet: what your bots write in it shows here once it has.",
    void: "This match was given up (the arena's own failure, never a bot's): nothing of it was kept."
  };
  function outputCell(m) {
    if (m.status === "done") return el("a", { cls: "output-link", href: "/me/output/" + enc(m.key), text: "its output" });
    return el("span", { cls: "muted no-output", text: m.status === "pending" ? "when it ends" : "–" });
  }
  function showOutput(key) {
    if (!needUser()) return;
    api("GET", "/api/v1/matches/" + enc(key) + "/output").then(function (o) {
      show(el("h1", null, "Output in match ", matchLink(o.key)),
        el("p", { cls: "muted" }, "What your bots wrote (stdout and stderr) in this match; only you see it."),
        o.status === "done" ? o.seats.map(function (s) {
          return [el("h2", null, "seat " + s.seat + ": " + s.label), el("pre", { cls: "output", text: s.output || "(nothing)" })];
        }) : el("p", { id: "no-output", text: NO_OUTPUT[o.status] || "This match has no output to show." }));
    }, fail);
  }

  // ------------------------------------------------------------ matches

  function seatsText(m) {
    return m.seats.map(function (s, i) {
      return [i ? ", " : "", botLink(s.label.replace(/\.v\d+$/, ""), s.label), s.placing ? " (" + s.placing + ")" : ""];
    });
  }
  function matchRows(ms) {
    return ms.map(function (m) {
      return el("tr", null, td(matchLink(m.key), "l"), td(seatsText(m), "l name"), td(m.status, "l opt"),
        td(m.rounds === undefined ? "–" : String(m.rounds), "opt2"), td(when(m.finished_at), "opt2"),
        td(m.log ? el("a", { href: "/matches/" + enc(m.key) + "/replay", text: "replay" }) : "–", "l"));
    });
  }
  function matchTable(ms) {
    var t = table([["match", "l"], ["seats (placing)", "l"], ["status", "l opt"], ["rounds", "opt2"], ["finished", "opt2"], ["replay", "l"]], matchRows(ms));
    t.id = "matches";
    return t;
  }
  function showMatches() {
    var q = new URLSearchParams(location.search);
    var url = "/api/v1/matches?limit=50" + (q.get("bot") ? "&bot=" + enc(q.get("bot")) : "") + (q.get("before") ? "&before=" + enc(q.get("before")) : "");
    api("GET", url).then(function (ms) {
      var more = ms.length === 50 ? el("p", null, el("a", { href: "/matches?" + (q.get("bot") ? "bot=" + enc(q.get("bot")) + "&" : "") + "before=" + enc(ms[ms.length - 1].key) }, "older matches →")) : null;
      show(el("h1", null, "Matches", q.get("bot") ? " of " + q.get("bot") : ""),
        el("p", { cls: "muted" }, "Newest first. A replay and its log are public once every seat rotation of its deal is played."),
        ms.length ? matchTable(ms) : el("p", { cls: "muted" }, "No match yet."), more);
    }, fail);
  }
  // How long a finished match took; "<0.1 s" rather than a rounded "0.0 s".
  function took(m) {
    if (!m.finished_at || m.duration_s === null || m.duration_s === undefined) return "";
    return " in " + (m.duration_s < 0.05 ? "<0.1" : fix(m.duration_s, 1)) + " s";
  }
  function showMatch(key) {
    api("GET", "/api/v1/matches/" + enc(key)).then(function (m) {
      var seats = table([["seat"], ["version", "l"], ["owner", "l opt"], ["placing"], ["faults", "l opt"]], m.seats.map(function (s) {
        var faults = Object.keys(s.faults || {}).map(function (k) { return k + " " + s.faults[k]; }).join(", ");
        return el("tr", null, td(String(s.seat)), td(botLink(s.label.replace(/\.v\d+$/, ""), s.label), "l name"), td(s.owner, "l opt name"),
          td(s.placing ? String(s.placing) : "–"), td(faults || (s.forfeited ? "forfeited" : "–"), "l opt"));
      }));
      var mine = session.user && m.seats.some(function (s) { return s.owner === session.user.name; });
      show(el("h1", null, "Match " + m.key),
        el("dl", { cls: "facts" },
          el("dt", null, "status"), el("dd", { id: "match-status", text: m.status + (m.reason ? " (" + m.reason + ", " + m.rounds + " rounds)" : "") }),
          el("dt", null, "table, rotation"), el("dd", { text: m.table + ", " + m.rotation }),
          el("dt", null, "finished"), el("dd", { id: "finished", text: when(m.finished_at) + took(m) }),
          el("dt", null, "seed commitment"), el("dd", { id: "commitment", text: m.commitment }),
          el("dt", null, "seed"), el("dd", { id: "seed", text: m.seed || "revealed once every rotation of this deal is played" })),
        el("h2", null, "Seats"), seats,
        el("p", { cls: "controls" },
          m.log ? [el("a", { id: "replay-link", href: "/matches/" + enc(m.key) + "/replay" }, "Watch the replay"), " · ",
            el("a", { id: "log-link", href: m.log, download: m.key + ".jsonl" }, "Download the log")] : el("span", { cls: "muted" }, "The replay and the log are public once the deal is finished."),
          mine ? [" · ", el("a", { href: "/me/output/" + enc(m.key) }, "Your bot's output")] : null),
        el("p", { cls: "muted" }, "The commitment is the SHA-256 of the seed's decimal text, published when the table was scheduled: ",
          el("code", { text: "thirtyone remote download " + m.key }), " then ", el("code", { text: "thirtyone replay " + m.key + ".jsonl --verify" }), " checks the deal against it."));
    }, fail);
  }

  // ------------------------------------------------------------ a bot's page

  // Each version's live (provisional) rating after each of its matches, one line per version, over
  // the version's own match count. A line starts at its first match: no segment from 0.
  function ratingPlot(hist) {
    var lines = hist.versions.filter(function (v) { return v.points.length; });
    if (!lines.length) return el("p", { cls: "muted", id: "ratings-empty" }, "No rated match yet.");
    var W = 640, H = 240, L = 44, R = 12, T = 12, B = 30;
    var all = [], n0 = Infinity, n1 = -Infinity;
    lines.forEach(function (v) {
      v.points.forEach(function (p) { all.push(p[1]); n0 = Math.min(n0, p[0]); n1 = Math.max(n1, p[0]); });
    });
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    var pad = Math.max(5, (hi - lo) * 0.08);
    lo -= pad; hi += pad;
    function X(n) { return n1 === n0 ? (L + W - R) / 2 : L + (W - L - R) * (n - n0) / (n1 - n0); }
    function Y(v) { return T + (H - T - B) * (1 - (v - lo) / (hi - lo)); }
    var s = svg("svg", { id: "rating-plot", viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img", "aria-label": "rating history by version" });
    [lo + pad, (lo + hi) / 2, hi - pad].forEach(function (v) {
      s.appendChild(svg("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: "#e3e0d6" }));
      s.appendChild(svg("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, v.toFixed(0)));
    });
    s.appendChild(svg("text", { x: L, y: H - 8, "text-anchor": "start" }, "match " + n0));
    if (n1 !== n0) s.appendChild(svg("text", { x: W - R, y: H - 8, "text-anchor": "end" }, "match " + n1));
    var legend = el("p", { cls: "legend" });
    lines.slice().reverse().forEach(function (v, i) {
      var color = PALETTE[i % PALETTE.length];
      var xy = v.points.map(function (p) { return [X(p[0]), Y(p[1])]; });
      if (xy.length > 1) {
        s.appendChild(svg("path", { "class": "history", "data-version": v.version, "data-points": xy.length, fill: "none", stroke: color, "stroke-width": 2,
          d: xy.map(function (q, j) { return (j ? "L" : "M") + q[0].toFixed(1) + " " + q[1].toFixed(1); }).join(" ") }));
      }
      var last = xy[xy.length - 1], p = v.points[v.points.length - 1];
      var dot = svg("circle", { "class": "history-end", "data-version": v.version, cx: last[0], cy: last[1], r: 3.5, fill: color });
      dot.appendChild(svg("title", {}, v.label + ": " + p[1].toFixed(0) + " (" + p[2].toFixed(0) + "–" + p[3].toFixed(0) + ") after match " + p[0]));
      s.appendChild(dot);
      var swatch = svg("svg", { width: 14, height: 10, viewBox: "0 0 14 10" });
      swatch.appendChild(svg("rect", { x: 0, y: 3, width: 14, height: 4, fill: color }));
      add(legend, el("span", { cls: "key" }, swatch, v.label));
    });
    return el("div", { cls: "plot", id: "ratings" },
      el("p", { cls: "muted" }, "The live (provisional) rating of each version after each of its matches, by the version's match count; the official rating is the refit's, in the table above:"), s, legend);
  }
  function headToHead(rows) {
    if (!rows.length) return el("p", { cls: "muted", id: "h2h-empty" }, "No match yet.");
    var t = table([["version", "l"], ["opponent", "l"], ["owner", "l opt2"], ["matches", "opt"], ["wins"], ["losses"], ["draws"], ["score"]], rows.map(function (r) {
      return el("tr", { "data-version": r.version, "data-opponent": r.opponent },
        td(r.label, "l name"), td(botLink(r.opponent_bot, r.opponent_label), "l name"), td(r.opponent_owner, "l opt2 name"),
        td(String(r.matches), "opt"), td(String(r.wins)), td(String(r.losses)), td(String(r.draws)), td(pct(r.score)));
    }));
    t.id = "head-to-head";
    return t;
  }
  function showBot(name) {
    var base = "/api/v1/bots/" + enc(name);
    Promise.all([api("GET", base), api("GET", "/api/v1/matches?limit=20&bot=" + enc(name)), api("GET", base + "/ratings"), api("GET", base + "/head-to-head")]).then(function (res) {
      var b = res[0], ms = res[1];
      show(el("h1", null, "Bot " + b.name),
        el("p", { cls: "muted" }, "by ", el("a", { href: "/?user=" + enc(b.owner), text: b.owner }), ". Each upload is a new version. ",
          el("span", { id: "bot-rank" }, b.rank === null ? "Not ranked: no active version a refit has included." : "Rank " + b.rank + " (its best active version's).")),
        el("h2", null, "Versions"),
        table([["version", "l"], ["status", "l"], ["#"], ["rating"], ["95% interval", "opt"], ["matches"], ["win rate"], ["95% interval", "opt"], ["uploaded", "opt2"]], b.versions.map(function (v) {
          return el("tr", { "data-version": v.id }, td(v.label, "l name"), td(status(v.status), "l"), td(v.rank === null ? "–" : String(v.rank)), ratingCell(v), intervalCell(v, "opt"),
            td(String(v.matches)), winCells(v, "opt"), td(when(v.uploaded_at), "opt2"));
        })),
        el("p", { cls: "muted" }, RATING_NOTE),
        el("h2", null, "Rating history"), ratingPlot(res[2]),
        el("h2", null, "Head-to-head"),
        el("p", { cls: "muted" }, "Per opponent version: a win is a match placed above it, a loss below, a draw at the same placing (a shared first place is nobody's win); the score counts a draw as half."),
        headToHead(res[3].rows),
        el("h2", null, "Recent matches"), ms.length ? matchTable(ms) : el("p", { cls: "muted" }, "No match yet."),
        el("p", null, el("a", { href: "/matches?bot=" + enc(b.name) }, "every match of " + b.name + " →")));
      var plot = document.getElementById("ratings");
      if (location.hash === "#ratings" && plot) plot.scrollIntoView();
    }, fail);
  }

  // ------------------------------------------------------------ admin

  var STATUSES = ["queued", "validating", "active", "rejected", "retired", "withdrawn", "disqualified"];
  var PLAYS = ["queued", "validating", "active"];
  var ADMIN_PAGE = 100;
  var admin = { status: "", before: null };
  function showAdmin() {
    if (!needUser()) return;
    if (!session.user.admin) { fail(new ApiError(403, "forbidden", "this page needs an admin of the arena")); return; }
    var vq = "/api/v1/admin/versions?limit=" + ADMIN_PAGE + (admin.status ? "&status=" + enc(admin.status) : "") + (admin.before ? "&before=" + admin.before : "");
    Promise.all([api("GET", "/api/v1/admin/users"), api("GET", "/api/v1/admin/settings"), api("GET", "/api/v1/ladder"), api("GET", vq)]).then(function (res) {
      var users = res[0], settings = res[1], ladder = res[2], versions = res[3];
      var inviteBox = el("div", { id: "invite-box" });
      var err = el("p", { cls: "bad", id: "admin-error", role: "alert" });
      function act(url, body) { return function () { api("POST", url, body).then(showAdmin, function (e) { formError(err, e); }); }; }
      var reason = el("input", { type: "text", id: "dq-reason", maxlength: "500", placeholder: "disqualified by an admin", "aria-label": "reason for a disqualification" });
      var filter = el("select", { id: "version-filter", "aria-label": "versions of a status", onchange: function (ev) { admin.status = ev.target.value; admin.before = null; showAdmin(); } },
        el("option", { value: "", text: "every status" }), STATUSES.map(function (st) { return el("option", { value: st, text: st, selected: st === admin.status }); }));
      var vrows = versions.map(function (v) {
        return el("tr", { "data-version": v.id },
          td(String(v.id), "opt"), td(botLink(v.bot, v.label), "l vname"), td(v.owner, "l opt vname"), td(status(v.status), "l"),
          td(String(v.matches), "opt"), td(v.reason || "–", "l opt2 reason"),
          // Only a version that can play (or is about to) is worth disqualifying.
          td([PLAYS.indexOf(v.status) < 0 ? null : el("button", { cls: "disqualify", "data-id": v.id, onclick: function () {
            if (!confirm("Disqualify " + v.label + "? It plays no more; tables it sits at score it as absent.")) return;
            act("/api/v1/admin/versions/" + v.id + "/disqualify", { reason: reason.value || "disqualified by an admin" })();
          } }, "Disqualify"), " ",
            el("button", { cls: "reference", "data-id": v.id, "aria-pressed": v.reference ? "true" : "false", title: "a reference bot's share of tables is capped",
              onclick: act("/api/v1/admin/versions/" + v.id + "/reference", { reference: !v.reference }) }, v.reference ? "Not reference" : "Reference")], "l"));
      });
      var vtable = table([["id", "opt"], ["version", "l"], ["owner", "l opt"], ["status", "l"], ["matches", "opt"], ["why", "l opt2"], ["", "l"]], vrows);
      vtable.id = "admin-versions";
      var pager = el("p", { cls: "controls" },
        admin.before ? el("button", { id: "versions-newest", onclick: function () { admin.before = null; showAdmin(); } }, "← newest") : null,
        versions.length === ADMIN_PAGE ? el("button", { id: "versions-older", onclick: function () { admin.before = versions[versions.length - 1].id; showAdmin(); } }, "older →") : null);
      show(el("h1", null, "Admin"), err,
        el("h2", null, "Ladder"),
        el("p", null, "The ladder is ", ladder.paused ? el("strong", { cls: "bad", text: "paused" }) : el("strong", { cls: "good", text: "playing" }), ".  ",
          ladder.paused ? el("button", { id: "resume", onclick: act("/api/v1/admin/ladder/resume") }, "Resume") : el("button", { id: "pause", onclick: act("/api/v1/admin/ladder/pause") }, "Pause")),
        el("h2", null, "Users"),
        el("p", { cls: "controls" }, el("button", { id: "make-invite", onclick: function () {
          api("POST", "/api/v1/admin/invites").then(function (r) { inviteBox.replaceChildren("Invite code (shown once): ", el("code", { cls: "token", id: "invite", text: r.code })); },
            function (e) { formError(err, e); });
        } }, "Make an invite code"), inviteBox),
        table([["user", "l"], ["admin", "l"], ["state", "l"], ["since", "opt"], ["", "l"]], users.map(function (u) {
          return el("tr", null, td(u.name, "l name"), td(u.admin ? "admin" : "", "l"), td(u.disabled ? "disabled" : "enabled", "l"), td(when(u.created_at), "opt"),
            td(u.id === session.user.id ? "" : u.disabled ? el("button", { onclick: act("/api/v1/admin/users/" + enc(u.name) + "/enable") }, "Enable")
              : el("button", { onclick: act("/api/v1/admin/users/" + enc(u.name) + "/disable") }, "Disable"), "l"));
        })),
        el("h2", null, "Versions"),
        el("div", { cls: "controls" }, el("label", { for: "version-filter" }, "Show "), filter, el("label", { for: "dq-reason" }, "Reason "), reason),
        versions.length ? vtable : el("p", { cls: "muted", id: "no-versions" }, "No version."), pager,
        el("h2", null, "Settings"), el("p", { cls: "muted" }, "Read-only: they are edited in the arena folder's arena.toml."),
        table([["setting", "l"], ["value", "l"]], Object.keys(settings.described).map(function (k) {
          return el("tr", null, td(k, "l"), td(settings.described[k], "l name"));
        })));
    }, fail);
  }

  // ------------------------------------------------------------ routing

  function route() {
    var parts = location.pathname.split("/").slice(1).map(decodeURIComponent);
    var page = parts[0] || "board";
    document.querySelectorAll("#nav a").forEach(function (a) { a.classList.toggle("active", a.id === "nav-" + page); });
    if (page === "signin") return showSignIn();
    if (page === "signup") return showSignUp();
    if (page === "me" && parts[1] === "output") return showOutput(parts[2]);
    if (page === "me") return showMe();
    if (page === "matches" && parts[1]) return showMatch(parts[1]);
    if (page === "matches") return showMatches();
    if (page === "bots") return showBot(parts[1]);
    if (page === "admin") return showAdmin();
    if (page === "board") return showBoard();
    fail(new ApiError(404, "not_found", "There is no page " + location.pathname + " here."));
  }

  // A page the server did not find comes with its message drawn: only the header is left to do.
  var drawn = app.hasAttribute("data-status");
  api("GET", "/api/v1/session").then(function (s) { session = s; }, function () {}).then(function () {
    renderWho();
    if (drawn) app.setAttribute("data-drawn", location.pathname); else route();
  });
})();
