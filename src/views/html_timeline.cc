#include "html_timeline.h"

#include <cstring>
#include <string_view>

#include "npumem/config.h"
#include "npumem/errors.h"
#include "npumem/observer.h"
#include "npumem/snapshot.h"

namespace npumem::cli {
namespace {

constexpr const char* kStyle = R"css(
body{font:13px system-ui,sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:20px 0 6px}
.meta{color:#555}.config{font-size:11px;overflow-wrap:anywhere;max-width:1300px}
#error{color:#b00;font-weight:bold}.warn{color:#b00}
canvas,svg{border:1px solid #ccc;background:#fff;display:block}
table{border-collapse:collapse;background:#fff}
td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:right}
td.l,th.l{text-align:left}
.legend span{display:inline-block;margin:4px 14px 0 0}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
)css";

constexpr const char* kBody = R"html(
<h1>npumem memory timeline</h1>
<div class="meta" id="meta"></div>
<div class="meta config" id="config"></div>
<div id="error"></div>
<div class="warn" id="dropped"></div>
<h2>Memory over time, stacked by allocation</h2>
<div class="meta">device: <select id="device"></select> pool: <select id="pool"><option value="">all pools</option></select></div>
<div class="meta">x: event number; each pixel column shows its highest moment; black line: reserved bytes; dashed red line: the peak of allocated bytes; red marks: out-of-memory errors; with one pool shown, dashed orange line: its quota</div>
<canvas id="timeline" width="1300" height="420"></canvas>
<div class="legend" id="legend"></div>
<h2>Segments</h2>
<div class="meta" id="segmeta"></div>
<svg id="segments" width="1300" height="20"></svg>
<h2>Largest live blocks at the peak</h2>
<div class="meta" id="peakmeta"></div>
<table id="largest"></table>
)html";

// Draws the page from one of the snapshots in <script id="snapshots">.
constexpr const char* kScript = R"js(
"use strict";
window.addEventListener("error", function (e) {
  document.body.dataset.rendered = "error";
  document.body.dataset.error = String(e.message);
  document.getElementById("error").textContent = "error: " + e.message;
});
(function () {
  var snapshots = JSON.parse(document.getElementById("snapshots").textContent);
  // A setting of the page's URL: "#device=1&pool=a".
  function hashParam(name) {
    var found = null;
    window.location.hash.slice(1).split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq > 0 && part.slice(0, eq) === name) found = decodeURIComponent(part.slice(eq + 1));
    });
    return found;
  }
  // The device drawn: one snapshot per device, from the selector or #device=N.
  var wantedDevice = Number(hashParam("device"));
  var deviceIndex = Number.isInteger(wantedDevice) && wantedDevice >= 0 &&
    wantedDevice < snapshots.length ? wantedDevice : 0;
  var snap = snapshots[deviceIndex];
  (function () {
    var select = document.getElementById("device");
    snapshots.forEach(function (s, k) {
      var option = document.createElement("option");
      option.value = String(k);
      option.textContent = k + ": " + s.device.name;
      select.appendChild(option);
    });
    select.value = String(deviceIndex);
    select.addEventListener("change", function () {
      window.location.hash = "device=" + select.value;
      window.location.reload();
    });
  })();
  document.body.dataset.device = String(deviceIndex);
  var plotted = 0;
  var SVG = "http://www.w3.org/2000/svg";

  function fmt(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;  // as npumem prints sizes
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    if (i === 0) return String(b) + " B";
    return (b < 10 ? b.toFixed(2) : b < 100 ? b.toFixed(1) : b.toFixed(0)) + " " + units[i];
  }
  function hue(text) {
    var h = 7;
    for (var i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
    return h % 360;
  }
  // A tag's hue (untagged: a hue per power-of-two size), varied per allocation so
  // that neighbours stay apart.
  function color(tag, size, n) {
    var h = tag ? hue(tag) : (Math.round(Math.log2(Math.max(size, 1))) * 47) % 360;
    return "hsl(" + h + "," + (50 + (n % 3) * 15) + "%," + (45 + (n % 4) * 7) + "%)";
  }
  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    parent.appendChild(node);
    return node;
  }

