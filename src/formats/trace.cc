#include "trace.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <limits>
#include <unordered_map>
#include <utility>

#include "input_file.h"
#include "npumem/errors.h"

namespace npumem::cli {
namespace {

// The most fields any line has (op and two arguments), plus one to detect extras.
constexpr std::size_t kMaxFields = 4;

struct Fields {
  std::array<std::string_view, kMaxFields> items;
  std::size_t count = 0;  // fields seen, capped at kMaxFields
};

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

Fields split_fields(std::string_view line) {
  Fields fields;
  std::size_t pos = 0;
  while (pos < line.size() && fields.count < kMaxFields) {
    while (pos < line.size() && is_blank(line[pos])) ++pos;
    if (pos == line.size()) break;
    const std::size_t start = pos;
    while (pos < line.size() && !is_blank(line[pos])) ++pos;
    fields.items[fields.count++] = line.substr(start, pos - start);
  }
  return fields;
}

// Bytes that are not printable ASCII show as \xNN, and a long field is cut: a binary
// file given as a trace must not put its bytes on the terminal.
std::string quoted(std::string_view text) {
  constexpr std::size_t kShown = 40;
  std::string out = "'";
  for (const char c : text.substr(0, kShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    }
  }
  return out + (text.size() > kShown ? "...'" : "'");
}

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// One line's worth of parsing state: the trace so far and what is live.
class TraceParser {
 public:
  explicit TraceParser(std::string source) { trace_.source = std::move(source); }

  void parse_line(std::string_view line, std::size_t line_number) {
    line_number_ = line_number;
    const Fields fields = split_fields(line);
    if (fields.count == 0 || fields.items[0].front() == '#') return;
    const std::string_view op = fields.items[0];
    if (op == "a") {
      expect_arguments(fields, 2, "<id> <bytes>");
      add_alloc(parse_number(fields.items[1], "id"), parse_number(fields.items[2], "bytes"));
    } else if (op == "f") {
      expect_arguments(fields, 1, "<id>");
      add_free(parse_number(fields.items[1], "id"));
    } else if (op == "p") {
      constexpr const char* kUsage = "<pool name> [<quota bytes>]";
      if (fields.count < 2) expect_arguments(fields, 1, kUsage);
      if (fields.count > 3) expect_arguments(fields, 2, kUsage);
      add_pool_switch(printable(fields.items[1], "pool name"),
                      fields.count == 3 ? parse_number(fields.items[2], "quota") : 0);
    } else if (op == "r") {
      expect_arguments(fields, 1, "<pool name>");
      add_pool_removal(printable(fields.items[1], "pool name"));
    } else if (op == "i") {
      if (fields.count > 2) expect_arguments(fields, 1, "[<key>]");
      if (fields.count == 2) {
        trace_.events.push_back({TraceOp::iteration, 1, parse_number(fields.items[1], "key")});
      } else {
        trace_.events.push_back({TraceOp::iteration, 0, 0});
      }
      ++trace_.iterations;
    } else if (op == "t") {
      if (fields.count > 2) expect_arguments(fields, 1, "[<tag>]");
      add_tag(fields.count == 2 ? printable(fields.items[1], "tag") : std::string_view{});
    } else if (op == "s") {
      expect_arguments(fields, 1, "<stream>");
      trace_.events.push_back({TraceOp::stream, 0, parse_number(fields.items[1], "stream")});
    } else {
      fail("unknown op " + quoted(op) + " (expected a, f, p, r, i, t, s or a # comment)" +
           (all_digits(op) ? "; lifetime records '<bytes> <first_op> <last_op>' are planned "
                             "(`npumem plan memory RECORDS`), not replayed"
            : op.front() == '{' || op.front() == '['
                ? "; this is JSON (a snapshot, a --record history or a Chrome trace, which "
                  "`npumem viz FILE` shows), not a trace: capture one with `python3 -m "
                  "npumem.torch capture -o out.trace SCRIPT.py`"
                : ""));
    }
  }

  Trace finish() {
    trace_.lines = line_number_;
    return std::move(trace_);
  }

