// Byte sizes as users write them ("16GiB", "512MiB", "4096") and as reports print them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace npumem {

inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = 1024 * KiB;
inline constexpr std::uint64_t GiB = 1024 * MiB;

// Parses "<number>[B|KiB|MiB|GiB|TiB|PiB]" (also K/M/G/T/P, KB/MB/GB/TB/PB as binary units).
// Throws ConfigError naming the text on anything else or on overflow.
std::uint64_t parse_size(std::string_view text);

// "1.50 GiB", "512 B": three significant digits, binary units.
std::string format_bytes(std::uint64_t bytes);

// "1,234,567": a count with its thousands marked.
std::string format_count(std::uint64_t count);
// "1 iteration", "2,000 iterations": the count and its noun, plural but for 1.
std::string format_count(std::uint64_t count, std::string_view noun);

// Parses a bandwidth in bytes per second: "<number>[unit][/s]", e.g. "1200GB/s", "1.2TB/s".
// Bandwidths are quoted in decimal units, so here K/KB, M/MB, G/GB, T/TB are powers of
// 1000; KiB, MiB, GiB, TiB stay powers of 1024. Throws ConfigError naming the text.
std::uint64_t parse_bandwidth(std::string_view text);

// "1.20 TB/s", "50.0 GB/s": three significant digits, decimal units.
std::string format_bandwidth(std::uint64_t bytes_per_s);

}  // namespace npumem