  // Allocations out of the history: live over [start, end) in event numbers.
  var entries = snap.history.entries, n = entries.length;
  var allocs = [], open = new Map(), tierAlloc = {}, tierResv = {};
  var totalAlloc = new Float64Array(n), totalResv = new Float64Array(n);
  for (var i = 0; i < n; i++) {
    var e = entries[i];
    if (e.kind === "alloc") {
      var a = { start: i, end: n, size: e.bytes, requested: e.requested_bytes, tag: e.tag,
                pool: e.pool, tier: e.tier, address: e.address, n: allocs.length };
      allocs.push(a);
      open.set(e.address, a);
    } else if (e.kind === "free" && open.has(e.address)) {
      open.get(e.address).end = i;
      open.delete(e.address);
    }
    tierAlloc[e.tier] = e.tier_allocated_bytes;
    tierResv[e.tier] = e.tier_reserved_bytes;
    for (var t in tierAlloc) { totalAlloc[i] += tierAlloc[t]; totalResv[i] += tierResv[t]; }
  }
  var peak = 0;
  for (i = 1; i < n; i++) if (totalAlloc[i] > totalAlloc[peak]) peak = i;

  // The settings that differ from the defaults (all of them are in the snapshot).
  var defaults = {}, changed = [];
  JSON.parse(document.getElementById("defaults").textContent).split(",").forEach(function (kv) {
    defaults[kv.slice(0, kv.indexOf(":"))] = kv.slice(kv.indexOf(":") + 1);
  });
  snap.config.split(",").forEach(function (kv) {
    if (defaults[kv.slice(0, kv.indexOf(":"))] !== kv.slice(kv.indexOf(":") + 1)) changed.push(kv);
  });
  document.getElementById("config").textContent =
    "config: " + (changed.length ? changed.join(", ") : "the defaults");
  if (snap.history.dropped) {
    document.getElementById("dropped").textContent = "The history ring dropped the " +
      snap.history.dropped + " oldest events: memory allocated before the first kept event is " +
      "drawn grey, and the peak is only that of the kept events (record with more history " +
      "entries, e.g. --history-entries).";
  }
  // A peak the statistics lost to reset_peak_memory_stats() is still in the history: the
  // header said 4.00 MiB over a drawn 32.0 MiB.
  var peakAllocated = Math.max(snap.stats["allocated_bytes.all.peak"], n ? totalAlloc[peak] : 0);
  var peakReserved = snap.stats["reserved_bytes.all.peak"];
  for (i = 0; i < n; i++) peakReserved = Math.max(peakReserved, totalResv[i]);
  var lowered = peakAllocated > snap.stats["allocated_bytes.all.peak"];
  document.getElementById("meta").textContent =
    "device " + snap.device.name + " \u00b7 peak allocated " + fmt(peakAllocated) +
    " \u00b7 peak reserved " + fmt(peakReserved) +
    (lowered ? " (the statistics' peaks, reset since: " +
      fmt(snap.stats["allocated_bytes.all.peak"]) + " allocated)" : "") + " \u00b7 " +
    (snap.history.recorded ? n + " events" +
      (snap.history.dropped ? " (" + snap.history.dropped + " older ones dropped)" : "")
      : "no history recorded (replay with --record)");

  // Allocated bytes of one pool at each event (allocations live over [start, end)).
  function poolSeries(pool) {
    var series = new Float64Array(n), diff = new Float64Array(n + 1);
    allocs.forEach(function (a) {
      if (a.pool !== pool) return;
      diff[a.start] += a.size;
      diff[a.end] -= a.size;
    });
    for (var k = 0, sum = 0; k < n; k++) { sum += diff[k]; series[k] = sum; }
    return series;
  }

  // Pool quotas (pools without one are absent): drawn over the pool's timeline.
  var quotaOf = {};
  (snap.pools || []).forEach(function (p) { if (p.quota_bytes) quotaOf[p.name] = p.quota_bytes; });

  // The pool shown (null: all), from the selector or the page's #pool=NAME.
  var shown = null;
  (function () {
    // Every pool an event names: one that only ran out of memory has no allocation.
    var select = document.getElementById("pool"), names = {};
    entries.forEach(function (e) { if (e.pool) names[e.pool] = true; });
    Object.keys(names).sort().forEach(function (name) {
      var option = document.createElement("option");
      option.value = name;
      option.textContent = name + (quotaOf[name] ? " (quota " + fmt(quotaOf[name]) + ")" : "");
      select.appendChild(option);
    });
    var wanted = hashParam("pool");
    if (wanted !== null && names[wanted]) shown = select.value = wanted;
    select.addEventListener("change", function () {
      shown = select.value || null;
      drawTimeline();
    });
  })();