  [[noreturn]] void line_too_long(std::size_t line_number, std::size_t max_bytes) {
    line_number_ = line_number;
    fail("a line longer than " + std::to_string(max_bytes) +
         " bytes: not a trace (a binary file, or a stream without line breaks?)");
  }

 private:
  struct IdState {
    std::uint32_t slot = 0;
    std::uint64_t bytes = 0;
    bool live = false;
    std::size_t line = 0;          // of its allocation while live, of its free afterwards
    std::uint32_t pool = kNoPool;  // its pool's index in trace_.pools (kNoPool: default)
  };
  // What the parser knows of a pool, by its index in trace_.pools.
  struct PoolState {
    std::size_t live = 0;        // its allocations not freed yet
    std::size_t created_at = 0;  // the index of the `p` event that made it now
    bool made = false;           // a `p` line made it and no `r` line removed it since
  };

  [[noreturn]] void fail(const std::string& problem) const {
    throw ParseError(trace_.source, line_number_, problem);
  }

  void expect_arguments(const Fields& fields, std::size_t expected, const char* usage) const {
    const std::size_t given = fields.count - 1;
    if (given == expected) return;
    const std::string op(fields.items[0]);
    if (given < expected) {
      fail("'" + op + "' is missing fields: expected " + usage);
    }
    fail("'" + op + "' has extra fields after " + usage + ": " +
         quoted(fields.items[expected + 1]));
  }

  std::uint64_t parse_number(std::string_view text, const char* what) const {
    if (text.front() == '-') fail(std::string(what) + " must not be negative: " + quoted(text));
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error == std::errc::result_out_of_range) {
      fail(std::string(what) + " overflows 64 bits: " + quoted(text));
    }
    if (error != std::errc{} || end != text.data() + text.size()) {
      fail(std::string(what) + " is not a number: " + quoted(text));
    }
    return value;
  }

  void add_alloc(std::uint64_t id, std::uint64_t bytes) {
    auto [it, inserted] = ids_.try_emplace(id);
    IdState& state = it->second;
    if (!inserted && state.live) {
      fail("id " + std::to_string(id) + " is already live (allocated on line " +
           std::to_string(state.line) + ")");
    }
    if (bytes > std::numeric_limits<std::uint64_t>::max() - live_bytes_) {
      fail("live bytes overflow 64 bits at id " + std::to_string(id));
    }
    if (trace_.allocations == std::numeric_limits<std::uint32_t>::max()) {
      fail("too many allocations (the limit is 2^32 - 1)");
    }
    live_bytes_ += bytes;
    state = {static_cast<std::uint32_t>(trace_.allocations++), bytes, true, line_number_,
             current_pool_};
    if (current_pool_ != kNoPool) ++pools_[current_pool_].live;
    trace_.events.push_back({TraceOp::alloc, state.slot, bytes});
  }

  void add_free(std::uint64_t id) {
    const auto it = ids_.find(id);
    if (it == ids_.end()) fail("free of unknown id " + std::to_string(id));
    IdState& state = it->second;
    if (!state.live) {
      fail("id " + std::to_string(id) + " is already freed (on line " + std::to_string(state.line) +
           ")");
    }
    live_bytes_ -= state.bytes;
    if (state.pool != kNoPool) --pools_[state.pool].live;
    state.live = false;
    state.line = line_number_;
    ++trace_.frees;
    trace_.events.push_back({TraceOp::free, state.slot, state.bytes});
  }

  // Names go into tables and messages, which a control character (an escape sequence)
  // would break or take over; the allocator refuses such pool names too, but an error
  // naming the trace's pools came first and printed them as they were.
  std::string_view printable(std::string_view name, const char* what) const {
    const auto control = [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; };
    if (std::any_of(name.begin(), name.end(), control)) {
      fail(std::string(what) + " " + quoted(name) + " holds a control character");
    }
    return name;
  }

