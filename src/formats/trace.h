// Allocation traces: the text format of ../shared/traces (see docs/TRACE_FORMAT.md),
// parsed into a flat event list that the replay engine walks without lookups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace npumem::cli {

enum class TraceOp : std::uint8_t {
  alloc,         // `a <id> <bytes>`
  free,          // `f <id>`
  pool,          // `p <name> [<quota>]`: later allocations go to this pool
  pool_removal,  // `r <name>`: the pool is removed; a later `p <name>` makes it anew
  iteration,     // `i [<key>]`: an iteration boundary, with the caller's key of its shape
  tag,           // `t [<tag>]`: later allocations carry this memory tag (none: no tag)
  stream,        // `s <stream>`: later allocations are made on this stream
};

struct TraceEvent {
  TraceOp op = TraceOp::alloc;
  // alloc/free: the allocation's slot (0, 1, 2, ... in allocation order), so a free
  // finds its pointer by index; pool, pool_removal: the index into Trace::pools;
  // iteration: 1 when keyed, else 0; tag: the index into Trace::tags.
  std::uint32_t index = 0;
  // alloc/free: the allocation's requested bytes; stream: the stream; iteration: its
  // key; pool: the quota of the pool it makes (the first after the start or an `r`
  // line), 0 for none or a switch to a pool made before; otherwise 0.
  std::uint64_t bytes = 0;
};

struct Trace {
  std::string source;  // file name used in error messages and reports
  std::vector<TraceEvent> events;
  std::vector<std::string> pools;  // names referenced by `p`, in first-use order
  std::vector<std::string> tags;   // texts referenced by `t`, in first-use order
  // By the index of the `p` event that carries a pool's quota, the line that gave it:
  // where an error in the quota (one the device cannot honour) points.
  std::map<std::size_t, std::size_t> quota_lines;
  std::size_t allocations = 0;  // alloc events; also the number of slots
  std::size_t frees = 0;
  std::size_t iterations = 0;
  std::size_t lines = 0;  // read: where what the whole file lacks is reported

  // Allocation and free events: the figure a trace's "events" count means.
  std::size_t memory_events() const { return allocations + frees; }
};

// Parses trace text. Throws ParseError(source, line, problem) on an unknown op,
// missing or extra fields, a bad number, a duplicate live id, a free of an id that is
// not live, live bytes that overflow 64 bits, two quotas for one making of a pool, or
// the removal of a pool not made or holding live allocations.
Trace parse_trace(std::string_view text, std::string source);

// Reads and parses a trace file. Throws Error when the file cannot be read, ParseError
// (at its last line) when it holds no allocation.
Trace read_trace(const std::string& path);

// The pool of allocations made before any `p` line (and after `p default`).
inline constexpr const char* kDefaultPoolName = "default";

// One pool's part of a trace: the allocations made while `p <pool>` was in force and
// their frees (wherever they come), with the iteration and tag lines, and no `p`
// lines, so that it replays in the default pool of its own allocator. Slots keep
// their indices (`allocations` stays the whole trace's slot count).
Trace pool_part(const Trace& trace, const std::string& pool);
// Whether any allocation of `trace` is in `pool`.
bool allocates_in(const Trace& trace, const std::string& pool);
// By pool name, the quota the trace's `p` lines give it (its first making's; a pool
// made anew after an `r` line may have another); pools given none are left out.
std::map<std::string, std::uint64_t> trace_quotas(const Trace& trace);

// The peak of live requested bytes over the trace's first `memory_events` alloc and free
// events (by default all), computed from its events alone.
std::uint64_t peak_live_bytes(const Trace& trace,
                              std::size_t memory_events = static_cast<std::size_t>(-1));

}  // namespace npumem::cli