  function drawTimeline() {
    var canvas = document.getElementById("timeline"), ctx = canvas.getContext("2d");
    var W = canvas.width, H = canvas.height, L = 80, R = 10, T = 14, B = 30;
    var pw = W - L - R, ph = H - T - B;
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, W, H);
    ctx.font = "12px sans-serif";
    if (n === 0) {
      ctx.fillStyle = "#555";
      ctx.fillText("no history recorded", L + 10, T + 20);
      return;
    }
    // One pool: its allocations and allocated bytes only (reserved bytes are the
    // device's, not drawn then).
    var series = shown === null ? totalAlloc : poolSeries(shown);
    var reserved = shown === null ? totalResv : new Float64Array(n);
    var drawn = shown === null ? allocs : allocs.filter(function (a) { return a.pool === shown; });
    var top = 0;
    for (i = 1; i < n; i++) if (series[i] > series[top]) top = i;
    var quota = shown === null ? 0 : quotaOf[shown] || 0;
    var maxY = Math.max(1, quota);
    for (i = 0; i < n; i++) maxY = Math.max(maxY, series[i], reserved[i]);
    // Round ticks: 1, 2 or 5 times a power of ten of the byte unit (B, KiB, MiB, ...).
    var unit = Math.pow(1024, Math.max(0, Math.floor(Math.log(maxY / 5) / Math.log(1024))));
    var raw = maxY / 5 / unit, step = unit;
    [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].some(function (m) {
      step = m * unit;
      return m >= raw;
    });
    var ticks = Math.ceil(maxY / step);
    maxY = ticks * step;
    var cols = Math.min(pw, n), colW = pw / cols;
    var byEnd = drawn.slice().sort(function (x, y) { return x.end - y.end; });
    var live = new Map(), added = 0, removed = 0, bytesSeen = {};
    var reservedLine = [], lo = 0, drawnPeak = 0;
    for (var c = 0; c < cols; c++) {
      // The column covers events [lo, hi]: it draws the moment of most allocated bytes
      // there (the true peak survives), and the most reserved.
      var hi = Math.floor((c + 1) * n / cols) - 1, idx = lo, resv = 0;
      for (var j = lo; j <= hi; j++) {
        if (series[j] > series[idx]) idx = j;
        resv = Math.max(resv, reserved[j]);
      }
      lo = hi + 1;
      drawnPeak = Math.max(drawnPeak, series[idx]);
      while (added < drawn.length && drawn[added].start <= idx) {
        live.set(drawn[added].n, drawn[added]);
        added++;
      }
      while (removed < byEnd.length && byEnd[removed].end <= idx) {
        live.delete(byEnd[removed].n);
        removed++;
      }
      var x = L + c * colW, y = T + ph, tracked = 0, small = 0;
      live.forEach(function (a) { tracked += a.size; });
      // Allocations made before recording began (or dropped from the ring).
      var base = Math.max(0, series[idx] - tracked);
      function bar(bytes, style) {
        var h = bytes / maxY * ph;
        ctx.fillStyle = style;
        ctx.fillRect(x, y - h, colW + 0.6, h);
        y -= h;
        plotted++;
      }
      if (base > 0) bar(base, "#9a9a9a");
      live.forEach(function (a) {
        if (a.size / maxY * ph < 0.75) { small += a.size; return; }
        if (small > 0) { bar(small, "#c8c8c8"); small = 0; }
        bar(a.size, color(a.tag, a.size, a.n));
      });
      if (small > 0) bar(small, "#c8c8c8");
      if (shown === null) reservedLine.push([x + colW / 2, T + ph - resv / maxY * ph]);
    }
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    reservedLine.forEach(function (p, k) { if (k) ctx.lineTo(p[0], p[1]); else ctx.moveTo(p[0], p[1]); });
    ctx.stroke();
    plotted++;
    var px = L + (top + 0.5) / n * pw;
    ctx.strokeStyle = "#d00";
    ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(px, T); ctx.lineTo(px, T + ph); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#222";
    ctx.strokeStyle = "#888";
    ctx.lineWidth = 1;
    for (var k = 0; k <= ticks; k++) {
      var yy = T + ph - ph * k / ticks;
      ctx.fillText(fmt(step * k), 4, yy + 4);
      ctx.beginPath(); ctx.moveTo(L - 4, yy); ctx.lineTo(L, yy); ctx.stroke();
    }
    if (quota > 0) {
      var qy = T + ph - quota / maxY * ph;
      ctx.strokeStyle = "#e07000";
      ctx.lineWidth = 1.5;
      ctx.setLineDash([6, 4]);
      ctx.beginPath(); ctx.moveTo(L, qy); ctx.lineTo(L + pw, qy); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = "#e07000";
      ctx.fillText("quota " + fmt(quota), L + pw - 110, Math.max(qy - 4, T + 10));
      plotted++;
    }
    document.body.dataset.quota = String(quota);
    document.body.dataset.drawnPeak = String(drawnPeak);
    document.body.dataset.pool = shown === null ? "" : shown;
    var ooms = 0;
    ctx.fillStyle = "#d00";
    entries.forEach(function (e, at) {
      if (e.kind !== "oom" || (shown !== null && e.pool !== shown)) return;
      var ox = L + (at + 0.5) / n * pw;
      ctx.beginPath(); ctx.moveTo(ox, T); ctx.lineTo(ox - 5, T - 9); ctx.lineTo(ox + 5, T - 9);
      ctx.fill();
      ctx.fillRect(ox - 0.5, T, 1, ph);
      ctx.fillText("OOM " + fmt(e.requested_bytes), Math.min(ox + 6, W - 90), T + 12);
      plotted++;
      ooms++;
    });
    document.body.dataset.ooms = String(ooms);
    ctx.fillStyle = "#222";
    // Event numbers, each once: a short history printed "0 0 1 1 2 2 2 3 3 4 4".
    var lastLabel = -1;
    for (k = 0; k <= 10; k++) {
      var event = Math.round((n - 1) * k / 10);
      if (event === lastLabel) continue;
      lastLabel = event;
      var label = String(event);
      var width = ctx.measureText(label).width;
      var at = n > 1 ? event / (n - 1) : k / 10;
      ctx.fillText(label, L + pw * at - (at === 1 ? width : at === 0 ? 0 : width / 2), H - 10);
    }
  }

  function drawLegend() {
    var byTag = {};
    allocs.forEach(function (a) { if (a.start <= peak && a.end > peak) byTag[a.tag] = (byTag[a.tag] || 0) + a.size; });
    var tags = Object.keys(byTag).sort(function (x, y) { return byTag[y] - byTag[x]; }).slice(0, 12);
    var legend = document.getElementById("legend");
    tags.forEach(function (tag) {
      var span = document.createElement("span"), sw = document.createElement("i");
      sw.style.background = tag ? color(tag, 0, 0) : "linear-gradient(90deg,#d66,#6d6,#66d)";
      span.appendChild(sw);
      span.appendChild(document.createTextNode((tag || "untagged (coloured by size)") + ": " +
        fmt(byTag[tag]) + " at the peak"));
      legend.appendChild(span);
    });
  }

  function drawSegments() {
    var svg = document.getElementById("segments"), W = 1300, rowH = 16, labelW = 230;
    var segs = snap.segments.slice(0, 400), maxSize = 1;
    segs.forEach(function (s) { maxSize = Math.max(maxSize, s.size); });
    document.getElementById("segmeta").textContent = snap.segments.length + " segments at snapshot time" +
      (snap.segments.length > segs.length ? " (first " + segs.length + " shown)" : "") +
      "; coloured: allocated blocks, grey: free";
    svg.setAttribute("height", String(Math.max(20, segs.length * rowH + 4)));
    segs.forEach(function (s, r) {
      var y = 2 + r * rowH, barW = (W - labelW - 10) * s.size / maxSize;
      var label = el("text", { x: 4, y: y + 11, "font-size": 11 }, svg);
      label.textContent = s.tier + " " + s.pool + " " + s.kind + " " + fmt(s.size);
      s.blocks.forEach(function (b, j) {
        var bx = labelW + (b.address - s.address) / s.size * barW;
        var rect = el("rect", { x: bx, y: y, width: Math.max(0.5, b.size / s.size * barW), height: rowH - 3,
          fill: b.state === "allocated" ? color(b.tag, b.size, j) : b.state === "free" ? "#e6e6e6" : "#fafafa",
          stroke: "#fff", "stroke-width": 0.3 }, svg);
        el("title", {}, rect).textContent = b.state + " " + fmt(b.size) + (b.tag ? " (" + b.tag + ")" : "");
        plotted++;
      });
    });
  }

  function drawLargest() {
    var rows = [], note;
    if (n > 0) {
      rows = allocs.filter(function (a) { return a.start <= peak && a.end > peak; });
      note = "at event " + peak + ", when " + fmt(totalAlloc[peak]) + " was allocated";
    } else {
      snap.segments.forEach(function (s) {
        s.blocks.forEach(function (b) {
          if (b.state === "allocated") rows.push({ size: b.size, requested: b.requested_bytes, tag: b.tag,
            pool: s.pool, tier: s.tier, address: b.address, start: null });
        });
      });
      note = "no history: the live blocks at snapshot time";
    }
    rows.sort(function (x, y) { return y.size - x.size; });
    document.getElementById("peakmeta").textContent = note;
    var table = document.getElementById("largest");
    table.innerHTML = "<tr><th>size</th><th>requested</th><th class=l>tag</th><th class=l>pool</th>" +
      "<th class=l>tier</th><th class=l>address</th><th>allocated at event</th></tr>";
    rows.slice(0, 20).forEach(function (a) {
      var tr = table.insertRow();
      [fmt(a.size), fmt(a.requested), a.tag || "(untagged)", a.pool, a.tier,
       "0x" + a.address.toString(16), a.start === null ? "" : String(a.start)].forEach(function (v, k) {
        var td = tr.insertCell();
        td.textContent = v;
        if (k >= 2 && k <= 5) td.className = "l";
      });
    });
  }

  drawTimeline();
  drawLegend();
  drawSegments();
  drawLargest();
  document.body.dataset.plotted = String(plotted);
  if (document.body.dataset.rendered !== "error") document.body.dataset.rendered = "ok";
})();
)js";