  // `quota`: 0 when the line gives none. One quota per making of a pool (an `r` line
  // ends one), however many lines name it; it goes in the event that makes the pool.
  void add_pool_switch(std::string_view name, std::uint64_t quota) {
    const std::uint32_t index = pool_index(name);
    PoolState& pool = pools_[index];
    if (!pool.made) pool = {pool.live, trace_.events.size(), true};
    trace_.events.push_back({TraceOp::pool, index, 0});
    current_pool_ = name == kDefaultPoolName ? kNoPool : index;
    if (quota == 0) return;
    if (name == kDefaultPoolName) {
      fail("the default pool takes no quota (static_size sizes its static arena)");
    }
    std::uint64_t& kept = trace_.events[pool.created_at].bytes;
    if (kept != 0 && kept != quota) {
      fail("pool " + quoted(name) + " has quota " + std::to_string(quota) + " here and " +
           std::to_string(kept) + " on line " +
           std::to_string(trace_.quota_lines.at(pool.created_at)) +
           " (an `r` line between them would make it anew)");
    }
    kept = quota;
    trace_.quota_lines.try_emplace(pool.created_at, line_number_);
  }

  // As remove_pool: refused where npumem refuses it (a capture, made on PyTorch's own
  // allocator, records what npumem would not have done).
  void add_pool_removal(std::string_view name) {
    if (name == kDefaultPoolName) fail("the default pool cannot be removed");
    const auto found = pool_indices_.find(std::string(name));
    if (found == pool_indices_.end() || !pools_[found->second].made) {
      fail("pool " + quoted(name) + " is removed, but no `p` line made it" +
           (found == pool_indices_.end() ? "" : " since it was last removed"));
    }
    PoolState& pool = pools_[found->second];
    if (pool.live != 0) {
      fail("pool " + quoted(name) + " is removed while " +
           (pool.live == 1 ? std::string("1 of its allocations is")
                           : std::to_string(pool.live) + " of its allocations are") +
           " live (npumem refuses that: free them first)");
    }
    pool.made = false;
    if (current_pool_ == found->second) current_pool_ = kNoPool;
    trace_.events.push_back({TraceOp::pool_removal, found->second, 0});
  }

  std::uint32_t pool_index(std::string_view name) {
    auto [it, inserted] = pool_indices_.try_emplace(
        std::string(name), static_cast<std::uint32_t>(trace_.pools.size()));
    if (inserted) {
      trace_.pools.emplace_back(name);
      pools_.emplace_back();
    }
    return it->second;
  }

  void add_tag(std::string_view text) {
    auto [it, inserted] =
        tag_indices_.try_emplace(std::string(text), static_cast<std::uint32_t>(trace_.tags.size()));
    if (inserted) trace_.tags.emplace_back(text);
    trace_.events.push_back({TraceOp::tag, it->second, 0});
  }

  static constexpr std::uint32_t kNoPool = ~std::uint32_t{0};  // the default pool
  Trace trace_;
  std::vector<PoolState> pools_;
  std::uint32_t current_pool_ = kNoPool;
  std::unordered_map<std::uint64_t, IdState> ids_;
  std::unordered_map<std::string, std::uint32_t> pool_indices_;
  std::unordered_map<std::string, std::uint32_t> tag_indices_;
  std::uint64_t live_bytes_ = 0;
  std::size_t line_number_ = 0;
};

// Splits text handed over in pieces into lines for the parser, keeping only the line
// not yet ended: a trace is read in bounded memory, and a "line" longer than any trace
// has (/dev/zero, a binary file without line breaks) is refused as it grows.
class LineFeeder {
 public:
  explicit LineFeeder(TraceParser& parser) : parser_(parser) {}

  void feed(std::string_view piece) {
    pending_.append(piece);
    consume(false);
  }
  void finish() { consume(true); }

 private:
  static constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