// JSON inside <script>, appended to `page`: "<" only occurs in strings, where \u003c
// means the same and cannot close the element.
void append_script_safe(std::string& page, std::string_view json) {
  for (std::size_t at = 0; at < json.size();) {
    const std::size_t lt = json.find('<', at);
    page.append(json.substr(at, lt - at));
    if (lt == std::string_view::npos) break;
    page += "\\u003c";
    at = lt + 1;
  }
}

std::string html_escaped(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '&':
        escaped += "&amp;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

void require(const nlohmann::json& object, const char* key, nlohmann::json::value_t type,
             const std::string& where) {
  if (!object.is_object() || !object.contains(key) || object.at(key).type() != type) {
    throw Error("not an npumem snapshot: " + where + "'" + key +
                "' is missing or of the wrong type");
  }
}

// Sizes, addresses and times are written as unsigned numbers; the page draws them as
// they are, so a negative or fractional one would draw a block backwards.
void require_whole(const nlohmann::json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key) || !object.at(key).is_number_unsigned()) {
    throw Error("not an npumem snapshot: " + where + "'" + key +
                "' is missing or not a whole number of at least 0");
  }
}

void check_segments(const nlohmann::json& segments) {
  using Type = nlohmann::json::value_t;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const std::string where = "segments[" + std::to_string(i) + "].";
    const nlohmann::json& segment = segments[i];
    require_whole(segment, "address", where);
    require_whole(segment, "size", where);
    require(segment, "tier", Type::string, where);
    require(segment, "pool", Type::string, where);
    require(segment, "kind", Type::string, where);
    require(segment, "blocks", Type::array, where);
    const nlohmann::json& blocks = segment.at("blocks");
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      const std::string block_where = where + "blocks[" + std::to_string(b) + "].";
      require_whole(blocks[b], "address", block_where);
      require_whole(blocks[b], "size", block_where);
      require(blocks[b], "state", Type::string, block_where);
      // Subtracted, not added: sizes near 2^64 would wrap.
      const auto begin = segment.at("address").get<std::uint64_t>();
      const auto size = segment.at("size").get<std::uint64_t>();
      const auto address = blocks[b].at("address").get<std::uint64_t>();
      const auto bytes = blocks[b].at("size").get<std::uint64_t>();
      if (address < begin || address - begin > size || bytes > size - (address - begin)) {
        throw Error("not an npumem snapshot: " + where + "blocks[" + std::to_string(b) +
                    "] lies outside its segment");
      }
    }
  }
}