  void consume(bool at_end) {
    std::string_view text = pending_;
    // Editors on Windows may begin a UTF-8 file with a byte order mark.
    if (!started_) {
      if (text.size() < 3 && !at_end) return;
      if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3);
      started_ = true;
    }
    // Lines end with LF, CRLF or a lone CR (classic Mac text): a file of CR-ended lines
    // read as one line, refused for its "extra fields".
    while (!text.empty()) {
      const std::size_t end = text.find_first_of("\r\n");
      // A line not ended yet, or a CR whose LF may come with the next piece.
      if (!at_end && (end == std::string_view::npos || end + 1 == text.size())) break;
      const std::string_view line = text.substr(0, end);
      if (line.size() > kMaxLineBytes) parser_.line_too_long(line_number_ + 1, kMaxLineBytes);
      parser_.parse_line(line, ++line_number_);
      if (end == std::string_view::npos) {
        text = {};
        break;
      }
      text.remove_prefix(text.substr(end).starts_with("\r\n") ? end + 2 : end + 1);
    }
    if (text.size() > kMaxLineBytes) {
      parser_.line_too_long(line_number_ + 1, kMaxLineBytes);
    }
    pending_.erase(0, pending_.size() - text.size());
  }

  TraceParser& parser_;
  std::string pending_;
  std::size_t line_number_ = 0;
  bool started_ = false;
};

}  // namespace

Trace parse_trace(std::string_view text, std::string source) {
  TraceParser parser(std::move(source));
  LineFeeder lines(parser);
  lines.feed(text);
  lines.finish();
  return parser.finish();
}

Trace read_trace(const std::string& path) {
  TraceParser parser(path);
  LineFeeder lines(parser);
  read_input_chunks(path, "trace", [&](std::string_view piece) { lines.feed(piece); });
  lines.finish();
  Trace trace = parser.finish();
  // Every command reads traces to replay or plan their allocations: none is a mistake
  // (an empty capture, the wrong file), not a run that uses no memory.
  if (trace.allocations == 0) {
    throw ParseError(path, std::max<std::size_t>(trace.lines, 1),
                     "no allocations (no `a` line) to replay or plan");
  }
  return trace;
}

Trace pool_part(const Trace& trace, const std::string& pool) {
  Trace part;
  part.source = trace.source + " (pool " + pool + ")";
  part.tags = trace.tags;
  part.allocations = trace.allocations;
  std::vector<bool> in_pool(trace.allocations, false);  // by slot
  bool current = pool == kDefaultPoolName;
  for (const TraceEvent& event : trace.events) {
    switch (event.op) {
      case TraceOp::pool:
        current = trace.pools[event.index] == pool;
        break;
      case TraceOp::pool_removal:
        break;
      case TraceOp::alloc:
        in_pool[event.index] = current;
        if (current) part.events.push_back(event);
        break;
      case TraceOp::free:
        if (in_pool[event.index]) {
          part.events.push_back(event);
          ++part.frees;
        }
        break;
      case TraceOp::iteration:
        part.events.push_back(event);
        ++part.iterations;
        break;
      case TraceOp::tag:
      case TraceOp::stream:
        part.events.push_back(event);
        break;
    }
  }
  return part;
}

std::map<std::string, std::uint64_t> trace_quotas(const Trace& trace) {
  std::map<std::string, std::uint64_t> quotas;
  for (const TraceEvent& event : trace.events) {
    if (event.op == TraceOp::pool && event.bytes != 0) {
      quotas.try_emplace(trace.pools[event.index], event.bytes);
    }
  }
  return quotas;
}

bool allocates_in(const Trace& trace, const std::string& pool) {
  const Trace part = pool_part(trace, pool);
  return std::any_of(part.events.begin(), part.events.end(),
                     [](const TraceEvent& event) { return event.op == TraceOp::alloc; });
}

std::uint64_t peak_live_bytes(const Trace& trace, std::size_t memory_events) {
  std::uint64_t live = 0;
  std::uint64_t peak = 0;
  std::size_t seen = 0;
  for (const TraceEvent& event : trace.events) {
    if (event.op != TraceOp::alloc && event.op != TraceOp::free) continue;
    if (seen++ == memory_events) break;
    if (event.op == TraceOp::alloc) {
      live += event.bytes;
      if (live > peak) peak = live;
    } else if (event.op == TraceOp::free) {
      live -= event.bytes;
    }
  }
  return peak;
}

}  // namespace npumem::cli