// An entry of a kind the page does not know was drawn as nothing and counted as an event.
void require_event_kind(const nlohmann::json& entry, const std::string& where) {
  const auto& kind = entry.at("kind").get_ref<const std::string&>();
  std::string known;
  for (auto k = static_cast<int>(EventKind::alloc); k <= static_cast<int>(EventKind::iteration);
       ++k) {
    const std::string_view name = event_kind_name(static_cast<EventKind>(k));
    if (kind == name) return;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw Error("not an npumem snapshot: " + where + "'kind' is " +
              nlohmann::json(kind).dump(-1, ' ', true, nlohmann::json::error_handler_t::replace) +
              ", not an event kind (" + known + ")");
}

void check_history(const nlohmann::json& entries) {
  using Type = nlohmann::json::value_t;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string where = "history.entries[" + std::to_string(i) + "].";
    require(entries[i], "kind", Type::string, where);
    require_event_kind(entries[i], where);
    require(entries[i], "tier", Type::string, where);
    require(entries[i], "pool", Type::string, where);
    require(entries[i], "tag", Type::string, where);
    // Every field the page draws from: without one it drew NaN and said it was done.
    for (const char* key : {"time_ns", "address", "bytes", "requested_bytes",
                            "tier_allocated_bytes", "tier_reserved_bytes"}) {
      require_whole(entries[i], key, where);
    }
  }
}

// The peaks the page's header reads ("peak allocated undefined B" without them).
void check_stats(const nlohmann::json& stats) {
  for (const char* key : {"allocated_bytes.all.peak", "reserved_bytes.all.peak"}) {
    require_whole(stats, key, "stats.");
  }
}

// Pools are optional (older snapshots); given, the quota lines are drawn from them.
void check_pools(const nlohmann::json& snapshot) {
  using Type = nlohmann::json::value_t;
  if (!snapshot.contains("pools")) return;
  require(snapshot, "pools", Type::array, "");
  const nlohmann::json& pools = snapshot.at("pools");
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const std::string where = "pools[" + std::to_string(i) + "].";
    require(pools[i], "name", Type::string, where);
    require_whole(pools[i], "quota_bytes", where);
  }
}

}  // namespace

void check_snapshot(const nlohmann::json& snapshot) {
  using Type = nlohmann::json::value_t;
  if (!snapshot.is_object() || snapshot.value("format", "") != "npumem.snapshot") {
    throw Error("not an npumem snapshot: \"format\" is not \"npumem.snapshot\"");
  }
  const auto version = snapshot.find("version");
  if (version == snapshot.end() || !version->is_number_integer() || *version != kSnapshotVersion) {
    throw Error("unsupported snapshot version " +
                (version == snapshot.end() ? std::string("(none)") : version->dump()) +
                " (this npumem reads version " + std::to_string(kSnapshotVersion) + ")");
  }
  require(snapshot, "device", Type::object, "");
  require(snapshot.at("device"), "name", Type::string, "device.");
  require(snapshot, "config", Type::string, "");
  require(snapshot, "stats", Type::object, "");
  require(snapshot, "segments", Type::array, "");
  require(snapshot, "history", Type::object, "");
  require(snapshot.at("history"), "entries", Type::array, "history.");
  check_stats(snapshot.at("stats"));
  check_pools(snapshot);
  check_segments(snapshot.at("segments"));
  check_history(snapshot.at("history").at("entries"));
}

// Appended in place: the page is as large as the snapshots' text (64 MB for 300,000
// history events), and each copy a concatenation made cost that much again.
std::string render_html_timeline(std::string_view snapshots_json, const std::string& title) {
  const std::string defaults = nlohmann::json(to_string(Config{})).dump();
  std::string page;
  page.reserve(snapshots_json.size() + std::strlen(kScript) + 8192);
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>npumem: ";
  page += html_escaped(title);
  page += "</title>\n<style>";
  page += kStyle;
  page += "</style></head>\n<body data-rendered=\"pending\">";
  page += kBody;
  page += "<script type=\"application/json\" id=\"defaults\">";
  page += defaults;
  page += "</script>\n<script type=\"application/json\" id=\"snapshots\">";
  append_script_safe(page, snapshots_json);
  page += "</script>\n<script>";
  page += kScript;
  page += "</script>\n</body></html>\n";
  return page;
}

std::string render_html_timeline(const std::vector<nlohmann::json>& snapshots,
                                 const std::string& title) {
  std::string json = "[";
  for (const nlohmann::json& snapshot : snapshots) {
    if (json.size() > 1) json += ',';
    json += snapshot.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  json += ']';
  return render_html_timeline(json, title);
}

}  // namespace npumem::cli
